//! `anthropic-messages`: Anthropic's Messages request (`POST /v1/messages`,
//! docs.anthropic.com/en/api/messages):
//!
//! - the system prompt is the top-level `system`, as text blocks;
//! - in-history updates (only where the route takes them: see [`super::RouteName::capabilities`])
//!   are `{role:"system", content}` messages. Anthropic places them after a user turn and
//!   before an assistant turn or at the end, so each goes after the user input that follows
//!   it in the log (of a run with no turn between, the newest); one that cannot follow a
//!   user turn joins the top-level `system` instead;
//! - user input, snapshots and tool results are `user` messages of content blocks;
//!   consecutive ones form one message, tool results first (tool use:
//!   docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use). A result is a
//!   `tool_result` block with `is_error: true` when the call failed;
//! - a reply is an `assistant` message: recorded from an Anthropic response, its content
//!   blocks exactly as sent (`thinking` blocks with their signature, which must come back
//!   unchanged: docs.anthropic.com/en/docs/build-with-claude/extended-thinking); otherwise its
//!   text and `tool_use` blocks (`input` the arguments object). Reasoning recorded from
//!   another provider carries no signature and is not sent;
//! - tools are `{name, description, input_schema}`;
//! - prompt caching (docs.anthropic.com/en/docs/build-with-claude/prompt-caching): the
//!   prefix runs tools → system → messages and a request may carry 4 breakpoints. With
//!   `cache` on, one `cache_control` goes on the end of the system prompt proper (on the
//!   last tool when there is no system text) — the stable prefix, which an in-history update
//!   leaves in place — and one on the last block of the latest user turn;
//! - recorded blocks go back without null members (an SDK's `model_dump()` fills
//!   every field the provider did not send with `null`, which the request types refuse).

use serde_json::{json, Map, Value};

use super::items::{is_error, joined_text, recorded_reply, tool_call_id, without_nulls, Item};
use super::{Breakpoint, Reasoning, RouteContext, RouteName};
use crate::prompt::ToolSchema;
use crate::session::conversation::tool_call_of;
use crate::session::message::{ContentBlock, Message};

/// A message being built: its role and content blocks.
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

/// The request body without `model` and the caller's options, and where the breakpoints are.
pub(super) fn body(
    ctx: &RouteContext,
    items: &[Item<'_>],
    tools: &[ToolSchema],
) -> (Map<String, Value>, Vec<Breakpoint>) {
    let mut system: Vec<Value> = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    // In-history system texts waiting for the user turn they go after.
    let mut pending: Vec<String> = Vec::new();
    // The last block of the system prompt proper: the stable prefix. Updates that found no
    // place in history follow it for this request only (the next one moves them into
    // `messages`), so a breakpoint after them would write a cache entry never read.
    let mut stable: Option<usize> = None;
    for item in items {
        match *item {
            Item::System {
                message,
                head: true,
            } => {
                system.push(json!({"type": "text", "text": joined_text(message)}));
                stable = Some(system.len() - 1);
            }
            Item::System {
                message,
                head: false,
            } => pending.push(joined_text(message)),
            Item::User(message) => push(&mut turns, "user", user_blocks(message)),
            Item::ToolResult(message) => push(&mut turns, "user", vec![tool_result(message)]),
            Item::Assistant(message) => {
                let blocks = assistant_blocks(ctx, message);
                if blocks.is_empty() {
                    continue;
                }
                place(&mut pending, &mut turns, &mut system);
                push(&mut turns, "assistant", blocks);
            }
        }
    }
    place(&mut pending, &mut turns, &mut system);

    let mut tools: Vec<Value> = tools.iter().map(tool).collect();
    let mut breakpoints = Vec::new();
    if ctx.cache {
        let ephemeral = json!({"type": "ephemeral"});
        if let Some(index) = stable.or_else(|| system.len().checked_sub(1)) {
            mark(&mut system[index], &ephemeral);
            breakpoints.push(Breakpoint {
                at: "system",
                index,
            });
        } else if let Some(last) = tools.last_mut() {
            mark(last, &ephemeral);
            breakpoints.push(Breakpoint {
                at: "tools",
                index: tools.len() - 1,
            });
        }
        // The latest user turn whose last block can carry a breakpoint (a block of the log
        // that is not an object cannot).
        let latest_user = turns
            .iter()
            .rposition(|t| t.role == "user" && t.blocks.last().is_some_and(Value::is_object));
        if let Some(index) = latest_user {
            if let Some(last) = turns[index].blocks.last_mut() {
                mark(last, &ephemeral);
                breakpoints.push(Breakpoint {
                    at: "message",
                    index,
                });
            }
        }
    }

    let mut body = Map::new();
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let messages = turns
        .into_iter()
        .map(|turn| match turn.role {
            // A system turn is one text, as the API writes it.
            "system" => {
                let text = turn.blocks.first().and_then(|b| b.get("text")).cloned();
                json!({"role": "system", "content": text.unwrap_or_default()})
            }
            role => json!({"role": role, "content": turn.blocks}),
        })
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    (body, breakpoints)
}

/// Put `cache_control` on an object block.
fn mark(block: &mut Value, cache_control: &Value) {
    if let Value::Object(map) = block {
        map.insert("cache_control".into(), cache_control.clone());
    }
}

/// Append `blocks` as a `role` turn, joining the previous turn of the same role (the API
/// reads consecutive same-role messages as one; tool results must lead their user turn).
fn push(turns: &mut Vec<Turn>, role: &'static str, blocks: Vec<Value>) {
    match turns.last_mut() {
        Some(last) if last.role == role && role != "system" => {
            if role == "user" && blocks.first().is_some_and(is_tool_result) {
                // Results of a turn's calls go before any text already in the turn.
                let at = last.blocks.iter().take_while(|b| is_tool_result(b)).count();
                last.blocks.splice(at..at, blocks);
            } else {
                last.blocks.extend(blocks);
            }
        }
        _ => turns.push(Turn { role, blocks }),
    }
}

fn is_tool_result(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool_result")
}

/// Put the waiting system texts where the API takes them: after a user turn; with none to
/// follow, at the end of the top-level system. Of a run of updates with no turn between
/// them (a retry's re-rendering, a step taken again after a failed request) only the newest
/// is sent: the model answered none of the others, and the API takes a system message
/// right after a user turn, not after another system message.
fn place(pending: &mut Vec<String>, turns: &mut Vec<Turn>, system: &mut Vec<Value>) {
    let Some(text) = pending.pop() else {
        return;
    };
    pending.clear();
    let block = json!({"type": "text", "text": text});
    if turns.last().is_some_and(|t| t.role == "user") {
        turns.push(Turn {
            role: "system",
            blocks: vec![block],
        });
    } else {
        system.push(block);
    }
}

fn user_blocks(message: &Message) -> Vec<Value> {
    message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text, .. } => json!({"type": "text", "text": text}),
            ContentBlock::Other(value) => value.clone(),
        })
        .collect()
}

fn tool_result(message: &Message) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "tool_result".into());
    block.insert(
        "tool_use_id".into(),
        tool_call_id(message).unwrap_or_default().into(),
    );
    block.insert("content".into(), joined_text(message).into());
    if is_error(message) {
        block.insert("is_error".into(), true.into());
    }
    Value::Object(block)
}

/// A recorded block as sent, except that with `cache` on the breakpoints are the route's
/// alone: a `cache_control` in a recorded block (no provider sends one; a hand-made reply
/// can) would count against the API's 4 and could push the request past them.
fn own_breakpoints_only(ctx: &RouteContext, block: &Value) -> Value {
    let mut block = without_nulls(block);
    if ctx.cache {
        if let Some(fields) = block.as_object_mut() {
            fields.shift_remove("cache_control");
        }
    }
    block
}

fn assistant_blocks(ctx: &RouteContext, message: &Message) -> Vec<Value> {
    if let Some(content) =
        recorded_reply(message, RouteName::AnthropicMessages.as_str()).and_then(Value::as_array)
    {
        return content
            .iter()
            .filter(|block| {
                let kind = block.get("type").and_then(Value::as_str);
                ctx.reasoning == Reasoning::Send
                    || !matches!(kind, Some("thinking" | "redacted_thinking"))
            })
            .map(|block| own_breakpoints_only(ctx, block))
            .collect();
    }
    let mut blocks = Vec::new();
    for block in &message.content {
        if let Some(call) = tool_call_of(block) {
            blocks.push(json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": call.arguments,
            }));
            continue;
        }
        if let ContentBlock::Text { text, .. } = block {
            blocks.push(json!({"type": "text", "text": text}));
        }
        // Reasoning of another provider has no signature: not sent.
    }
    blocks
}

pub(super) fn tool(schema: &ToolSchema) -> Value {
    let mut input_schema = (*schema.parameters).clone();
    if !input_schema.is_object() {
        input_schema = json!({"type": "object"});
    }
    json!({
        "name": schema.name,
        "description": schema.description,
        "input_schema": input_schema,
    })
}
