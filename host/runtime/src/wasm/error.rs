//! Errors of the Wasm runtime: loading, validating, instantiating and initialising plugins.
//! Each variant carries enough context (plugin, path, scope, export) to be shown alone.

use std::path::PathBuf;

use thiserror::Error;

use super::ident::scope_label;

/// A failure to load, check or initialise a Wasm plugin. Each message is whole: a cause is
/// part of it, not also returned as the error's source.
///
/// Exhaustive on purpose, like [`crate::HostError`]: `serve` names each variant's fields.
#[derive(Debug, Error)]
pub enum WasmError {
    /// The plugin file could not be read: missing, not a regular file (a FIFO, a device, a
    /// directory), or larger than `max_wasm_bytes`. The message names the file and why.
    #[error("plugin \"{plugin}\": {error}")]
    Read {
        /// Plugin name.
        plugin: String,
        /// Why.
        error: crate::fsutil::ReadError,
    },
    /// The bytes are not a WebAssembly component (empty, another format, or a core module).
    #[error("plugin \"{plugin}\": not a WebAssembly component: {reason}")]
    NotAComponent {
        /// Plugin name.
        plugin: String,
        /// What was found instead.
        reason: String,
    },
    /// The component is truncated or malformed.
    #[error("plugin \"{plugin}\": invalid component: {reason}")]
    Invalid {
        /// Plugin name.
        plugin: String,
        /// The validator's message.
        reason: String,
    },
    /// The component targets `prompt-host:plugin` at another version.
    #[error("plugin \"{plugin}\": built against WIT {found}, this host implements prompt-host:plugin@0.1.0, @0.2.0 and @0.3.0")]
    WitVersion {
        /// Plugin name.
        plugin: String,
        /// The interface name with the version the component uses.
        found: String,
    },
    /// The component does not implement the `plugin` or `instruction-provider` world.
    #[error("plugin \"{plugin}\": does not implement world `plugin` or `instruction-provider` of prompt-host:plugin@0.1.0, @0.2.0 or @0.3.0: {reason}")]
    WrongWorld {
        /// Plugin name.
        plugin: String,
        /// What is missing or extra.
        reason: String,
    },
    /// An `sha256` pin does not match the file.
    #[error("plugin \"{plugin}\": sha256 mismatch: expected {expected}, file has {actual}")]
    PinMismatch {
        /// Plugin name.
        plugin: String,
        /// The configured pin.
        expected: String,
        /// The file's digest.
        actual: String,
    },
    /// Compiling, instantiating or another engine operation failed.
    #[error("plugin \"{plugin}\"{}: {message}", scope_suffix(scope.as_deref()))]
    Engine {
        /// Plugin name.
        plugin: String,
        /// The scope the instance was for, if any.
        scope: Option<String>,
        /// The engine's message.
        message: String,
    },
    /// A directory granted to the plugin could not be opened when it was loaded.
    #[error("plugin \"{plugin}\" ({}): {message}", scope_label(scope.as_deref()))]
    Grant {
        /// Plugin name.
        plugin: String,
        /// The scope, if any.
        scope: Option<String>,
        /// Which directory, and why.
        message: String,
    },
    /// A call into the plugin (`init`, `publish`) failed: trap, deadline, limit or `err`.
    #[error("plugin \"{plugin}\" export \"{export}\" ({}): {message}", scope_label(scope.as_deref()))]
    Call {
        /// Plugin name.
        plugin: String,
        /// The export called.
        export: String,
        /// The scope, if any.
        scope: Option<String>,
        /// What kind of failure it was.
        kind: crate::prompt::ProviderErrorKind,
        /// What happened.
        message: String,
    },
    /// A declaration the plugin made was refused when committed (a reload's, or a published
    /// generation's).
    #[error("plugin \"{plugin}\" ({}): {error}", scope_label(scope.as_deref()))]
    Register {
        /// Plugin name.
        plugin: String,
        /// The scope, if any.
        scope: Option<String>,
        /// What the registry refused.
        error: crate::prompt::RegisterError,
    },
    /// The plugin does not export what the operation needs (e.g. `publish`).
    #[error("plugin \"{plugin}\": {message}")]
    Unsupported {
        /// Plugin name.
        plugin: String,
        /// What is missing.
        message: String,
    },
    /// The Wasm runtime itself could not be built (the engine, the linker, the ticker).
    #[error("cannot build the Wasm runtime: {message}")]
    Runtime {
        /// What failed.
        message: String,
    },
    /// The compiled-code cache directory could not be used.
    #[error("compiled-code cache {}: {message}", path.display())]
    Cache {
        /// The cache directory or file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

impl WasmError {
    /// The error of building the runtime.
    pub(crate) fn runtime(e: impl std::fmt::Display) -> Self {
        Self::Runtime {
            message: e.to_string(),
        }
    }
}

fn scope_suffix(scope: Option<&str>) -> String {
    match scope {
        Some(s) => format!(" (scope {s})"),
        None => String::new(),
    }
}
