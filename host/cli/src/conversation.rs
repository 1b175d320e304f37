//! `assistant`, `tool-result`, `compact` and `replay`: the conversation side of a session
//! log, without a host.toml (no plugin takes part).

use std::path::Path;

use anyhow::Context;

use super::commands::print_json;
use prompt_host::session::compact as compact_session;
use prompt_host::session::context_in_force;
use prompt_host::session::route::{reply, RouteName};
use prompt_host::session::{assistant_event, tool_result_event};
use prompt_host::session::{request_at, AssistantReply, Session, ToolCall, ToolResult};
use prompt_host::session::{CompactionError, CompactionOrAppend, CompactionRange};

fn open(path: &Path) -> anyhow::Result<Session> {
    let (session, report) = Session::open(path).with_context(|| {
        format!(
            "cannot open session log {}",
            prompt_host::session::display_name(path)
        )
    })?;
    for notice in report.notices(path) {
        super::warn(&notice);
    }
    Ok(session)
}

/// `prompt-host assistant`: prints `{"seq": N}`.
pub fn assistant(
    path: &Path,
    text: Option<String>,
    reasoning: Option<String>,
    tool_calls: &[String],
) -> anyhow::Result<()> {
    let tool_calls = tool_calls
        .iter()
        .map(|json| {
            serde_json::from_str::<ToolCall>(json).with_context(|| {
                format!("--tool-call is not {{\"id\", \"name\", \"arguments\"}}: {json}")
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut reply = AssistantReply::calls(tool_calls);
    reply.text = text;
    reply.reasoning = reasoning;
    let mut session = open(path)?;
    let event = assistant_event(&session, &reply)
        .with_context(|| format!("session log {}", prompt_host::session::display_name(path)))?;
    let seq = session.append(event)?.seq;
    print_json(&serde_json::json!({ "seq": seq }))
}

/// An argument's text: itself, or with `@FILE` the file's (a regular file only, so a FIFO or
/// a device cannot block the command; at most `limit` bytes).
fn inline_or_file(flag: &str, argument: &str, limit: u64) -> anyhow::Result<String> {
    match argument.strip_prefix('@') {
        Some(file) => prompt_host::fsutil::read_regular_to_string(Path::new(file), limit)
            .with_context(|| format!("{flag} {argument}")),
        None => Ok(argument.to_string()),
    }
}

/// `prompt-host assistant --reply`: the provider's own reply, read for `route` (the log's
/// route when `None`); prints `{"seq": N}`.
pub fn assistant_reply(path: &Path, reply: &str, route: Option<RouteName>) -> anyhow::Result<()> {
    let text = inline_or_file("--reply", reply, 64 << 20)?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--reply is not valid JSON: {}", excerpt(&text)))?;
    let mut session = open(path)?;
    let route = route.unwrap_or_else(|| context_in_force(session.events()).name);
    let reply = reply::parse(route, &value)
        .with_context(|| format!("session log {}", prompt_host::session::display_name(path)))?;
    let event = assistant_event(&session, &reply)
        .with_context(|| format!("session log {}", prompt_host::session::display_name(path)))?;
    let seq = session.append(event)?.seq;
    print_json(&serde_json::json!({ "seq": seq }))
}

/// What `prompt-host compact` replaces.
pub enum Range {
    /// The surface nodes from the first seq to the second.
    Seqs(u64, u64),
    /// Everything after the system prompt but the newest this many turns.
    KeepTurns(u32),
}

/// `prompt-host compact`: prints what was written (`compaction::Compacted`).
pub fn compact(path: &Path, summary: &str, range: Range) -> anyhow::Result<()> {
    // Read well past the limit, so a summary too large is refused naming its size.
    let limit = 16 * prompt_host::session::MAX_SUMMARY_BYTES as u64;
    let summary = inline_or_file("--summary", summary, limit)?;
    let mut session = open(path)?;
    let shown = prompt_host::session::display_name(path);
    let refused =
        |e: CompactionError| anyhow::anyhow!("session log {shown}: compaction refused: {e}");
    let range = match range {
        Range::Seqs(start_seq, end_seq) => CompactionRange { start_seq, end_seq },
        Range::KeepTurns(keep) => {
            CompactionRange::keeping(&session, keep as usize).map_err(refused)?
        }
    };
    let done = compact_session(&mut session, &range, &summary).map_err(|e| match e {
        CompactionOrAppend::Refused(e) => refused(e),
        CompactionOrAppend::Append(e) => anyhow::Error::new(e),
    })?;
    print_json(&serde_json::to_value(&done)?)
}

/// The start of `text`, for an error message.
fn excerpt(text: &str) -> String {
    let mut end = text.len().min(80);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_string()
    }
}

/// `prompt-host tool-result`: prints `{"seq": N}`.
pub fn tool_result(
    path: &Path,
    call_id: String,
    content: String,
    is_error: bool,
) -> anyhow::Result<()> {
    let result = ToolResult {
        call_id,
        content,
        is_error,
    };
    let mut session = open(path)?;
    let event = tool_result_event(&session, &result)
        .with_context(|| format!("session log {}", prompt_host::session::display_name(path)))?;
    let seq = session.append(event)?.seq;
    print_json(&serde_json::json!({ "seq": seq }))
}

/// `prompt-host replay`: prints the request JSON, exactly as `step` printed it.
pub fn replay(path: &Path, step: Option<u64>) -> anyhow::Result<()> {
    let session = open(path)?;
    let (_, request) = request_at(&session, step)?;
    print_json(&serde_json::to_value(&request)?)
}
