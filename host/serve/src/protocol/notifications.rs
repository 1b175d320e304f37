//! The notifications the server sends once a client subscribed to them, and their params.

use schemars::JsonSchema;
use serde::Serialize;

use super::results::McpStatusView;
use prompt_host::mcp::InstructionsCut;
use prompt_host::wasm::PluginLog;

/// A notification as it is written: JSON-RPC 2.0 without an id.
#[derive(Serialize)]
pub struct NotificationLine<'a, P: Serialize> {
    /// Always `2.0`.
    pub jsonrpc: &'static str,
    /// The notification.
    pub method: &'a str,
    /// What it says.
    pub params: &'a P,
}

/// The params of `log`, `plugin/skipped` and `plugin/quarantined`: one line of a plugin.
#[derive(Serialize, JsonSchema)]
pub struct PluginLine<'a> {
    /// The plugin.
    pub plugin: &'a str,
    /// The scope it was loaded into; null = global.
    pub scope: Option<&'a str>,
    /// `stdout`, `stderr`, a log level, `skipped` or `quarantined`.
    pub stream: &'a str,
    /// The line.
    pub message: &'a str,
}

impl<'a> PluginLine<'a> {
    /// The params of `line`.
    pub fn of(line: &'a PluginLog) -> Self {
        Self {
            plugin: &line.plugin,
            scope: line.scope.as_deref(),
            stream: line.stream,
            message: &line.message,
        }
    }
}

/// The params of `registry/changed`: nothing (ask `plugins` or `assemble` for what changed).
#[derive(Serialize, JsonSchema)]
pub struct RegistryChanged {}

/// Every notification, with the type of its params.
pub(crate) fn each(
    generator: &mut schemars::SchemaGenerator,
) -> Vec<(&'static str, schemars::Schema)> {
    let line = generator.subschema_for::<PluginLine<'static>>();
    vec![
        ("log", line.clone()),
        ("plugin/skipped", line.clone()),
        ("plugin/quarantined", line),
        (
            "registry/changed",
            generator.subschema_for::<RegistryChanged>(),
        ),
        (
            "mcp/status",
            generator.subschema_for::<McpStatusView<'static>>(),
        ),
        (
            "mcp/instructions_cut",
            generator.subschema_for::<InstructionsCut>(),
        ),
    ]
}

/// The names of the notifications, as `describe` lists them.
pub const NOTIFICATIONS: &[&str] = &[
    "log",
    "plugin/skipped",
    "plugin/quarantined",
    "registry/changed",
    "mcp/status",
    "mcp/instructions_cut",
];
