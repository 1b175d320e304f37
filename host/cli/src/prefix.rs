//! Reading a previous rendering for `inspect --against`: the output of `render --json`,
//! `assemble`, `step` (a request of any route, or serve's step result), or a plain prompt
//! text.

use anyhow::Context;
use serde_json::Value;

use prompt_host::prompt::{render_prompt_within, Assembly, NamedText};

/// The previous system prompt contained in `text`; an assembly is rendered within
/// `max_bytes`.
pub fn previous_prompt(text: &str, max_bytes: usize) -> anyhow::Result<String> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Ok(text.to_string());
    };
    if let Some(prompt) = value.get("prompt").and_then(Value::as_str) {
        return Ok(prompt.to_string());
    }
    if let Some(sections) = value.get("sections") {
        return prompt_of_assembly(sections, value.get("variables"), max_bytes);
    }
    // A serve `step` result holds the request.
    let request = value.get("request").unwrap_or(&value);
    // anthropic-messages: the head of the top-level `system` (later blocks are updates
    // that found no place in history).
    match request.get("system") {
        Some(Value::Array(blocks)) => {
            let head = blocks
                .first()
                .and_then(|b| b.get("text"))
                .and_then(Value::as_str);
            return Ok(head.unwrap_or_default().to_string());
        }
        Some(Value::String(text)) => return Ok(text.clone()),
        _ => {}
    }
    // openai-responses: `instructions`.
    if let Some(instructions) = request.get("instructions").and_then(Value::as_str) {
        return Ok(instructions.to_string());
    }
    if let Some(messages) = request.get("messages").and_then(Value::as_array) {
        return Ok(prompt_of_request(messages));
    }
    match value {
        Value::String(s) => Ok(s),
        _ => anyhow::bail!(
            "expected `render --json`, `assemble` or `step` output, or a plain prompt text"
        ),
    }
}

fn prompt_of_assembly(
    sections: &Value,
    variables: Option<&Value>,
    max_bytes: usize,
) -> anyhow::Result<String> {
    let sections: Vec<NamedText> = serde_json::from_value(sections.clone())
        .context("`sections` is not a list of {\"name\", \"text\"}")?;
    let variables = match variables.and_then(Value::as_object) {
        Some(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string)))
            .collect(),
        None => Vec::new(),
    };
    let assembly = Assembly {
        sections,
        variables,
        ..Assembly::default()
    };
    Ok(render_prompt_within(&assembly, max_bytes)?)
}

/// The effective system prompt of a derived request: its system messages' texts, in order
/// (an in-history route carries the latest one after the cached history).
fn prompt_of_request(messages: &[Value]) -> String {
    messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
        .filter_map(|m| match m.get("content") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(parts)) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        })
        .next()
        .unwrap_or_default()
}
