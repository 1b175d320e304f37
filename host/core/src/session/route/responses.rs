//! `openai-responses`: OpenAI's Responses request (`POST /v1/responses`,
//! platform.openai.com/docs/api-reference/responses/create), sent whole every step (no
//! `previous_response_id`: the log is the conversation):
//!
//! - the system prompt is the top-level `instructions`; in-history updates are
//!   `{role:"developer", content}` input messages where they stand;
//! - user input and snapshots are `{role:"user", content}` input messages;
//! - a reply recorded from a Responses response is its `output` items exactly as sent
//!   (messages, `function_call`s, `reasoning` items — which reasoning models want back with
//!   the calls they led to: platform.openai.com/docs/guides/reasoning); otherwise an
//!   `{role:"assistant", content}` message and a `function_call` item per call (`arguments`
//!   the JSON text);
//! - a tool result is a `function_call_output` item; the API has no error flag, so a failed
//!   call's output is stated as `Error: …`;
//! - tools are function tools `{type:"function", name, description, parameters,
//!   strict:false}` (strict schemas would have to meet rules a plugin's schema need not).

use serde_json::{json, Map, Value};

use super::items::{is_error, joined_text, recorded_reply, tool_call_id, without_nulls, Item};
use super::{stated_error, Reasoning, RouteContext, RouteName};
use crate::prompt::ToolSchema;
use crate::session::conversation::tool_call_of;
use crate::session::message::{ContentBlock, Message};

/// The request body without `model` and the caller's options.
pub(super) fn body(
    ctx: &RouteContext,
    items: &[Item<'_>],
    tools: &[ToolSchema],
) -> Map<String, Value> {
    let mut instructions: Option<String> = None;
    let mut input: Vec<Value> = Vec::new();
    for item in items {
        match *item {
            Item::System {
                message,
                head: true,
            } => instructions = Some(joined_text(message)),
            Item::System {
                message,
                head: false,
            } => {
                input.push(json!({"role": "developer", "content": joined_text(message)}));
            }
            Item::User(message) => input.push(json!({"role": "user", "content": content(message)})),
            Item::ToolResult(message) => {
                let text = joined_text(message);
                let output = if is_error(message) {
                    stated_error(&text)
                } else {
                    text
                };
                input.push(json!({
                    "type": "function_call_output",
                    "call_id": tool_call_id(message).unwrap_or_default(),
                    "output": output,
                }));
            }
            Item::Assistant(message) => input.extend(assistant_items(ctx, message)),
        }
    }
    let mut body = Map::new();
    if let Some(instructions) = instructions {
        body.insert("instructions".into(), instructions.into());
    }
    body.insert("input".into(), Value::Array(input));
    if !tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(tools.iter().map(tool).collect()),
        );
    }
    body
}

/// A string for one text block; input content parts (`input_text`, other blocks verbatim)
/// otherwise.
fn content(message: &Message) -> Value {
    match message.content.as_slice() {
        [ContentBlock::Text { text, .. }] => Value::String(text.clone()),
        blocks => Value::Array(
            blocks
                .iter()
                .map(|block| match block {
                    ContentBlock::Text { text, .. } => json!({"type": "input_text", "text": text}),
                    ContentBlock::Other(value) => value.clone(),
                })
                .collect(),
        ),
    }
}

fn assistant_items(ctx: &RouteContext, message: &Message) -> Vec<Value> {
    if let Some(output) =
        recorded_reply(message, RouteName::OpenaiResponses.as_str()).and_then(Value::as_array)
    {
        return output
            .iter()
            .filter(|item| {
                ctx.reasoning == Reasoning::Send
                    || item.get("type").and_then(Value::as_str) != Some("reasoning")
            })
            .map(without_nulls)
            .collect();
    }
    let mut items = Vec::new();
    let text: Vec<&str> = message
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    if !text.is_empty() {
        items.push(json!({"role": "assistant", "content": text.join("\n\n")}));
    }
    for call in message.content.iter().filter_map(tool_call_of) {
        let arguments = call
            .arguments_text
            .clone()
            .unwrap_or_else(|| call.arguments.to_string());
        items.push(json!({
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": arguments,
        }));
    }
    // Reasoning of another provider is not a Responses reasoning item: not sent.
    items
}

pub(super) fn tool(schema: &ToolSchema) -> Value {
    json!({
        "type": "function",
        "name": schema.name,
        "description": schema.description,
        "parameters": *schema.parameters,
        "strict": false,
    })
}
