//! Who a plugin instance is, for every message and log line about it, and where its output
//! goes besides the `log` crate.

use std::sync::Arc;

/// Who a store belongs to.
#[derive(Debug, Clone)]
pub(crate) struct Ident {
    /// Plugin name (the fiber owner).
    pub(crate) plugin: Arc<str>,
    /// Scope key, `None` = global.
    pub(crate) scope: Option<Arc<str>>,
}

impl Ident {
    /// A plugin `plugin` in `scope`.
    pub(crate) fn new(plugin: &str, scope: Option<&str>) -> Self {
        Self {
            plugin: plugin.into(),
            scope: scope.map(Into::into),
        }
    }

    /// `scope agent:1` or `global`.
    pub(crate) fn scope_label(&self) -> String {
        scope_label(self.scope.as_deref())
    }
}

pub use crate::prompt::scope_label;

/// Where a plugin's output goes besides the `log` crate: its `log` calls and its
/// stdout/stderr lines (within the per-instance byte cap).
pub type LogSink = Arc<dyn Fn(&PluginLog) + Send + Sync>;

/// One line of plugin output.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PluginLog {
    /// The plugin name.
    pub plugin: String,
    /// Its scope, `None` = global.
    pub scope: Option<String>,
    /// `trace`…`error` for `log` calls, `stdout`/`stderr` for captured output, and the
    /// host's own notices about the plugin: `skipped` (a failure left its entries out of an
    /// assembly, or a load failure left it out of a deployment, under `on_error = "skip"`),
    /// `quarantined` and `dropped` (output over its cap). Those notices are whole sentences
    /// naming plugin and scope.
    pub stream: &'static str,
    /// The line, with control and bidi characters escaped (`\n`, `\u{1b}`, …).
    pub message: String,
}

impl PluginLog {
    /// A line of `stream` from the plugin `ident`.
    pub(crate) fn new(ident: &Ident, stream: &'static str, message: String) -> Self {
        Self {
            plugin: ident.plugin.to_string(),
            scope: ident.scope.as_deref().map(str::to_string),
            stream,
            message,
        }
    }
}

/// Tell the operator about a plugin — skipped, quarantined, output dropped, left out at
/// start-up: the `log` crate at warn, and `sink` as a line of `stream`. `message` is a whole
/// sentence naming the plugin and its scope.
pub(crate) fn announce(sink: Option<&LogSink>, ident: &Ident, stream: &'static str, message: &str) {
    log::warn!(target: "prompt_host::plugin", "{message}");
    if let Some(sink) = sink {
        sink(&PluginLog::new(ident, stream, message.to_string()));
    }
}
