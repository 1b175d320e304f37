//! Canonical tool order and the load-time check of `tool_order`.

use std::collections::{HashMap, HashSet};

use super::assembly::ToolSchema;
use super::errors::{AssembleError, ConfigError};
use super::names::utf16_cmp;
use super::TOOL_ORDER_REST;

/// Check `tool_order` at load: a repeated entry first (scanning in list order, the rest
/// marker included), then a missing rest marker. Tool names are not checked here.
pub fn validate_tool_order(order: &[String]) -> Result<(), ConfigError> {
    let mut seen: HashSet<&str> = HashSet::with_capacity(order.len());
    for entry in order {
        if !seen.insert(entry.as_str()) {
            return Err(ConfigError::DuplicateToolOrderEntry(entry.clone()));
        }
    }
    if !seen.contains(TOOL_ORDER_REST) {
        return Err(ConfigError::MissingRestEntry);
    }
    Ok(())
}

/// A collected tool and the plugin whose provider returned it (for error attribution).
#[derive(Debug, Clone)]
pub struct CollectedTool {
    /// The schema (name, description, parameters only).
    pub schema: ToolSchema,
    /// The owner of the provider that returned it.
    pub plugin: std::sync::Arc<str>,
}

/// Put collected tools in canonical order.
///
/// Without `tool_order`: a stable sort by UTF-16 code units. With it: listed names first in
/// list order (every tool of that name, in collection order), the unlisted rest sorted at the
/// marker. A listed name that is known but absent emits nothing; one outside `known` is an
/// error. A tool named `<unlisted-tools>` is refused either way.
pub fn order_tools(
    tools: Vec<CollectedTool>,
    tool_order: Option<&[String]>,
    known: &HashSet<String>,
) -> Result<Vec<ToolSchema>, AssembleError> {
    if let Some(reserved) = tools.iter().find(|t| t.schema.name == TOOL_ORDER_REST) {
        return Err(AssembleError::ReservedToolName {
            plugin: reserved.plugin.to_string(),
        });
    }
    let mut tools: Vec<ToolSchema> = tools.into_iter().map(|t| t.schema).collect();
    let Some(order) = tool_order else {
        tools.sort_by(|a, b| utf16_cmp(&a.name, &b.name));
        return Ok(tools);
    };

    let unknown: Vec<String> = order
        .iter()
        .filter(|name| name.as_str() != TOOL_ORDER_REST && !known.contains(name.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        let mut known: Vec<String> = known.iter().cloned().collect();
        known.sort_by(|a, b| utf16_cmp(a, b));
        return Err(AssembleError::UnknownToolOrder { unknown, known });
    }

    let listed: HashSet<&str> = order.iter().map(String::as_str).collect();
    // Group listed tools by name, keeping collection order within a name.
    let mut by_name: HashMap<String, Vec<ToolSchema>> = HashMap::new();
    let mut rest: Vec<ToolSchema> = Vec::new();
    let total = tools.len();
    for tool in tools {
        if listed.contains(tool.name.as_str()) {
            by_name.entry(tool.name.clone()).or_default().push(tool);
        } else {
            rest.push(tool);
        }
    }
    rest.sort_by(|a, b| utf16_cmp(&a.name, &b.name));

    let mut out = Vec::with_capacity(total);
    let mut rest = Some(rest);
    for name in order {
        if name == TOOL_ORDER_REST {
            // Validated at load: the marker appears exactly once.
            out.extend(rest.take().unwrap_or_default());
        } else if let Some(group) = by_name.remove(name) {
            out.extend(group);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn tool(name: &str, description: &str) -> CollectedTool {
        CollectedTool {
            schema: ToolSchema {
                name: name.into(),
                description: description.into(),
                parameters: json!({"type": "object"}).into(),
            },
            plugin: Arc::from("p"),
        }
    }

    fn names(tools: &[ToolSchema]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn validation_texts_and_precedence() {
        let r = TOOL_ORDER_REST;
        assert_eq!(validate_tool_order(&strings(&["a", r])), Ok(()));
        assert_eq!(
            validate_tool_order(&[]).unwrap_err().to_string(),
            "toolOrder must contain the \"<unlisted-tools>\" rest entry (where unlisted tools are inserted)"
        );
        assert_eq!(
            validate_tool_order(&strings(&["bash", "todo_write"])),
            Err(ConfigError::MissingRestEntry)
        );
        assert_eq!(
            validate_tool_order(&strings(&["bash", "bash", r]))
                .unwrap_err()
                .to_string(),
            "toolOrder lists \"bash\" more than once"
        );
        assert_eq!(
            validate_tool_order(&strings(&[r, "bash", r]))
                .unwrap_err()
                .to_string(),
            "toolOrder lists \"<unlisted-tools>\" more than once"
        );
        // The duplicate wins over the missing marker.
        assert_eq!(
            validate_tool_order(&strings(&["a", "a"])),
            Err(ConfigError::DuplicateToolOrderEntry("a".into()))
        );
    }

    #[test]
    fn same_name_tools_keep_collection_order() {
        let tools = vec![
            tool("dup", "first"),
            tool("anchor", "anchor"),
            tool("dup", "second"),
        ];
        let out = order_tools(tools, None, &HashSet::new()).unwrap();
        let d: Vec<&str> = out.iter().map(|t| t.description.as_str()).collect();
        assert_eq!(d, ["anchor", "first", "second"]);
    }

    #[test]
    fn listed_duplicates_all_emitted_in_collection_order() {
        let order = strings(&["dup", TOOL_ORDER_REST]);
        let tools = vec![
            tool("z", "z"),
            tool("dup", "1"),
            tool("a", "a"),
            tool("dup", "2"),
        ];
        let known: HashSet<String> = ["z", "dup", "a"].iter().map(|s| s.to_string()).collect();
        let out = order_tools(tools, Some(&order), &known).unwrap();
        let d: Vec<&str> = out.iter().map(|t| t.description.as_str()).collect();
        assert_eq!(d, ["1", "2", "a", "z"]);
        assert_eq!(names(&out), ["dup", "dup", "a", "z"]);
    }
}
