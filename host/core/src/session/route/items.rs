//! The surface as a route reads it: the messages the model sees, in order, with the first
//! system node told apart from later ones (the head carries the system prompt; later ones
//! are in-history updates).
//!
//! Per surface node: `user/message` and `tool/result` always yield an item;
//! `system/message` and `assistant/message` yield one unless their content is empty — an
//! empty system node keeps its surface slot (an empty head still is the head) but says
//! nothing to the model.

use serde_json::Value;

use crate::session::event::{Event, ASSISTANT_MESSAGE, SYSTEM_MESSAGE, TOOL_RESULT, USER_MESSAGE};
use crate::session::message::{ContentBlock, Message};
use crate::session::Surface;

/// One message of the surface, as a route reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Item<'a> {
    /// A system node with content: the head (the first system node on the surface) or a
    /// later one.
    System {
        /// The message.
        message: &'a Message,
        /// Whether it is the first system node.
        head: bool,
    },
    /// User input, a runtime-context snapshot, a summary.
    User(&'a Message),
    /// A model reply.
    Assistant(&'a Message),
    /// The result of one tool call.
    ToolResult(&'a Message),
}

/// The items of `surface`, whose nodes are seqs of `events` (the whole log, or the part of it
/// a past step saw).
pub(crate) fn items<'a>(events: &'a [Event], surface: &Surface) -> Vec<Item<'a>> {
    let mut out = Vec::with_capacity(surface.len());
    let mut seen_system = false;
    let nodes = surface
        .iter()
        .filter_map(|seq| events.get(usize::try_from(seq).ok()?));
    for event in nodes {
        let Some(message) = event.message() else {
            continue;
        };
        match event.kind.as_str() {
            SYSTEM_MESSAGE => {
                let head = !seen_system;
                seen_system = true;
                if !message.content.is_empty() {
                    out.push(Item::System { message, head });
                }
            }
            USER_MESSAGE => out.push(Item::User(message)),
            TOOL_RESULT => out.push(Item::ToolResult(message)),
            ASSISTANT_MESSAGE if !message.content.is_empty() => out.push(Item::Assistant(message)),
            _ => {}
        }
    }
    out
}

/// The text blocks of `message` joined by blank lines (its whole text when it is one block).
pub(crate) fn joined_text(message: &Message) -> String {
    let texts: Vec<&str> = message
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    texts.join("\n\n")
}

/// The id of the call a tool result answers.
pub(crate) fn tool_call_id(message: &Message) -> Option<&str> {
    message.extra.get("toolCallId").and_then(Value::as_str)
}

/// Whether a tool result is marked as an error.
pub(crate) fn is_error(message: &Message) -> bool {
    message
        .extra
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The reply a provider sent, when the message was recorded from one for `route`
/// (`message.provider = {route, reply}`).
pub(crate) fn recorded_reply<'a>(message: &'a Message, route: &str) -> Option<&'a Value> {
    let provider = message.extra.get("provider")?;
    (provider.get("route")?.as_str()? == route)
        .then(|| provider.get("reply"))
        .flatten()
}

/// A recorded block or item as it goes back, without null members at any depth. An SDK's
/// `model_dump()` writes `null` for every field the provider did not send (`caller`,
/// `status`, `namespace`, an output text's `logprobs`, …), and the API's request types take
/// those fields absent or with a value; a null never carries meaning there. A tool call's
/// `input` is the model's own value and goes back exactly, nulls and all.
pub(crate) fn without_nulls(block: &Value) -> Value {
    match block {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let kept = if k == "input" {
                        v.clone()
                    } else {
                        without_nulls(v)
                    };
                    (k.clone(), kept)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}
