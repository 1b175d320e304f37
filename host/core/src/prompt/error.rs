//! Errors a provider or listener reports back to the core.

use thiserror::Error;

/// What kind of failure a provider had. Mirrors the WIT `plugin-error` variant so the host
/// can tell "bad input" from "failed", plus the sandbox's own failure classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderErrorKind {
    /// The provider refused its input (config, context, arguments).
    InvalidInput,
    /// The provider ran and failed.
    Failed,
    /// The plugin trapped (panic, unreachable, stack overflow, out-of-bounds…).
    Trap,
    /// The call ran past its deadline.
    Timeout,
    /// The plugin hit a resource limit (memory, table, fuel, returned bytes).
    Limit,
    /// The plugin is quarantined or its instance is gone.
    Unavailable,
    /// The caller cancelled the assembly (its signal) while the provider ran.
    Cancelled,
    /// The provider failed (or is quarantined) under a failure policy that drops its entry
    /// (`on_error = "skip"`): the assembly goes on as if the entry were not registered.
    Skipped,
}

/// A provider or listener failure, with who failed where. The core adds the entry kind,
/// entry name and scope when it turns this into an assembly error.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[error("{message}")]
pub struct ProviderError {
    /// Failure class.
    pub kind: ProviderErrorKind,
    /// Human-readable description (for Wasm: includes plugin and export).
    pub message: String,
    /// The plugin export that failed, when the provider is a plugin call.
    pub export: Option<&'static str>,
}

impl ProviderError {
    /// A `Failed` error with a message.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            kind: ProviderErrorKind::Failed,
            message: message.into(),
            export: None,
        }
    }

    /// The same error, naming the plugin export that failed.
    pub fn with_export(mut self, export: &'static str) -> Self {
        self.export = Some(export);
        self
    }

    /// Whether the entry is to be left out of this assembly instead of failing it.
    pub fn is_skip(&self) -> bool {
        self.kind == ProviderErrorKind::Skipped
    }

    /// An error of the given kind.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            export: None,
        }
    }
}
