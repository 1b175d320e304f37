//! The protocol of `prompt-host serve`, as Rust types: every method's params
//! (`crate::params`) and result ([`results`], [`step_result`]), every notification
//! ([`notifications`]) and the JSON-RPC frame around them ([`envelope`]). The server reads
//! and writes these types; [`schema::document`] generates `protocol/prompt-host.schema.json`
//! from them, and CI checks that the file is fresh and that the clients' types agree with it.

pub mod envelope;
pub mod notifications;
pub mod results;
pub mod schema;
pub mod step_result;

/// Every method, as `describe` and a `method not found` error list them.
pub const METHODS: &[&str] = &[
    "describe",
    "bind_scope",
    "dispose_scope",
    "scopes",
    "load_plugin",
    "reload_plugin",
    "dispose_plugin",
    "plugins",
    "assemble",
    "render",
    "step",
    "retry",
    "append_assistant",
    "append_tool_result",
    "request",
    "compact",
    "close_session",
    "mcp_status",
    "mcp_skill",
    "subscribe",
    "$/cancelRequest",
];

/// The version of this protocol (docs/protocol.md).
pub const PROTOCOL_VERSION: &str = "1.1";
