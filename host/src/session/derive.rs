//! Deriving the model request from the surface (SPEC §7.2), in the OpenAI-compatible chat
//! shape.
//!
//! Wire format, per surface node:
//! - `user/message` and `tool/result` always yield a message;
//! - `system/message` and `assistant/message` yield one unless their content is empty — an
//!   empty system node keeps its surface slot but says nothing to the model;
//! - `content` is a plain string when the message is exactly one text block, otherwise an
//!   array of content parts: text blocks as `{type:"text", text}` and every other block
//!   verbatim (the log's JSON is what the adapter sees);
//! - a tool message carries `tool_call_id` when the logged message has `toolCallId`.
//!
//! The request has `messages` and `tools` only: the system prompt is part of `messages`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::event::{ASSISTANT_MESSAGE, SYSTEM_MESSAGE, TOOL_RESULT, USER_MESSAGE};
use super::message::{ContentBlock, Message};
use super::Session;
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
}

impl WireMessage {
    /// The text of a single-string message.
    pub fn text(&self) -> Option<&str> {
        match &self.content {
            WireContent::Text(text) => Some(text),
            WireContent::Parts(_) => None,
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
    let mut out = Vec::with_capacity(session.surface().nodes().len());
    for event in session.surface_events() {
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
    let content = match message.content.as_slice() {
        [ContentBlock::Text { text, .. }] => WireContent::Text(text.clone()),
        blocks => WireContent::Parts(blocks.iter().map(wire_part).collect()),
    };
    let tool_call_id = message
        .extra
        .get("toolCallId")
        .and_then(Value::as_str)
        .map(str::to_string);
    WireMessage {
        role: message.role.clone(),
        content,
        tool_call_id,
    }
}

fn wire_part(block: &ContentBlock) -> Value {
    match block {
        // Adapter-specific keys on text blocks stay in the log; the wire part is plain.
        ContentBlock::Text { text, .. } => serde_json::json!({"type": "text", "text": text}),
        ContentBlock::Other(value) => value.clone(),
    }
}
