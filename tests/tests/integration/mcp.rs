//! MCP servers: the client against real servers (stdio and Streamable HTTP), host.toml's
//! `[[mcp]]`, instructions in the prompt, budgets in tokens, servers while the host starts, and
//! skills.

pub(crate) mod budget;
pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod prompt;
pub(crate) mod remote;
pub(crate) mod skills;
pub(crate) mod start;
