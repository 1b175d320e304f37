//! What the host reports about what it keeps: its plugins, the owners of fixed tools, its
//! MCP servers. Named structs, so a new field is not a breaking change.

#[cfg(feature = "mcp")]
use crate::mcp::McpStatus;
use crate::policy::Grants;

#[cfg(feature = "mcp")]
use super::McpId;
use super::PluginId;

/// A plugin the host keeps (see [`crate::Host::plugins`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeptPlugin {
    /// The id the host gave it.
    pub id: PluginId,
    /// Its name.
    pub name: String,
    /// The scope it was loaded into; `None` = global.
    pub scope: Option<String>,
    /// What it was granted beyond its sandbox.
    pub grants: Grants,
    /// How long its load took (instantiation and `init`).
    pub load: crate::wasm::LoadTiming,
}

/// Who declared a fixed tool name (see [`crate::Host::tool_owners`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolOwner {
    /// The plugin's name.
    pub plugin: String,
    /// The layer it was loaded into (`global` or the scope key).
    pub layer: String,
}

/// An MCP server the host keeps, and where it stands (see [`crate::Host::mcp_status`]).
#[cfg(feature = "mcp")]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KeptMcp {
    /// The id the host gave it.
    pub id: McpId,
    /// Its connection and publication status.
    pub status: McpStatus,
}
