//! The Wasm runtime: sandboxed components implement the core's provider traits.
//!
//! - [`WasmRuntime`]: one engine + linker per host, compiled code cached by sha256 (memory
//!   and disk), the epoch ticker behind call deadlines.
//! - [`LoadedPlugin`]: one plugin instance loaded into a scope; owns the fiber with
//!   everything it declared.
//! - [`WasmRuntime::check`]: validate a component and report what it declares.
//!
//! Fixed texts, tool sets and variable values are stored as host data at `init`; only
//! dynamic entries call into Wasm, each call under a wall-clock deadline, memory/table
//! limits, an output-byte budget and optional fuel.

mod answers;
mod assembly_host;
pub mod bindings;
mod cache;
mod call;
mod check;
mod clock;
mod contract;
mod convert;
mod error;
mod files;
mod grants;
mod instance;
mod limits;
mod plugin;
mod providers;
mod random;
mod registry_host;
mod runtime;
mod state;
pub(crate) mod untrusted;
mod validate;

pub use bindings::instruction_provider::exports::prompt_host::plugin::instructions::{
    McpServer, McpTool,
};
pub use cache::default_cache_dir;
pub use call::Export;
pub use check::PluginReport;
pub use error::{scope_label, WasmError};
pub use grants::{DirGrant, Grants};
pub use limits::{Limits, OnError, PluginOptions};
pub use plugin::{LoadedPlugin, PluginHealth};
pub use registry_host::Declaration;
pub use runtime::{
    CacheStats, LogSink, PluginCode, PluginLog, PluginSpec, Pooling, RuntimeConfig, WasmRuntime,
    WitVersion, World, DEFAULT_MAX_WASM_BYTES,
};
pub use state::HostState;

/// What the `assembly` resource handle designates in the store's table. The assembly itself
/// lives in the store data for the duration of one `on-assemble` call; the handle only
/// proves the guest was given it.
pub struct AssemblyHandle {
    _private: (),
}

impl AssemblyHandle {
    pub(crate) fn new() -> Self {
        Self { _private: () }
    }
}
