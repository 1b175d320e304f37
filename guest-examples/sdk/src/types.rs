//! Conveniences on the generated record types, so plugins build and read them in one line.

use crate::{AssembleContext, NamedText, ToolSchema, ToolSet};

impl AssembleContext {
    /// The value of the caller fact `key` (e.g. `cwd`, `model`), if the caller passed it.
    /// The first occurrence wins, matching how the host hands facts to variables.
    pub fn fact(&self, key: &str) -> Option<&str> {
        self.facts
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The nearest scope key, or `None` for an unscoped (global) assembly.
    pub fn nearest_scope(&self) -> Option<&str> {
        self.scope_chain.first().map(String::as_str)
    }
}

impl NamedText {
    /// A section or context with `name` and `text`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        NamedText {
            name: name.into(),
            text: text.into(),
        }
    }
}

impl ToolSchema {
    /// A tool whose parameters are given as JSON. The host wants JSON text of an object;
    /// taking a `serde_json::Value` keeps plugins from hand-writing escaped JSON strings.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: &serde_json::Value,
    ) -> Self {
        ToolSchema {
            name: name.into(),
            description: description.into(),
            parameters: parameters.to_string(),
        }
    }
}

impl ToolSet {
    /// A tool set whose known names are just the names of `schemas` (no restriction).
    pub fn new(schemas: Vec<ToolSchema>) -> Self {
        ToolSet {
            schemas,
            known_names: None,
        }
    }

    /// The same set, with the names that exist before restriction, so the operator's
    /// `tool_order` may name a tool this assembly hides.
    pub fn with_known_names(mut self, known: Vec<String>) -> Self {
        self.known_names = Some(known);
        self
    }
}

/// Shorthand for [`ToolSchema::new`]: `tool("bash", "Run a command", &json!({...}))`.
pub fn tool(
    name: impl Into<String>,
    description: impl Into<String>,
    parameters: &serde_json::Value,
) -> ToolSchema {
    ToolSchema::new(name, description, parameters)
}
