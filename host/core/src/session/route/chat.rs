//! `chat-completions`: OpenAI's Chat Completions request (and the servers compatible with
//! it). Follows the API reference of `POST /v1/chat/completions`
//! (platform.openai.com/docs/api-reference/chat/create):
//!
//! - the system prompt is the first message, `{role:"system", content}`; in-history updates
//!   are further system messages where they stand;
//! - user input and snapshots are `{role:"user", content}` (a string for one text block,
//!   content parts otherwise);
//! - a reply is `{role:"assistant", content?, tool_calls?}`: `content` is left out when the
//!   reply made tool calls and said nothing (the API requires content unless there are tool
//!   calls, so a reply with neither gets `""`), and tool calls carry their arguments as the
//!   JSON text the provider sent (or the object serialised);
//! - a tool result is `{role:"tool", tool_call_id, content}`; the API has no error flag, so a
//!   failed call's content is stated as `Error: …`;
//! - `reasoning_content` (DeepSeek's thinking mode, which requires it back on every turn that
//!   made tool calls: api-docs.deepseek.com/guides/thinking_mode#tool-calls) only with
//!   `reasoning: "send"`; OpenAI's types have no such key.
//!
//! A reply recorded from a chat-completions response is sent back as the provider sent it:
//! its `content`, `refusal` and `tool_calls` verbatim.

use serde_json::{json, Map, Value};

use super::items::{is_error, joined_text, recorded_reply, tool_call_id, Item};
use super::{stated_error, Reasoning, RouteContext};
use crate::prompt::ToolSchema;
use crate::session::conversation::{tool_call_of, REASONING_BLOCK};
use crate::session::message::{ContentBlock, Message};

/// The request body without `model` and the caller's options.
pub(super) fn body(
    ctx: &RouteContext,
    items: &[Item<'_>],
    tools: &[ToolSchema],
) -> Map<String, Value> {
    let messages: Vec<Value> = items.iter().map(|item| message(ctx, item)).collect();
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages));
    if !tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(tools.iter().map(tool).collect()),
        );
    }
    body
}

/// One tool in the function-tool shape `{type:"function", function:{name, description,
/// parameters}}`.
pub(super) fn tool(schema: &ToolSchema) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": schema.name,
            "description": schema.description,
            "parameters": *schema.parameters,
        }
    })
}

fn message(ctx: &RouteContext, item: &Item<'_>) -> Value {
    match *item {
        Item::System { message, .. } => {
            json!({"role": "system", "content": content(&message.content)})
        }
        Item::User(message) => json!({"role": "user", "content": content(&message.content)}),
        Item::ToolResult(message) => {
            let mut out = Map::new();
            out.insert("role".into(), "tool".into());
            let text = if is_error(message) {
                Value::String(stated_error(&joined_text(message)))
            } else {
                content(&message.content)
            };
            out.insert("content".into(), text);
            if let Some(id) = tool_call_id(message) {
                out.insert("tool_call_id".into(), id.into());
            }
            Value::Object(out)
        }
        Item::Assistant(message) => assistant(ctx, message),
    }
}

/// A string for exactly one text block, content parts otherwise (text blocks as
/// `{type:"text", text}`, every other block verbatim).
fn content(blocks: &[ContentBlock]) -> Value {
    match blocks {
        [ContentBlock::Text { text, .. }] => Value::String(text.clone()),
        blocks => Value::Array(
            blocks
                .iter()
                .map(|block| match block {
                    ContentBlock::Text { text, .. } => json!({"type": "text", "text": text}),
                    ContentBlock::Other(value) => value.clone(),
                })
                .collect(),
        ),
    }
}

fn assistant(ctx: &RouteContext, message: &Message) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), "assistant".into());
    let mut reasoning: Vec<String> = Vec::new();
    let has_calls;
    if let Some(reply) = recorded_reply(message, super::RouteName::ChatCompletions.as_str()) {
        // As the provider sent it: the keys of an assistant message the API takes back.
        let calls: Vec<Value> = reply
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| calls.iter().map(sent_tool_call).collect())
            .unwrap_or_default();
        has_calls = !calls.is_empty();
        match reply.get("content") {
            Some(Value::Null) | None if !has_calls => {
                out.insert("content".into(), "".into());
            }
            Some(content) => {
                out.insert("content".into(), content.clone());
            }
            None => {}
        }
        if let Some(refusal) = reply.get("refusal").filter(|r| !r.is_null()) {
            out.insert("refusal".into(), refusal.clone());
        }
        if has_calls {
            out.insert("tool_calls".into(), Value::Array(calls));
        }
        reasoning.extend(
            reply
                .get("reasoning_content")
                .and_then(Value::as_str)
                .map(str::to_string),
        );
    } else {
        let mut calls = Vec::new();
        let mut rest = Vec::new();
        for block in &message.content {
            if let Some(call) = tool_call_of(block) {
                let arguments = call
                    .arguments_text
                    .clone()
                    .unwrap_or_else(|| call.arguments.to_string());
                calls.push(json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments},
                }));
                continue;
            }
            match block {
                ContentBlock::Other(value)
                    if value.get("type").and_then(Value::as_str) == Some(REASONING_BLOCK) =>
                {
                    reasoning.extend(
                        value
                            .get("text")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    );
                }
                _ => rest.push(block.clone()),
            }
        }
        has_calls = !calls.is_empty();
        if !rest.is_empty() {
            out.insert("content".into(), content(&rest));
        } else if !has_calls {
            out.insert("content".into(), "".into());
        }
        if has_calls {
            out.insert("tool_calls".into(), Value::Array(calls));
        }
    }
    if ctx.reasoning == Reasoning::Send && has_calls {
        out.insert("reasoning_content".into(), reasoning.join("\n\n").into());
    }
    Value::Object(out)
}

/// A tool call of a recorded reply, with the keys the API takes back.
fn sent_tool_call(call: &Value) -> Value {
    let function = call.get("function");
    json!({
        "id": call.get("id").cloned().unwrap_or(Value::Null),
        "type": "function",
        "function": {
            "name": function.and_then(|f| f.get("name")).cloned().unwrap_or(Value::Null),
            "arguments": function.and_then(|f| f.get("arguments")).cloned().unwrap_or(Value::Null),
        },
    })
}
