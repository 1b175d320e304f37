//! The assembly: sections, contexts, tools and variables for one step, before rendering.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A resolved section or context: its name and its (not yet interpolated) text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamedText {
    /// The section or context name.
    pub name: String,
    /// The resolved text; `{{variable}}` references are resolved only at render time.
    pub text: String,
}

impl NamedText {
    /// Convenience constructor.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
        }
    }
}

/// One tool schema as the model sees it. Only these three fields survive assembly: extra
/// fields a provider returns are dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolSchema {
    /// The tool name the model calls.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// A JSON Schema object describing the arguments. Shared, because every step hands the
    /// same schemas on: cloning a tool must not copy its parameter tree (a few KB each, tens
    /// of tools per step). Edit one with `Arc::make_mut`, which copies only that tree.
    pub parameters: Arc<serde_json::Value>,
}

impl ToolSchema {
    /// Convenience constructor.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: Arc::new(parameters),
        }
    }
}

/// The result of `assemble`. `variables` keeps first-insertion order: global
/// names first, then scoped names; `None` means "registered, no value for this assembly".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Assembly {
    /// Sections in render order.
    pub sections: Vec<NamedText>,
    /// Runtime contexts in render order (empty under suppression).
    pub contexts: Vec<NamedText>,
    /// Tools in canonical order.
    pub tools: Vec<ToolSchema>,
    /// Every visible variable, in first-insertion order.
    pub variables: Vec<(String, Option<String>)>,
}

impl Assembly {
    /// The value of variable `name`: `None` when not registered, `Some(None)` when registered
    /// without a value.
    pub fn variable(&self, name: &str) -> Option<Option<&str>> {
        self.variables
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_deref())
    }

    /// Set (or add at the end) variable `name`.
    pub fn set_variable(&mut self, name: &str, value: Option<String>) {
        match self.variables.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => self.variables.push((name.to_string(), value)),
        }
    }

    /// The assembly of a [`Assembly::to_json`] value (`variables` an object of strings or
    /// `null`); `None` when it does not have that shape.
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        let list = |key: &str| value.get(key).cloned().unwrap_or(serde_json::json!([]));
        let variables = match value.get("variables") {
            None => Vec::new(),
            Some(serde_json::Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => Some((k.clone(), Some(s.clone()))),
                    serde_json::Value::Null => Some((k.clone(), None)),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        Some(Self {
            sections: serde_json::from_value(list("sections")).ok()?,
            contexts: serde_json::from_value(list("contexts")).ok()?,
            tools: serde_json::from_value(list("tools")).ok()?,
            variables,
        })
    }

    /// The stable JSON shape of the command line:
    /// `{"sections":[{"name","text"}],"contexts":[…],"tools":[…],"variables":{"k":"v"|null}}`.
    pub fn to_json(&self) -> serde_json::Value {
        let variables: serde_json::Map<String, serde_json::Value> = self
            .variables
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.clone()
                        .map(serde_json::Value::String)
                        .unwrap_or(serde_json::Value::Null),
                )
            })
            .collect();
        serde_json::json!({
            "sections": self.sections,
            "contexts": self.contexts,
            "tools": self.tools,
            "variables": variables,
        })
    }
}

/// The outcome of rendering one assembly.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The assembly that was rendered.
    pub assembly: Assembly,
    /// The system prompt text.
    pub prompt: String,
    /// The non-empty rendered runtime contexts.
    pub context_sections: Vec<NamedText>,
    /// The runtime-context snapshot text (`""` when none applies).
    pub context: String,
}
