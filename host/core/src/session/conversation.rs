//! The model's side of the conversation: assistant replies (text, reasoning, tool calls) and
//! tool results, checked against the log before they enter it.
//!
//! Log form (the content blocks are the log's own; the wire form is in `derive`):
//! - `assistant/message`: `{role:"assistant", content:[{type:"reasoning", text},
//!   {type:"text",text}, {type:"tool_call", id, name, arguments, argumentsText?}],
//!   provider?: {route, reply}}` (arguments: a JSON object; `argumentsText`: the JSON text a
//!   provider sent them as; `provider`: the provider's own reply, see `route::reply`), with
//!   `usage` in the event's data when the provider reported it;
//! - `tool/result`: `{role:"tool", content:[{type:"text",text}], toolCallId, isError?}`.
//!
//! Rules: every tool call id is unique in the log; a tool result answers an open call of the
//! current turn (a call made since the last user input, not yet answered); a step cannot be
//! taken while calls are open (a chat-completions request must answer every call before the
//! next turn).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use thiserror::Error;

use super::event::{ASSISTANT_MESSAGE, TOOL_RESULT, USER_MESSAGE};
use super::message::{ContentBlock, Message, MessageData};
use super::{Event, NewEvent, Session, SurfaceIntent};

/// The `type` of a tool-call content block.
pub const TOOL_CALL_BLOCK: &str = "tool_call";
/// The `type` of a reasoning content block.
pub const REASONING_BLOCK: &str = "reasoning";

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct ToolCall {
    /// The call id, unique in the log; a tool result names it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON object, or (as providers send them) the JSON text of one, which
    /// is parsed when the reply is recorded.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The arguments as the provider wrote them, when they came as JSON text: sent back as
    /// they are to the route that wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // The log's own record of the provider's text: not a key a client sends.
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub arguments_text: Option<String>,
}

impl ToolCall {
    /// A call of `name` with `arguments` (an object, or the JSON text of one).
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            arguments_text: None,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// A reply of the model: the text, reasoning and tool calls the log reads, and — when it was
/// recorded from a provider's own reply ([`crate::session::route::reply::parse`]) — that
/// reply, kept whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AssistantReply {
    /// The visible text.
    #[serde(default)]
    pub text: Option<String>,
    /// The reasoning the model showed, if any.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// The provider's reply this was read from.
    #[serde(skip)]
    pub provider: Option<ProviderReply>,
    /// Token counts the provider reported for the turn.
    #[serde(default)]
    pub usage: Option<Usage>,
}

impl AssistantReply {
    /// A reply of `text` alone.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// Sets [`AssistantReply::text`].
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Sets [`AssistantReply::tool_calls`].
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// Sets [`AssistantReply::reasoning`].
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Adds a tool call.
    pub fn with_tool_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// A reply of `tool_calls` alone.
    pub fn calls(tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::default()
        }
    }
}

/// A provider's reply, as it sent it: what the route reads back (chat-completions: the
/// assistant message's `content`, `refusal`, `tool_calls`, `reasoning_content`;
/// anthropic-messages: the content blocks; openai-responses: the output items).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProviderReply {
    /// The route whose provider sent it.
    pub route: crate::session::route::RouteName,
    /// The reply.
    pub reply: Value,
    /// What the provider reported of the context it managed for this request (Anthropic's
    /// `context_management`: the context edits it applied); logged as
    /// `provider.context_management`, never sent back.
    pub context_management: Option<Value>,
}

/// Token counts of one turn, as the provider reported them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens of the request, cached ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens of the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Input tokens written to the prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
}

/// A call's arguments as the log keeps them: an object, and the text it was parsed from when
/// it came as JSON text. Anything else is refused.
pub fn arguments_of(
    index: usize,
    name: &str,
    arguments: Value,
) -> Result<(Value, Option<String>), ConversationError> {
    let bad = |message: String| ConversationError::BadArguments {
        index,
        name: name.to_string(),
        message,
    };
    match arguments {
        Value::Object(_) => Ok((arguments, None)),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(parsed @ Value::Object(_)) => Ok((parsed, Some(text))),
            Ok(other) => Err(bad(format!(
                "are JSON text of {}, not of an object",
                json_kind(&other)
            ))),
            Err(e) => Err(bad(format!("are not valid JSON text ({e})"))),
        },
        other => Err(bad(format!(
            "are {}; they must be a JSON object or the JSON text of one",
            json_kind(&other)
        ))),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub call_id: String,
    /// What the tool returned (or the error text).
    pub content: String,
    /// Whether the tool failed.
    #[serde(default)]
    pub is_error: bool,
}

/// Why a reply or result was refused. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConversationError {
    /// A reply with no text, no reasoning and no tool call.
    #[error("an assistant message needs text, reasoning or at least one tool call")]
    EmptyReply,
    /// A tool call without an id or a name.
    #[error("tool call {index} needs a non-empty {what}")]
    Incomplete {
        /// Its position in the reply.
        index: usize,
        /// `id` or `name`.
        what: &'static str,
    },
    /// A tool call id used before (in this reply or earlier in the log).
    #[error("tool call id \"{id}\" is already used{}", at_seq(*seq))]
    DuplicateCall {
        /// The id.
        id: String,
        /// The event holding the earlier call (`None`: earlier in the same reply).
        seq: Option<u64>,
    },
    /// A tool result for a call that is not open.
    #[error(
        "tool result for \"{id}\" answers no open tool call of the current turn{}; open calls: {}",
        answered.map(|s| format!(" (it was answered at seq {s})")).unwrap_or_default(),
        list(open)
    )]
    NotOpen {
        /// The call id the result names.
        id: String,
        /// Where it was answered already, if it was.
        answered: Option<u64>,
        /// The calls that are open.
        open: Vec<String>,
    },
    /// A tool call whose arguments are not a JSON object (nor the JSON text of one).
    #[error("tool call {index} (\"{name}\"): its arguments {message}")]
    BadArguments {
        /// Its position in the reply.
        index: usize,
        /// The tool it calls.
        name: String,
        /// What they are instead.
        message: String,
    },
    /// A provider reply that is not of the route's shape.
    #[error("route {route} cannot read this reply: {message}")]
    WrongShape {
        /// The route the reply was read for.
        route: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A step while calls are open.
    #[error(
        "tool calls {} have no tool/result yet; append a result for each before the next step",
        quoted(open)
    )]
    Unanswered {
        /// The open calls.
        open: Vec<String>,
    },
}

fn at_seq(seq: Option<u64>) -> String {
    match seq {
        Some(seq) => format!(" (by the assistant message at seq {seq})"),
        None => " (twice in this message)".to_string(),
    }
}

fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        "(none)".to_string()
    } else {
        quoted(ids)
    }
}

fn quoted(ids: &[String]) -> String {
    ids.iter()
        .map(|id| format!("\"{id}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `assistant/message` event for `reply`, checked against `session`: each call's
/// arguments an object (JSON text is parsed), each id new. A reply recorded from a provider
/// keeps that reply beside the log's blocks (`message.provider`), and its usage goes with the
/// turn (`data.usage`).
pub fn assistant_event(
    session: &Session,
    reply: &AssistantReply,
) -> Result<NewEvent, ConversationError> {
    let text = reply.text.as_deref().filter(|t| !t.is_empty());
    let reasoning = reply.reasoning.as_deref().filter(|t| !t.is_empty());
    let recorded = reply
        .provider
        .as_ref()
        .filter(|p| !is_empty_reply(&p.reply));
    if text.is_none() && reasoning.is_none() && reply.tool_calls.is_empty() && recorded.is_none() {
        return Err(ConversationError::EmptyReply);
    }
    let used = call_ids(session);
    let mut fresh = HashSet::new();
    let mut calls = Vec::with_capacity(reply.tool_calls.len());
    for (index, call) in reply.tool_calls.iter().enumerate() {
        for (what, value) in [("id", &call.id), ("name", &call.name)] {
            if value.is_empty() {
                return Err(ConversationError::Incomplete { index, what });
            }
        }
        let (arguments, parsed_from) = arguments_of(index, &call.name, call.arguments.clone())?;
        if let Some(&seq) = used.get(call.id.as_str()) {
            return Err(ConversationError::DuplicateCall {
                id: call.id.clone(),
                seq: Some(seq),
            });
        }
        if !fresh.insert(call.id.as_str()) {
            return Err(ConversationError::DuplicateCall {
                id: call.id.clone(),
                seq: None,
            });
        }
        calls.push((call, arguments, call.arguments_text.clone().or(parsed_from)));
    }
    let mut content = Vec::new();
    if let Some(reasoning) = reasoning {
        content.push(ContentBlock::Other(
            json!({"type": REASONING_BLOCK, "text": reasoning}),
        ));
    }
    if let Some(text) = text {
        content.push(ContentBlock::text(text));
    }
    for (call, arguments, text) in calls {
        let mut block = Map::new();
        block.insert("type".into(), TOOL_CALL_BLOCK.into());
        block.insert("id".into(), call.id.clone().into());
        block.insert("name".into(), call.name.clone().into());
        block.insert("arguments".into(), arguments);
        if let Some(text) = text {
            block.insert("argumentsText".into(), text.into());
        }
        content.push(ContentBlock::Other(Value::Object(block)));
    }
    let mut message = Message::new("assistant", content);
    if let Some(provider) = &reply.provider {
        let mut recorded = json!({"route": provider.route.as_str(), "reply": provider.reply});
        if let Some(report) = &provider.context_management {
            recorded["context_management"] = report.clone();
        }
        message.extra.insert("provider".into(), recorded);
    }
    let mut data = MessageData::new(message);
    if let Some(usage) = &reply.usage {
        data.extra.insert(
            "usage".into(),
            serde_json::to_value(usage).unwrap_or(Value::Null),
        );
    }
    Ok(NewEvent::message(
        ASSISTANT_MESSAGE,
        data,
        SurfaceIntent::append(),
    ))
}

/// The usage recorded with the newest assistant message that has one.
pub fn last_usage(session: &Session) -> Option<Usage> {
    session
        .events()
        .iter()
        .rev()
        .filter(|e| e.kind == ASSISTANT_MESSAGE)
        .find_map(|e| match &e.data {
            super::EventData::Message(data) => {
                serde_json::from_value(data.extra.get("usage")?.clone()).ok()
            }
            super::EventData::Other(_) => None,
        })
}

/// Whether a provider's reply holds nothing (no content blocks, no output items).
fn is_empty_reply(reply: &Value) -> bool {
    match reply {
        Value::Array(items) => items.is_empty(),
        Value::Object(message) => message.values().all(|v| match v {
            Value::Null => true,
            Value::String(s) => s.is_empty() || s == "assistant",
            Value::Array(a) => a.is_empty(),
            _ => false,
        }),
        _ => true,
    }
}

/// The `tool/result` event for `result`, checked against `session`.
pub fn tool_result_event(
    session: &Session,
    result: &ToolResult,
) -> Result<NewEvent, ConversationError> {
    let open = open_calls(session);
    if !open.contains(&result.call_id) {
        return Err(ConversationError::NotOpen {
            id: result.call_id.clone(),
            answered: answered_at(session, &result.call_id),
            open,
        });
    }
    let mut message = Message::new("tool", vec![ContentBlock::text(result.content.as_str())]);
    message
        .extra
        .insert("toolCallId".into(), Value::String(result.call_id.clone()));
    if result.is_error {
        message.extra.insert("isError".into(), Value::Bool(true));
    }
    Ok(NewEvent::message(
        TOOL_RESULT,
        MessageData::new(message),
        SurfaceIntent::append(),
    ))
}

/// The tool calls made since the last user input that have no result yet, in call order.
pub fn open_calls(session: &Session) -> Vec<String> {
    // Walked backwards to the turn's start; the turn's messages are then read forwards, so
    // the work is linear in the turn (not quadratic in its calls).
    let events = session.events();
    let turn_start = events
        .iter()
        .rposition(|e| e.kind == USER_MESSAGE && e.message().is_some_and(|m| m.source.is_none()))
        .map_or(0, |i| i + 1);
    let turn = &events[turn_start..];
    let answered: HashSet<&str> = turn
        .iter()
        .filter(|e| e.kind == TOOL_RESULT)
        .filter_map(|e| e.message()?.extra.get("toolCallId")?.as_str())
        .collect();
    turn.iter()
        .filter(|e| e.kind == ASSISTANT_MESSAGE)
        .filter_map(Event::message)
        .flat_map(call_ids_of)
        .filter(|id| !answered.contains(id))
        .map(str::to_string)
        .collect()
}

/// The tool calls in an assistant message's content blocks.
pub fn tool_calls(message: &Message) -> impl Iterator<Item = ToolCall> + '_ {
    message.content.iter().filter_map(tool_call_of)
}

/// The tool call a content block holds, if it is a well-formed `tool_call` block.
pub fn tool_call_of(block: &ContentBlock) -> Option<ToolCall> {
    let ContentBlock::Other(value) = block else {
        return None;
    };
    if value.get("type").and_then(Value::as_str) != Some(TOOL_CALL_BLOCK) {
        return None;
    }
    Some(ToolCall {
        id: value.get("id")?.as_str()?.to_string(),
        name: value.get("name")?.as_str()?.to_string(),
        arguments: value.get("arguments").cloned().unwrap_or_else(empty_object),
        arguments_text: value
            .get("argumentsText")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The ids of the well-formed tool calls in an assistant message, without copying their
/// arguments.
fn call_ids_of(message: &Message) -> impl Iterator<Item = &str> + '_ {
    message.content.iter().filter_map(|block| {
        let ContentBlock::Other(value) = block else {
            return None;
        };
        if value.get("type").and_then(Value::as_str) != Some(TOOL_CALL_BLOCK) {
            return None;
        }
        value.get("name")?.as_str()?;
        value.get("id")?.as_str()
    })
}

/// Every tool call id in the log, with the seq of its assistant message (the first, should
/// a hand-edited log repeat one).
fn call_ids(session: &Session) -> HashMap<&str, u64> {
    let mut ids = HashMap::new();
    for event in session.events() {
        if event.kind != ASSISTANT_MESSAGE {
            continue;
        }
        if let Some(message) = event.message() {
            for id in call_ids_of(message) {
                ids.entry(id).or_insert(event.seq);
            }
        }
    }
    ids
}

/// Where call `id` was answered, if it was.
fn answered_at(session: &Session, id: &str) -> Option<u64> {
    session
        .events()
        .iter()
        .filter(|e| e.kind == TOOL_RESULT)
        .find(|e| {
            e.message()
                .and_then(|m| m.extra.get("toolCallId"))
                .and_then(Value::as_str)
                == Some(id)
        })
        .map(|e| e.seq)
}
