//! Conversions between the WIT records and the core's types. Tool parameters cross the
//! boundary as JSON text and must parse to a JSON object.

use std::sync::Arc;

use super::contract::wit::types as wit;
use crate::prompt::{AssembleContext, NamedText, ToolSchema, ToolSet};

/// The core context as the WIT record.
pub(crate) fn context(ctx: &AssembleContext) -> wit::AssembleContext {
    wit::AssembleContext {
        scope_chain: ctx.scope_chain.iter().map(|s| s.to_string()).collect(),
        facts: ctx.facts.clone(),
    }
}

/// A WIT named text as the core's.
pub(crate) fn named_text(t: wit::NamedText) -> NamedText {
    NamedText {
        name: t.name,
        text: t.text,
    }
}

/// A core named text as the WIT record.
pub(crate) fn wit_named_text(t: &NamedText) -> wit::NamedText {
    wit::NamedText {
        name: t.name.clone(),
        text: t.text.clone(),
    }
}

/// Parse a tool's parameters: JSON text of an object.
pub(crate) fn parameters(tool: &str, text: &str) -> Result<serde_json::Value, String> {
    use crate::session::{too_deep, MAX_TOOL_PARAMETERS_DEPTH};
    match serde_json::from_str::<serde_json::Value>(text) {
        // Deeper parameters could not be written to a session log and read back.
        Ok(v @ serde_json::Value::Object(_)) => match too_deep(&v, MAX_TOOL_PARAMETERS_DEPTH) {
            None => Ok(v),
            Some(at) => Err(format!(
                "tool \"{tool}\": parameters nest more than {MAX_TOOL_PARAMETERS_DEPTH} levels deep (at {at}), deeper than a session log can hold"
            )),
        },
        Ok(_) => Err(format!("tool \"{tool}\": parameters must be a JSON object")),
        Err(e) => Err(format!(
            "tool \"{tool}\": parameters are not valid JSON: {e}"
        )),
    }
}

/// A WIT tool schema as the core's.
pub(crate) fn tool_schema(t: wit::ToolSchema) -> Result<ToolSchema, String> {
    super::names::declared_name("tool", &t.name)?;
    let parameters = parameters(&t.name, &t.parameters)?;
    Ok(ToolSchema {
        name: t.name,
        description: t.description,
        parameters: parameters.into(),
    })
}

/// The parameters a dynamic tool provider returned last time, as text and parsed, by
/// position. A provider usually returns the same schemas every step; comparing the text
/// costs a `memcmp`, parsing it again costs a full JSON parse per tool per step.
#[derive(Default)]
pub(crate) struct ParsedParameters {
    last: Vec<(String, Arc<serde_json::Value>)>,
}

impl ParsedParameters {
    /// A WIT tool set as the core's, reusing last call's parsed parameters where the text at
    /// the same position is byte-identical. On error the cache is left as it was.
    pub(crate) fn tool_set(&mut self, set: wit::ToolSet) -> Result<ToolSet, String> {
        let mut schemas = Vec::with_capacity(set.schemas.len());
        let mut seen = Vec::with_capacity(set.schemas.len());
        for (i, t) in set.schemas.into_iter().enumerate() {
            super::names::declared_name("tool", &t.name)?;
            let parsed = match self.last.get(i) {
                Some((text, value)) if *text == t.parameters => Arc::clone(value),
                _ => Arc::new(parameters(&t.name, &t.parameters)?),
            };
            seen.push((t.parameters, Arc::clone(&parsed)));
            schemas.push(ToolSchema {
                name: t.name,
                description: t.description,
                parameters: parsed,
            });
        }
        self.last = seen;
        Ok(ToolSet {
            schemas,
            known_names: set.known_names,
        })
    }
}

/// A core tool schema as the WIT record.
pub(crate) fn wit_tool_schema(t: &ToolSchema) -> wit::ToolSchema {
    wit::ToolSchema {
        name: t.name.clone(),
        description: t.description.clone(),
        parameters: t.parameters.to_string(),
    }
}

/// A WIT tool set as the core's.
pub(crate) fn tool_set(set: wit::ToolSet) -> Result<ToolSet, String> {
    // One conversion path: a cache with nothing in it parses every tool.
    ParsedParameters::default().tool_set(set)
}

/// The bytes a tool set carries (names, descriptions, parameters, known names).
pub(crate) fn tool_set_bytes(set: &wit::ToolSet) -> usize {
    set.schemas
        .iter()
        .map(|s| s.name.len() + s.description.len() + s.parameters.len())
        .sum::<usize>()
        + set
            .known_names
            .as_ref()
            .map_or(0, |n| n.iter().map(String::len).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wit_set(params: &[&str]) -> wit::ToolSet {
        wit::ToolSet {
            schemas: params
                .iter()
                .enumerate()
                .map(|(i, p)| wit::ToolSchema {
                    name: format!("t{i}"),
                    description: String::new(),
                    parameters: p.to_string(),
                })
                .collect(),
            known_names: None,
        }
    }

    #[test]
    fn unchanged_parameters_are_parsed_once_and_changed_ones_again() {
        let mut cache = ParsedParameters::default();
        let a = cache
            .tool_set(wit_set(&[r#"{"a":1}"#, r#"{"b":2}"#]))
            .unwrap();
        let b = cache
            .tool_set(wit_set(&[r#"{"a":1}"#, r#"{"b":3}"#]))
            .unwrap();
        // Same text at the same position: the very same parsed tree.
        assert!(Arc::ptr_eq(
            &a.schemas[0].parameters,
            &b.schemas[0].parameters
        ));
        assert!(!Arc::ptr_eq(
            &a.schemas[1].parameters,
            &b.schemas[1].parameters
        ));
        assert_eq!(*b.schemas[1].parameters, serde_json::json!({"b": 3}));
        // Invalid text is refused even when a valid tree sits at that position.
        let err = cache.tool_set(wit_set(&[r#"{"a":1}"#, "[]"])).unwrap_err();
        assert!(err.contains("JSON object"), "{err}");
        let c = cache
            .tool_set(wit_set(&[r#"{"a":1}"#, r#"{"b":3}"#]))
            .unwrap();
        assert!(Arc::ptr_eq(
            &b.schemas[1].parameters,
            &c.schemas[1].parameters
        ));
    }

    #[test]
    fn parameters_must_be_objects() {
        assert!(parameters("t", "{\"type\":\"object\"}").is_ok());
        assert!(parameters("t", "[]").unwrap_err().contains("JSON object"));
        assert!(parameters("t", "{").unwrap_err().contains("not valid JSON"));
    }
}
