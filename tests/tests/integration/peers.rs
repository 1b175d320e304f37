//! Hostile network peers other than registries: MCP servers and their token endpoints, and an
//! OTLP collector.

pub(crate) mod hostile_collector;
pub(crate) mod hostile_mcp;
pub(crate) mod hostile_skills;
pub(crate) mod hostile_text;
pub(crate) mod hostile_tokens;
pub(crate) mod plugin_egress;
pub(crate) mod plugin_egress_entry_points;
