//! Constructors and conversions for the errors a plugin returns to the host.

use crate::{PluginError, RegistryError};

impl PluginError {
    /// The plugin refused its input (bad config, unknown name): the caller should fix it.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        PluginError::InvalidInput(message.into())
    }

    /// The plugin ran and could not produce a result.
    pub fn failed(message: impl Into<String>) -> Self {
        PluginError::Failed(message.into())
    }

    /// The message, without the variant, e.g. for logging.
    pub fn message(&self) -> &str {
        match self {
            PluginError::InvalidInput(m) | PluginError::Failed(m) => m,
        }
    }

    /// The error the default trait methods return for an export the plugin never asked for:
    /// the host only calls dynamic callbacks for entries declared dynamic, so reaching one
    /// means the declaration and the implementation disagree.
    /// The host called a callback this plugin did not implement: it declared `name` dynamic
    /// but left `method` at its default.
    pub(crate) fn not_dynamic(kind: &str, name: &str) -> Self {
        let method = match kind {
            "section" => "section_text",
            "context" => "context_text",
            "variable" => "variable",
            "tool provider" => "tools",
            _ => "on_assemble",
        };
        PluginError::InvalidInput(format!(
            "this plugin declared {kind} \"{name}\" dynamic but does not implement \
             `Plugin::{method}` (or it declared it by mistake: declare a fixed one instead)"
        ))
    }
}

impl RegistryError {
    /// The host's full message, without the variant. Tests assert on this exact text.
    pub fn message(&self) -> &str {
        match self {
            RegistryError::Duplicate(m) | RegistryError::Invalid(m) | RegistryError::Closed(m) => m,
        }
    }
}

/// Lets `init` use `?` on declarations. A duplicate or invalid declaration is the plugin's
/// input (usually its config) being wrong, so it becomes `invalid-input`; a closed registry
/// means the plugin declared at the wrong time, which is a failure. The host's message is kept
/// verbatim so the operator sees exactly what the host refused.
impl From<RegistryError> for PluginError {
    fn from(error: RegistryError) -> Self {
        match error {
            RegistryError::Duplicate(m) | RegistryError::Invalid(m) => PluginError::InvalidInput(m),
            RegistryError::Closed(m) => PluginError::Failed(m),
        }
    }
}
