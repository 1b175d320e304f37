//! Replies as providers send them: an OpenAI chat completion (or its `choices[0].message`),
//! an Anthropic `Message` (or its `content` blocks), a Responses response (or its `output`
//! items). Each is read into the log's own reply (text, reasoning, tool calls with their
//! arguments as an object) and kept whole beside it, so the next request of the same route
//! carries it back exactly as the provider sent it, and a request of another route still
//! has its text and calls. Usage figures are read too.
//!
//! A reply of another route's shape is refused, and so are tool-call arguments that are not
//! a JSON object (or the JSON text of one): nothing is appended.

use serde_json::{Map, Value};

use super::RouteName;
use crate::session::conversation::{
    arguments_of, AssistantReply, ConversationError, ProviderReply, ToolCall, Usage,
};

/// The type of the item (openai-responses) or content block (anthropic-messages) in which a
/// provider hands back a conversation it compacted on its side: sent back in place, it
/// stands for everything before it.
pub const COMPACTION: &str = "compaction";

/// Whether `message` was recorded from a provider's reply that compacted the conversation
/// on the provider's side (a [`COMPACTION`] item or block): what came before it is, to the
/// model, the provider's summary.
pub fn compacted_by_provider(message: &crate::session::Message) -> bool {
    message
        .extra
        .get("provider")
        .and_then(|provider| provider.get("reply"))
        .and_then(Value::as_array)
        .is_some_and(|items| {
            items
                .iter()
                .any(|item| item.get("type").and_then(Value::as_str) == Some(COMPACTION))
        })
}

/// Read `reply`, sent by the provider of `route`.
pub fn parse(route: RouteName, reply: &Value) -> Result<AssistantReply, ConversationError> {
    let wrong = |message: String| ConversationError::WrongShape {
        route: route.as_str(),
        message,
    };
    if let Some(other) = shape_of(reply).filter(|shape| *shape != route) {
        return Err(wrong(format!(
            "it is shaped like a reply of the {other} route"
        )));
    }
    let read = match route {
        RouteName::ChatCompletions => chat(reply),
        RouteName::AnthropicMessages => anthropic(reply),
        RouteName::OpenaiResponses => responses(reply),
    }
    .map_err(|e| match e {
        Refused::Shape(message) => wrong(message),
        Refused::Conversation(e) => e,
    })?;
    Ok(AssistantReply {
        text: (!read.texts.is_empty()).then(|| read.texts.join("\n\n")),
        reasoning: (!read.reasoning.is_empty()).then(|| read.reasoning.join("\n\n")),
        tool_calls: read.calls,
        provider: Some(ProviderReply {
            route,
            reply: read.raw,
            context_management: read.context_management,
        }),
        usage: read.usage,
    })
}

/// The route whose shape `reply` unmistakably has, if any.
fn shape_of(reply: &Value) -> Option<RouteName> {
    if let Value::Array(items) = reply {
        // Bare content blocks, or bare output items. Both providers name their compaction
        // item `compaction`: OpenAI's item has an `id`, Anthropic's block has none.
        let first = items.first()?;
        return Some(match first.get("type")?.as_str()? {
            "message" | "function_call" | "reasoning" => RouteName::OpenaiResponses,
            COMPACTION if first.get("id").is_some() => RouteName::OpenaiResponses,
            _ => RouteName::AnthropicMessages,
        });
    }
    if reply.get("choices").is_some() || reply.get("tool_calls").is_some() {
        return Some(RouteName::ChatCompletions);
    }
    if reply.get("output").is_some()
        || reply.get("object").and_then(Value::as_str) == Some("response")
    {
        return Some(RouteName::OpenaiResponses);
    }
    match reply.get("content") {
        Some(Value::Array(_)) if reply.get("type").and_then(Value::as_str) == Some("message") => {
            Some(RouteName::AnthropicMessages)
        }
        Some(Value::Array(blocks)) if blocks.iter().any(is_anthropic_only_block) => {
            Some(RouteName::AnthropicMessages)
        }
        Some(Value::String(_) | Value::Null) => Some(RouteName::ChatCompletions),
        _ => None,
    }
}

fn is_anthropic_only_block(block: &Value) -> bool {
    matches!(
        block.get("type").and_then(Value::as_str),
        Some("tool_use" | "thinking" | "redacted_thinking")
    )
}

/// A reply read from the provider's JSON.
struct Read {
    texts: Vec<String>,
    reasoning: Vec<String>,
    calls: Vec<ToolCall>,
    raw: Value,
    usage: Option<Usage>,
    /// What the provider reports of the context it managed (Anthropic's
    /// `context_management`: the edits it applied), kept in the log, never sent back.
    context_management: Option<Value>,
}

/// Why a reply was refused while it was read.
enum Refused {
    /// Not the route's shape (the message says what is wrong).
    Shape(String),
    /// A call the log refuses (its arguments).
    Conversation(ConversationError),
}

fn shape(message: impl Into<String>) -> Refused {
    Refused::Shape(message.into())
}

fn role_is_assistant(message: &Map<String, Value>) -> Result<(), Refused> {
    match message.get("role") {
        None => Ok(()),
        Some(Value::String(role)) if role == "assistant" => Ok(()),
        Some(other) => Err(shape(format!("its role is {other}, not \"assistant\""))),
    }
}

/// A chat completion, or its `choices[0].message`.
fn chat(reply: &Value) -> Result<Read, Refused> {
    let (message, usage) = match reply.get("choices") {
        Some(choices) => (
            choices
                .get(0)
                .and_then(|c| c.get("message"))
                .ok_or_else(|| shape("it has no choices[0].message"))?,
            reply.get("usage"),
        ),
        None => (reply, reply.get("usage")),
    };
    let message = message.as_object().ok_or_else(|| {
        shape("a chat-completions reply is an object (the completion, or choices[0].message)")
    })?;
    role_is_assistant(message)?;
    let mut texts = Vec::new();
    match message.get("content") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => texts.extend((!text.is_empty()).then(|| text.clone())),
        Some(Value::Array(parts)) => texts.extend(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .map(str::to_string),
        ),
        Some(other) => return Err(shape(format!("its content is {other}"))),
    }
    if texts.is_empty() {
        if let Some(refusal) = message.get("refusal").and_then(Value::as_str) {
            texts.push(refusal.to_string());
        }
    }
    let mut calls = Vec::new();
    if let Some(list) = message.get("tool_calls").filter(|v| !v.is_null()) {
        let list = list
            .as_array()
            .ok_or_else(|| shape("its tool_calls is not a list"))?;
        for (index, call) in list.iter().enumerate() {
            let kind = call
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("function");
            if kind != "function" {
                return Err(shape(format!(
                    "tool call {index} has type \"{kind}\"; only function tool calls are recorded"
                )));
            }
            let function = call
                .get("function")
                .ok_or_else(|| shape(format!("tool call {index} has no function")))?;
            calls.push(read_call(
                index,
                call.get("id"),
                function.get("name"),
                function.get("arguments"),
            )?);
        }
    }
    let reasoning: Vec<String> = message
        .get("reasoning_content")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map(str::to_string)
        .into_iter()
        .collect();
    // What the API takes back of an assistant message, and DeepSeek's reasoning.
    let mut raw = Map::new();
    for key in [
        "role",
        "content",
        "refusal",
        "tool_calls",
        "reasoning_content",
    ] {
        if let Some(value) = message.get(key) {
            raw.insert(key.into(), value.clone());
        }
    }
    let usage = usage.filter(|u| u.is_object()).map(|u| Usage {
        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64),
        output_tokens: u.get("completion_tokens").and_then(Value::as_u64),
        cached_input_tokens: u
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64),
        cache_creation_input_tokens: None,
    });
    Ok(Read {
        texts,
        reasoning,
        calls,
        raw: Value::Object(raw),
        usage,
        context_management: None,
    })
}

/// An Anthropic `Message`, `{role, content}`, or its content blocks.
fn anthropic(reply: &Value) -> Result<Read, Refused> {
    let (blocks, usage) = match reply {
        Value::Array(blocks) => (blocks, None),
        Value::Object(message) => {
            role_is_assistant(message)?;
            let blocks = message
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| shape("an anthropic-messages reply has a content list"))?;
            (blocks, message.get("usage"))
        }
        _ => {
            return Err(shape(
                "an anthropic-messages reply is a Message or its content blocks",
            ))
        }
    };
    let mut read = Read {
        texts: Vec::new(),
        reasoning: Vec::new(),
        calls: Vec::new(),
        raw: Value::Array(blocks.clone()),
        usage: None,
        context_management: match reply {
            Value::Object(message) => message.get("context_management").cloned(),
            _ => None,
        }
        .filter(|report| !report.is_null()),
    };
    for (index, block) in blocks.iter().enumerate() {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(format!("content block {index} has no type")))?;
        match kind {
            "text" => read.texts.extend(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            ),
            "thinking" => read.reasoning.extend(
                block
                    .get("thinking")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            ),
            "tool_use" => {
                let call = read_call(
                    read.calls.len(),
                    block.get("id"),
                    block.get("name"),
                    block.get("input"),
                )?;
                read.calls.push(call);
            }
            // Redacted thinking, server tools and their results, a compaction block: kept in
            // the reply only.
            _ => {}
        }
    }
    read.usage = usage.filter(|u| u.is_object()).map(|u| {
        let n = |key: &str| u.get(key).and_then(Value::as_u64);
        let cached = n("cache_read_input_tokens");
        let created = n("cache_creation_input_tokens");
        Usage {
            // Anthropic counts uncached input apart from cache reads and writes.
            input_tokens: n("input_tokens").map(|i| i + cached.unwrap_or(0) + created.unwrap_or(0)),
            output_tokens: n("output_tokens"),
            cached_input_tokens: cached,
            cache_creation_input_tokens: created,
        }
    });
    Ok(read)
}

/// A Responses `Response`, or its `output` items.
fn responses(reply: &Value) -> Result<Read, Refused> {
    let (items, usage) = match reply {
        Value::Array(items) => (items, None),
        Value::Object(response) => (
            response
                .get("output")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    shape(
                        "an openai-responses reply is a Response (with output) or its output items",
                    )
                })?,
            response.get("usage"),
        ),
        _ => {
            return Err(shape(
                "an openai-responses reply is a Response or its output items",
            ))
        }
    };
    let mut read = Read {
        texts: Vec::new(),
        reasoning: Vec::new(),
        calls: Vec::new(),
        raw: Value::Array(items.clone()),
        usage: None,
        context_management: None,
    };
    for (index, item) in items.iter().enumerate() {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| shape(format!("output item {index} has no type")))?;
        match kind {
            "message" => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let text = match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => part.get("text"),
                        Some("refusal") => part.get("refusal"),
                        _ => None,
                    };
                    read.texts
                        .extend(text.and_then(Value::as_str).map(str::to_string));
                }
            }
            "function_call" => {
                let call = read_call(
                    read.calls.len(),
                    item.get("call_id"),
                    item.get("name"),
                    item.get("arguments"),
                )?;
                read.calls.push(call);
            }
            "reasoning" => {
                for part in item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    read.reasoning
                        .extend(part.get("text").and_then(Value::as_str).map(str::to_string));
                }
            }
            // Other items (built-in tool calls, a compaction item, …): kept in the reply only.
            _ => {}
        }
    }
    read.usage = usage.filter(|u| u.is_object()).map(|u| Usage {
        input_tokens: u.get("input_tokens").and_then(Value::as_u64),
        output_tokens: u.get("output_tokens").and_then(Value::as_u64),
        cached_input_tokens: u
            .pointer("/input_tokens_details/cached_tokens")
            .and_then(Value::as_u64),
        cache_creation_input_tokens: None,
    });
    Ok(read)
}

/// One tool call: its id and name strings, its arguments an object or the JSON text of one.
fn read_call(
    index: usize,
    id: Option<&Value>,
    name: Option<&Value>,
    arguments: Option<&Value>,
) -> Result<ToolCall, Refused> {
    let id = id
        .and_then(Value::as_str)
        .ok_or_else(|| shape(format!("tool call {index} has no id")))?;
    let name = name
        .and_then(Value::as_str)
        .ok_or_else(|| shape(format!("tool call {index} has no name")))?;
    let arguments = arguments.cloned().unwrap_or(Value::Object(Map::new()));
    let (arguments, text) = arguments_of(index, name, arguments).map_err(Refused::Conversation)?;
    let mut call = ToolCall::new(id, name, arguments);
    call.arguments_text = text;
    Ok(call)
}
