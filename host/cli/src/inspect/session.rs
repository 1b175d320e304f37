//! `inspect --session`: where a log's newest request puts its prompt-cache breakpoints, and
//! the usage its providers reported.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use prompt_host::session::Session;

/// Open the log at `path` (once: `--session` reads it for the totals and the report).
pub fn open(path: &Path) -> anyhow::Result<Session> {
    let (session, _) = Session::open(path).with_context(|| {
        format!(
            "cannot open session log {}",
            prompt_host::session::display_name(path)
        )
    })?;
    Ok(session)
}

/// The tokens of the messages of the log's newest request (its `messages`, or `input`, as
/// compact JSON); `None` before its first completed step.
pub fn message_tokens(
    session: &Session,
    tokenizer: &prompt_host::tokens::Tokenizer,
) -> anyhow::Result<Option<usize>> {
    let Ok((_, request)) = prompt_host::session::request_at(session, None) else {
        return Ok(None);
    };
    let messages = request
        .body
        .get("messages")
        .or_else(|| request.body.get("input"));
    match messages {
        Some(messages) => Ok(Some(tokenizer.count(&messages.to_string())?)),
        None => Ok(Some(0)),
    }
}

/// How many recorded replies `--session` lists.
const USAGE_SHOWN: usize = 5;

/// The breakpoints of the log's newest request and the usage its providers reported.
pub fn print(out: &mut impl Write, session: &Session, path: &Path) -> anyhow::Result<()> {
    use prompt_host::session::ASSISTANT_MESSAGE;
    use prompt_host::session::{EventData, Usage};
    writeln!(out)?;
    let route = prompt_host::session::context_in_force(session.events());
    writeln!(
        out,
        "session {} (route {}, model {}):",
        prompt_host::session::display_name(path),
        route.name,
        route.model.as_deref().unwrap_or("none")
    )?;
    match prompt_host::session::request_at(session, None) {
        Ok((step, request)) if request.cache_breakpoints.is_empty() => writeln!(
            out,
            "  step {step}'s request carries no prompt-cache breakpoints{}",
            if route.capabilities().cache_breakpoints == 0 {
                " (the route's provider caches on its own)"
            } else {
                ""
            }
        )?,
        Ok((step, request)) => {
            let at: Vec<String> = request
                .cache_breakpoints
                .iter()
                .map(|b| match b.at {
                    "system" => format!("end of system (block {})", b.index),
                    "tools" => format!("last tool (tool {})", b.index),
                    _ => format!("latest user turn (message {})", b.index),
                })
                .collect();
            writeln!(out, "  step {step}'s cache breakpoints: {}", at.join(", "))?;
        }
        Err(_) => writeln!(out, "  no completed step yet")?,
    }
    let usages: Vec<(u64, Usage)> = session
        .events()
        .iter()
        .rev()
        .filter(|e| e.kind == ASSISTANT_MESSAGE)
        .filter_map(|e| match &e.data {
            EventData::Message(data) => {
                let usage = serde_json::from_value(data.extra.get("usage")?.clone()).ok()?;
                Some((e.seq, usage))
            }
            EventData::Other(_) => None,
        })
        .take(USAGE_SHOWN)
        .collect();
    if usages.is_empty() {
        writeln!(out, "  no reply with usage recorded")?;
        return Ok(());
    }
    writeln!(out, "  usage recorded with the replies, newest first:")?;
    for (seq, usage) in usages {
        writeln!(out, "    seq {seq}: {}", usage_line(&usage))?;
    }
    Ok(())
}

fn usage_line(usage: &prompt_host::session::Usage) -> String {
    let n = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    let cached = match (usage.cached_input_tokens, usage.input_tokens) {
        (Some(c), Some(i)) if i > 0 => format!("{c} from cache ({}%)", c * 100 / i),
        (c, _) => format!("{} from cache", n(c)),
    };
    let mut line = format!("{} input tokens, {cached}", n(usage.input_tokens));
    if let Some(written) = usage.cache_creation_input_tokens {
        line.push_str(&format!(", {written} written to the cache"));
    }
    line.push_str(&format!(", {} output", n(usage.output_tokens)));
    line
}
