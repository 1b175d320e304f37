//! Deriving the model request from the surface, in the OpenAI-compatible chat shape.
//!
//! Wire format, per surface node:
//! - `user/message` and `tool/result` always yield a message;
//! - `system/message` and `assistant/message` yield one unless their content is empty — an
//!   empty system node keeps its surface slot but says nothing to the model;
//! - `content` is a plain string when the message is exactly one text block, otherwise an
//!   array of content parts: text blocks as `{type:"text", text}` and every other block
//!   verbatim (the log's JSON is what the adapter sees);
//! - a tool message carries `tool_call_id` when the logged message has `toolCallId`;
//! - an assistant message's `tool_call` blocks become `tool_calls`
//!   (`{id, type:"function", function:{name, arguments}}`, arguments as JSON text), its
//!   `reasoning` blocks `reasoning_content`, and the remaining blocks its content (`null`
//!   when none is left).
//!
//! The request has `messages` and `tools` only: the system prompt is part of `messages`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::conversation::{tool_call_of, REASONING_BLOCK};
use super::event::Event;
use super::event::{ASSISTANT_MESSAGE, SYSTEM_MESSAGE, TOOL_RESULT, USER_MESSAGE};
use super::message::{ContentBlock, Message};
use super::{Session, Surface};
use crate::prompt::ToolSchema;

/// One chat message on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string for one text block, content parts otherwise.
    pub content: WireContent,
    /// The tool call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An assistant message's tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<WireToolCall>>,
    /// An assistant message's reasoning (the `reasoning_content` of DeepSeek-style APIs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

/// One tool call on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireToolCall {
    /// The call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function called.
    pub function: WireFunctionCall,
}

/// The function of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireFunctionCall {
    /// The tool name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

impl WireMessage {
    /// The text of a single-string message.
    pub fn text(&self) -> Option<&str> {
        match &self.content {
            WireContent::Text(text) => Some(text),
            WireContent::Parts(_) | WireContent::Null => None,
        }
    }
}

/// Message content: a string, or an array of content parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WireContent {
    /// Exactly one text block.
    Text(String),
    /// Several blocks, or a non-text block.
    Parts(Vec<Value>),
    /// No content (`null`): an assistant message of tool calls only.
    Null,
}

/// One tool in the OpenAI function-tool shape `{type:"function", function:{…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireTool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The schema.
    pub function: ToolSchema,
}

impl From<ToolSchema> for WireTool {
    fn from(function: ToolSchema) -> Self {
        Self {
            kind: "function".to_string(),
            function,
        }
    }
}

/// The model request: messages derived from the log, plus the tools. There is deliberately no
/// system field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The derived messages, system prompt included.
    pub messages: Vec<WireMessage>,
    /// The tools, omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<WireTool>,
}

impl ModelRequest {
    /// The request for `session` with `tools`.
    pub fn derive(session: &Session, tools: &[ToolSchema]) -> Self {
        Self {
            messages: derive_messages(session),
            tools: tools.iter().cloned().map(WireTool::from).collect(),
        }
    }
}

/// Walk the surface and derive the wire messages. Each call builds a new list.
pub fn derive_messages(session: &Session) -> Vec<WireMessage> {
    derive_from(session.events(), session.surface())
}

/// The wire messages of `surface`, whose nodes are seqs of `events` (the whole log, or the
/// part of it a past step saw).
pub fn derive_from(events: &[Event], surface: &Surface) -> Vec<WireMessage> {
    let mut out = Vec::with_capacity(surface.len());
    let nodes = surface
        .iter()
        .filter_map(|seq| events.get(usize::try_from(seq).ok()?));
    for event in nodes {
        let Some(message) = event.message() else {
            continue;
        };
        let yields = match event.kind.as_str() {
            USER_MESSAGE | TOOL_RESULT => true,
            SYSTEM_MESSAGE | ASSISTANT_MESSAGE => !message.content.is_empty(),
            _ => false,
        };
        if yields {
            out.push(wire_message(message));
        }
    }
    out
}

/// The wire form of one message.
pub fn wire_message(message: &Message) -> WireMessage {
    if message.role == "assistant" {
        return wire_assistant(message);
    }
    let tool_call_id = message
        .extra
        .get("toolCallId")
        .and_then(Value::as_str)
        .map(str::to_string);
    WireMessage {
        role: message.role.clone(),
        content: wire_content(&message.content),
        tool_call_id,
        tool_calls: None,
        reasoning_content: None,
    }
}

fn wire_content(blocks: &[ContentBlock]) -> WireContent {
    match blocks {
        [] => WireContent::Null,
        [ContentBlock::Text { text, .. }] => WireContent::Text(text.clone()),
        blocks => WireContent::Parts(blocks.iter().map(wire_part).collect()),
    }
}

/// An assistant message: tool-call and reasoning blocks move to their own fields.
fn wire_assistant(message: &Message) -> WireMessage {
    let mut calls = Vec::new();
    let mut reasoning: Vec<&str> = Vec::new();
    let mut rest: Vec<ContentBlock> = Vec::new();
    for block in &message.content {
        if let Some(call) = tool_call_of(block) {
            calls.push(WireToolCall {
                id: call.id,
                kind: "function".to_string(),
                function: WireFunctionCall {
                    name: call.name,
                    arguments: call.arguments.to_string(),
                },
            });
            continue;
        }
        match block {
            ContentBlock::Other(value)
                if value.get("type").and_then(Value::as_str) == Some(REASONING_BLOCK) =>
            {
                reasoning.extend(value.get("text").and_then(Value::as_str))
            }
            _ => rest.push(block.clone()),
        }
    }
    WireMessage {
        role: message.role.clone(),
        content: wire_content(&rest),
        tool_call_id: None,
        tool_calls: (!calls.is_empty()).then_some(calls),
        reasoning_content: (!reasoning.is_empty()).then(|| reasoning.join("\n\n")),
    }
}

fn wire_part(block: &ContentBlock) -> Value {
    match block {
        // Adapter-specific keys on text blocks stay in the log; the wire part is plain.
        ContentBlock::Text { text, .. } => serde_json::json!({"type": "text", "text": text}),
        ContentBlock::Other(value) => value.clone(),
    }
}
