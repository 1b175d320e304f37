//! MCP servers feeding instruction-provider plugins: the connections are the
//! `prompt-host-mcp` crate (re-exported here); the bridge that hands each generation to a
//! sandboxed plugin's `publish` is the library's, since it calls into Wasm.
//!
//! An [`McpBridge`] joins a connection to a sandboxed instruction-provider plugin: each
//! generation is handed to the plugin's `publish`, which decides what reaches the prompt
//! (`mcp:<server>:instructions` at order 190 and `mcp__<server>__<tool>` tools with the
//! default `mcp-instructions` plugin). [`crate::Host::connect_mcp`] keeps bridges inside the
//! host; [`McpStatus`] reports on them.

mod bridge;
mod publish;

pub use bridge::McpBridge;
pub use prompt_host_mcp::*;
pub use publish::server_instructions;
