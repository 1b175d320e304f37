//! `inspect --session LOG --json|--html`: the steps of a session as a timeline. For each
//! step: what the projection committed (appended, replaced, cleared system nodes, and which
//! branch of the decision that was), the runtime-context snapshot, the route and model, where
//! the cache breakpoints fell, the usage the reply carried, and the first byte where the
//! step's request stops sharing a prefix with the previous step's — attributed to the section
//! and plugin that changed, from the sections each system commit recorded, or to a compaction
//! of the log written since the previous step.

use serde::Serialize;
use serde_json::Value;

use prompt_host::session::{
    request_at, EventData, Session, Usage, ASSISTANT_MESSAGE, COMPACTION_START, STEP_START,
    SYSTEM_MESSAGE, USER_MESSAGE,
};

/// The newest steps a timeline shows: each is a replay of the log up to its end.
pub const MAX_STEPS: usize = 200;

/// The identity the system-prompt projection writes its messages under.
const SYSTEM_PROMPT_PLUGIN: &str = prompt_host::prompt::SYSTEM_PROMPT_PLUGIN_ID;

/// A session's steps.
#[derive(Debug, Serialize)]
pub struct Timeline {
    /// The log's name.
    pub session: String,
    /// Steps before these that are not shown (beyond [`MAX_STEPS`]).
    pub earlier_steps: usize,
    /// The steps, oldest first.
    pub steps: Vec<Step>,
}

/// One step.
#[derive(Debug, Serialize)]
pub struct Step {
    /// Its number.
    pub step: u64,
    /// The route its request was prepared for, and the model.
    pub route: String,
    /// The model, when one was named.
    pub model: Option<String>,
    /// The projection's decision: `first`, `normalise`, `in-history append` or `unchanged`.
    pub branch: &'static str,
    /// The system-prompt commits, in commit order.
    pub commits: Vec<Commit>,
    /// The runtime-context snapshot appended, in bytes (`None`: none appended).
    pub snapshot_bytes: Option<usize>,
    /// The request's size, as sent.
    pub request_bytes: usize,
    /// Where its prompt-cache breakpoints fell.
    pub breakpoints: Vec<String>,
    /// How its request's prefix compares with the previous step's.
    pub prefix: Prefix,
    /// The usage recorded with the reply to this step.
    pub usage: Option<Usage>,
    /// The newest compaction of the log written since the previous step: the request's
    /// messages changed where it put its summary.
    pub compaction: Option<CompactionSeen>,
}

/// A compaction of the log, as `compaction/start` recorded it.
#[derive(Debug, Serialize)]
pub struct CompactionSeen {
    /// The seq of its `compaction/start`.
    pub seq: u64,
    /// How many surface nodes its summary replaced.
    pub replaced: usize,
}

/// One system-prompt commit.
#[derive(Debug, Serialize)]
pub struct Commit {
    /// Its seq.
    pub seq: u64,
    /// `append`, `replace` or `clear`.
    pub op: &'static str,
    /// The node it replaced.
    pub replaced: Option<u64>,
    /// The text's bytes.
    pub bytes: usize,
}

/// Where a request stops sharing a prefix with the previous one.
#[derive(Debug, Default, Serialize)]
pub struct Prefix {
    /// The request starts with everything the previous one sent (the first step: `false`).
    pub kept: bool,
    /// The first byte that differs, in the order the request is cached (tools, system,
    /// messages).
    pub differs_at: Option<usize>,
    /// The part it differs in: `tools[i]`, `system` or `messages[i]`.
    pub part: Option<String>,
    /// The section the byte falls in, when it is in the system prompt.
    pub section: Option<String>,
    /// That section's plugin.
    pub plugin: Option<String>,
}

/// One cached part of a request, as the provider reads it in order.
struct Part {
    label: String,
    text: String,
    /// Sections of the system prompt (name, plugin, end), when this part is its text.
    system: bool,
}

/// The timeline of `session`.
pub fn timeline(session: &Session, name: &str) -> Timeline {
    let events = session.events();
    let starts: Vec<(usize, u64)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == STEP_START)
        .filter_map(|(i, e)| Some((i, step_of(&e.data)?)))
        .collect();
    let earlier_steps = starts.len().saturating_sub(MAX_STEPS);
    let mut steps = Vec::new();
    let mut previous: Option<Vec<Part>> = None;
    for (k, &(at, step)) in starts.iter().enumerate().skip(earlier_steps) {
        // Written before this step and after the previous one's start (its own events and
        // what followed them: replies, results, a compaction).
        let since = k.checked_sub(1).map_or(0, |before| starts[before].0);
        let compaction = events[since..at]
            .iter()
            .rev()
            .find(|e| e.kind == COMPACTION_START)
            .map(|e| CompactionSeen {
                seq: e.seq,
                replaced: match &e.data {
                    EventData::Other(data) => data
                        .get("replaced")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len),
                    EventData::Message(_) => 0,
                },
            });
        let until = starts.get(k + 1).map_or(events.len(), |(next, _)| *next);
        let within = &events[at..until];
        let Ok((_, request)) = request_at(session, Some(step)) else {
            // An unfinished or cancelled step: no request to show.
            continue;
        };
        let commits: Vec<Commit> = within
            .iter()
            .filter(|e| e.kind == SYSTEM_MESSAGE)
            .map(|e| {
                let bytes = e
                    .message()
                    .and_then(|m| m.single_text())
                    .map_or(0, str::len);
                let replaced = e
                    .source_event_seqs
                    .as_ref()
                    .and_then(|seqs| seqs.first().copied());
                Commit {
                    seq: e.seq,
                    op: match (e.is_replacement(), bytes) {
                        (false, _) => "append",
                        (true, 0) => "clear",
                        (true, _) => "replace",
                    },
                    replaced: if e.is_replacement() { replaced } else { None },
                    bytes,
                }
            })
            .collect();
        let first_system = !events[..at].iter().any(|e| e.kind == SYSTEM_MESSAGE);
        let branch = match commits.first() {
            None => "unchanged",
            Some(c) if c.op == "append" && first_system => "first",
            Some(c) if c.op == "append" => "in-history append",
            Some(_) => "normalise",
        };
        let snapshot_bytes = within
            .iter()
            .filter(|e| e.kind == USER_MESSAGE)
            .filter_map(|e| e.message())
            .find(|m| m.is_from_plugin(SYSTEM_PROMPT_PLUGIN))
            .map(|m| m.single_text().map_or(0, str::len));
        let usage = within
            .iter()
            .rev()
            .filter(|e| e.kind == ASSISTANT_MESSAGE)
            .find_map(|e| match &e.data {
                EventData::Message(data) => {
                    serde_json::from_value(data.extra.get("usage")?.clone()).ok()
                }
                EventData::Other(_) => None,
            });
        let body = Value::Object(request.body.clone());
        let parts = parts(&body);
        let sections = sections_in_force(&events[..until]);
        let prefix = match &previous {
            None => Prefix::default(),
            Some(before) => compare(before, &parts, &sections),
        };
        let route = prompt_host::session::context_in_force(&events[..until]);
        steps.push(Step {
            step,
            route: route.name.to_string(),
            model: route.model.clone(),
            branch,
            commits,
            snapshot_bytes,
            request_bytes: body.to_string().len(),
            breakpoints: request
                .cache_breakpoints
                .iter()
                .map(|b| format!("{} {}", b.at, b.index))
                .collect(),
            prefix,
            usage,
            compaction,
        });
        previous = Some(parts);
    }
    Timeline {
        session: name.to_string(),
        earlier_steps,
        steps,
    }
}

fn step_of(data: &EventData) -> Option<u64> {
    match data {
        EventData::Other(value) => value.get("step")?.as_u64(),
        EventData::Message(_) => None,
    }
}

/// The sections the newest system commit of `events` recorded: (name, plugin, end byte).
fn sections_in_force(events: &[prompt_host::session::Event]) -> Vec<(String, String, usize)> {
    events
        .iter()
        .rev()
        .filter(|e| e.kind == SYSTEM_MESSAGE)
        .find_map(|e| e.message_data()?.extra.get("sections").cloned())
        .and_then(|value| serde_json::from_value::<Vec<Origin>>(value).ok())
        .map(|origins| {
            origins
                .into_iter()
                .map(|o| (o.name, o.plugin, o.end))
                .collect()
        })
        .unwrap_or_default()
}

#[derive(serde::Deserialize)]
struct Origin {
    name: String,
    plugin: String,
    end: usize,
}

/// The parts of a request body in the order a provider caches them: tools, the system text,
/// then the messages (a system or developer message's text counted as the system text).
fn parts(body: &Value) -> Vec<Part> {
    let mut parts = Vec::new();
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        for (i, tool) in tools.iter().enumerate() {
            parts.push(Part {
                label: format!("tools[{i}]"),
                text: tool.to_string(),
                system: false,
            });
        }
    }
    for key in ["system", "instructions"] {
        if let Some(system) = body.get(key) {
            parts.push(Part {
                label: key.to_string(),
                text: text_of(system),
                system: true,
            });
        }
    }
    for key in ["messages", "input"] {
        let Some(messages) = body.get(key).and_then(Value::as_array) else {
            continue;
        };
        for (i, message) in messages.iter().enumerate() {
            let role = message.get("role").and_then(Value::as_str);
            let system = matches!(role, Some("system" | "developer")) && i == 0;
            parts.push(Part {
                label: format!("{key}[{i}]"),
                text: if system {
                    message.get("content").map(text_of).unwrap_or_default()
                } else {
                    message.to_string()
                },
                system,
            });
        }
    }
    parts
}

/// The text of a content value: a string, or the text blocks of a list.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        other => other.to_string(),
    }
}

/// Where `now` stops starting with `before`.
fn compare(before: &[Part], now: &[Part], sections: &[(String, String, usize)]) -> Prefix {
    let mut offset = 0;
    for (i, old) in before.iter().enumerate() {
        let Some(new) = now.get(i) else {
            return Prefix {
                kept: false,
                differs_at: Some(offset),
                part: Some(old.label.clone()),
                ..Prefix::default()
            };
        };
        if old.text == new.text && old.label == new.label {
            offset += new.text.len();
            continue;
        }
        let common = old
            .text
            .bytes()
            .zip(new.text.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let (section, plugin) = if new.system {
            sections
                .iter()
                .find(|(_, _, end)| common < *end)
                .or(sections.last())
                .map(|(name, plugin, _)| (Some(name.clone()), Some(plugin.clone())))
                .unwrap_or((None, None))
        } else {
            (None, None)
        };
        return Prefix {
            kept: false,
            differs_at: Some(offset + common),
            part: Some(new.label.clone()),
            section,
            plugin,
        };
    }
    Prefix {
        kept: true,
        ..Prefix::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sections() -> Vec<(String, String, usize)> {
        vec![
            ("identity".into(), "rules".into(), 10),
            ("persona".into(), "persona".into(), 30),
        ]
    }

    #[test]
    fn a_changed_system_text_is_blamed_on_the_section_the_byte_falls_in() {
        let body = |persona: &str| {
            json!({"tools": [{"name": "t"}], "messages": [
                {"role": "system", "content": format!("identity..\n\n{persona}")},
                {"role": "user", "content": "hi"},
            ]})
        };
        let before = parts(&body("You are calm today."));
        let now = parts(&body("You are grumpy today."));
        let prefix = compare(&before, &now, &sections());
        assert!(!prefix.kept);
        assert_eq!(prefix.part.as_deref(), Some("messages[0]"));
        assert_eq!(prefix.section.as_deref(), Some("persona"));
        assert_eq!(prefix.plugin.as_deref(), Some("persona"));
        // The tools come first: a byte past the tools' part.
        let tools = json!({"name": "t"}).to_string().len();
        assert_eq!(
            prefix.differs_at,
            Some(tools + "identity..\n\nYou are ".len())
        );
        assert!(compare(&now, &now, &sections()).kept);
    }

    #[test]
    fn recorded_sections_that_end_early_or_are_missing_blame_no_one_wrongly() {
        let before = parts(&json!({"system": "aaaa", "messages": []}));
        let now = parts(&json!({"system": "aaaaXYZ", "messages": []}));
        // Past every recorded end: the last section.
        let short = vec![("only".to_string(), "p".to_string(), 2)];
        assert_eq!(
            compare(&before, &now, &short).section.as_deref(),
            Some("only")
        );
        // None recorded (an older log, or sections that did not parse): no attribution.
        let prefix = compare(&before, &now, &[]);
        assert_eq!((prefix.section, prefix.plugin), (None, None));
        assert_eq!(prefix.part.as_deref(), Some("system"));
        // A message changed after an unchanged system text is not the system's doing.
        let a = parts(&json!({"system": "s", "messages": [{"role": "user", "content": "1"}]}));
        let b = parts(&json!({"system": "s", "messages": [{"role": "user", "content": "2"}]}));
        let prefix = compare(&a, &b, &sections());
        assert_eq!(prefix.part.as_deref(), Some("messages[0]"));
        assert_eq!(prefix.section, None);
    }
}
