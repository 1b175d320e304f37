//! The core's error enums. Each `Display` is a fixed, exact text, so callers and conformance
//! tests can compare messages byte for byte. Provider failures and invariant violations add
//! who failed (plugin, scope) around that text; the bare text stays reachable through the
//! fields and `AssembleError::spec_text`.

use std::fmt;

use thiserror::Error;

use super::error::ProviderError;

/// Which kind of entry an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A prompt section.
    Section,
    /// A runtime context.
    Context,
    /// A variable provider.
    Variable,
    /// A tool provider.
    ToolProvider,
    /// A waterfall listener.
    Listener,
    /// A runtime-context suppressor.
    Suppressor,
}

impl EntryKind {
    /// The word used in messages: `section`, `context`, `variable`, `tool provider`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Section => "section",
            Self::Context => "context",
            Self::Variable => "variable",
            Self::ToolProvider => "tool provider",
            Self::Listener => "listener",
            Self::Suppressor => "suppressor",
        }
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Registration errors. Nothing is registered and no observer is notified.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// A section or context order is NaN or infinite.
    #[error("prompt {kind} \"{name}\" order must be a finite number")]
    NonFiniteOrder {
        /// `Section` or `Context`.
        kind: EntryKind,
        /// The entry name.
        name: String,
    },
    /// The name is already taken in the layer the registration goes to.
    #[error("{}", duplicate_text(*kind, name, *scoped))]
    Duplicate {
        /// `Section`, `Context` or `Variable`.
        kind: EntryKind,
        /// The entry name.
        name: String,
        /// Whether the layer is a scoped one (the wording differs).
        scoped: bool,
    },
    /// A variable name that fails `^[a-z][a-z0-9_]*$`.
    #[error("invalid prompt variable name \"{0}\" (must match /^[a-z][a-z0-9_]*$/)")]
    InvalidVariableName(String),
}

fn duplicate_text(kind: EntryKind, name: &str, scoped: bool) -> String {
    if scoped {
        format!("prompt {kind} \"{name}\" is already registered in this scope")
    } else {
        // Variables talk about a "value", sections and contexts about an "override".
        let what = if kind == EntryKind::Variable {
            "value"
        } else {
            "override"
        };
        format!(
            "prompt {kind} \"{name}\" is already registered (for a per-agent {what}, register it in that agent's scope instead)"
        )
    }
}

/// Load-time configuration errors.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// An entry (the rest marker included) appears twice in `tool_order`.
    #[error("toolOrder lists \"{0}\" more than once")]
    DuplicateToolOrderEntry(String),
    /// `tool_order` has no `<unlisted-tools>` entry.
    #[error(
        "toolOrder must contain the \"<unlisted-tools>\" rest entry (where unlisted tools are inserted)"
    )]
    MissingRestEntry,
}

/// Scope binding errors. Every text starts with `scope:`.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScopeError {
    /// `key` already has a parent.
    #[error("scope: scope key is already bound to a parent; re-linking requires the binding returned by the original bind")]
    AlreadyBound {
        /// The key being bound.
        key: String,
        /// The parent it already has.
        existing: String,
    },
    /// The link would close a cycle (a self-parent included).
    #[error("scope: scope parent link would form a cycle")]
    Cycle {
        /// The key being bound.
        key: String,
        /// The requested parent.
        parent: String,
    },
}

/// Assembly-time errors, in the order they are checked.
#[derive(Debug, Clone, Error, PartialEq)]
#[non_exhaustive]
pub enum AssembleError {
    /// More than one effective complete section; names in sorted section order.
    #[error("multiple complete prompt sections are active: {}", json_quoted(names))]
    MultipleComplete {
        /// The complete sections' names, in sorted section order.
        names: Vec<String>,
    },
    /// A tool provider returned a schema named `<unlisted-tools>`.
    #[error("tool provider returned reserved tool name \"<unlisted-tools>\" (reserved for toolOrder's rest entry)")]
    ReservedToolName {
        /// The plugin whose provider returned it.
        plugin: String,
    },
    /// `tool_order` names tools outside every provider's known names.
    #[error("{}", unknown_tools_text(unknown, known))]
    UnknownToolOrder {
        /// The unknown names, in `tool_order` order.
        unknown: Vec<String>,
        /// Every known name, sorted by UTF-16 code units.
        known: Vec<String>,
    },
    /// A provider or listener failed: the provider's own message, with the entry, its plugin
    /// and its scope named before it.
    #[error("{}", provider_text(*kind, name.as_deref(), plugin, scope, error))]
    Provider {
        /// What failed.
        kind: EntryKind,
        /// The entry name, when the entry has one.
        name: Option<String>,
        /// The owning fiber's owner (plugin name).
        plugin: String,
        /// The scope the entry was registered in, or `global`.
        scope: String,
        /// The provider's own error.
        error: ProviderError,
    },
    /// An assembled result broke an assembly invariant (an empty section, context or tool
    /// name, a duplicated section, context or variable name, an invalid variable name);
    /// checked on every assembly, because listeners are untrusted.
    #[error("{} ({} plugin \"{plugin}\")", text, if *after_listener { "after listener of" } else { "registered by" })]
    Invariant {
        /// The invariant's exact text, e.g. `assembled variable name "x" is duplicated`.
        text: String,
        /// The plugin whose listener produced it, or whose registration did.
        plugin: String,
        /// True when a listener's result broke it; false when the registered entries did.
        after_listener: bool,
    },
    /// The caller cancelled the assembly (its signal, or a dropped future), or the task was
    /// cancelled before it finished (runtime shutdown).
    #[error("cancelled: {0}")]
    Cancelled(String),
}

impl AssembleError {
    /// The bare text, without who failed: the invariant text, the provider's own message,
    /// or the Display.
    pub fn spec_text(&self) -> String {
        match self {
            Self::Invariant { text, .. } => text.clone(),
            Self::Provider { error, .. } => error.message.clone(),
            other => other.to_string(),
        }
    }

    /// The plugin the error is attributed to, if any.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            Self::ReservedToolName { plugin }
            | Self::Provider { plugin, .. }
            | Self::Invariant { plugin, .. } => Some(plugin),
            _ => None,
        }
    }
}

fn json_quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| serde_json::Value::String(n.clone()).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// As in the TypeScript DeepSeek Harness, the unknown names are quoted plainly (`"q"g"`, not
/// JSON), and the text says `(none)` when the joined known list is empty — which a single
/// empty known name also gives.
fn unknown_tools_text(unknown: &[String], known: &[String]) -> String {
    let known = match known.join(", ") {
        joined if joined.is_empty() => "(none)".to_string(),
        joined => joined,
    };
    let noun = if unknown.len() == 1 { "tool" } else { "tools" };
    let unknown: Vec<String> = unknown.iter().map(|n| format!("\"{n}\"")).collect();
    format!(
        "toolOrder lists unregistered {noun} {}; known tools: {known}",
        unknown.join(", ")
    )
}

fn provider_text(
    kind: EntryKind,
    name: Option<&str>,
    plugin: &str,
    scope: &str,
    error: &ProviderError,
) -> String {
    match name {
        Some(name) => format!(
            "{kind} \"{name}\" (plugin \"{plugin}\", scope \"{scope}\") failed: {}",
            error.message
        ),
        None => format!(
            "{kind} (plugin \"{plugin}\", scope \"{scope}\") failed: {}",
            error.message
        ),
    }
}
