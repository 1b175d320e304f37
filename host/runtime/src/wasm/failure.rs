//! A failed call into a plugin, classified: what the rest of the runtime reports, whatever
//! the contract version.

use super::ident::Ident;
use crate::prompt::{ProviderError, ProviderErrorKind};

/// A failed call, classified.
#[derive(Debug, Clone)]
pub(crate) struct CallFailure {
    pub(crate) kind: ProviderErrorKind,
    pub(crate) message: String,
}

impl CallFailure {
    /// A failure of `kind`.
    pub(crate) fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// Whether the instance must not be entered again (anything but an `err` result).
    pub(crate) fn poisons(&self) -> bool {
        !matches!(
            self.kind,
            ProviderErrorKind::InvalidInput | ProviderErrorKind::Failed
        )
    }

    /// As a provider error whose message names plugin, export and scope.
    pub(crate) fn provider_error(&self, ident: &Ident, export: &'static str) -> ProviderError {
        ProviderError::new(
            self.kind.clone(),
            format!(
                "plugin \"{}\" export \"{export}\" ({}): {}",
                ident.plugin,
                ident.scope_label(),
                self.message
            ),
        )
        .with_export(export)
    }
}
