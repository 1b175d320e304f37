//! `assistant`, `tool-result` and `replay`: the conversation side of a session log, without
//! a host.toml (no plugin takes part).

use std::path::Path;

use anyhow::Context;

use super::commands::print_json;
use prompt_host::session::conversation::{assistant_event, tool_result_event};
use prompt_host::session::{request_at, AssistantReply, Session, ToolCall, ToolResult};

fn open(path: &Path) -> anyhow::Result<Session> {
    let (session, report) = Session::open(path)
        .with_context(|| format!("cannot open session log {}", path.display()))?;
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
    let reply = AssistantReply {
        text,
        reasoning,
        tool_calls,
    };
    let mut session = open(path)?;
    let event = assistant_event(&session, &reply)
        .with_context(|| format!("session log {}", path.display()))?;
    let seq = session.append(event)?.seq;
    print_json(&serde_json::json!({ "seq": seq }))
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
        .with_context(|| format!("session log {}", path.display()))?;
    let seq = session.append(event)?.seq;
    print_json(&serde_json::json!({ "seq": seq }))
}

/// `prompt-host replay`: prints the request JSON, exactly as `step` printed it.
pub fn replay(path: &Path, step: Option<u64>) -> anyhow::Result<()> {
    let session = open(path)?;
    let (_, request) = request_at(&session, step)?;
    print_json(&serde_json::to_value(&request)?)
}
