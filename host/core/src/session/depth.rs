//! How deeply an event nests, checked before it is written: a log line nested deeper than
//! the reader reads would be acknowledged once and make the log unopenable ever after.
//!
//! JSON enters events from many places — tool-call arguments, tool parameters a plugin or an
//! MCP server declares, fields of a richer producer — each parsed by a reader that allows up
//! to [`MAX_DEPTH`] levels and then placed several levels down inside the event. The check
//! walks every value where the event holds it, without recursion (a value built in memory
//! may be nested far deeper than any parser allows, and serialising it would exhaust the
//! stack), and stops at the first point past the limit, naming where it is.

use serde_json::Value;

use super::error::EventError;
use super::event::{Event, EventData};
use super::message::ContentBlock;

/// The deepest nesting a log line may have: opening a log reads each line with serde_json,
/// which refuses a 128th level of arrays and objects.
pub const MAX_DEPTH: usize = 127;

/// The deepest a tool's parameters may nest: a `request/header` line holds them five levels
/// down (the event, its data, the header, the tool list, the tool).
pub const MAX_TOOL_PARAMETERS_DEPTH: usize = MAX_DEPTH - 5;

/// A JSON pointer (inside `value`) to its first container nested more than `limit` levels
/// deep, if there is one: for refusing a value where it enters, naming where it is too deep.
pub fn too_deep(value: &Value, limit: usize) -> Option<String> {
    first_beyond(value, limit).map(|path| pointer(&path))
}

/// How many path segments an error shows before eliding the rest.
const SHOWN_SEGMENTS: usize = 12;

/// Refuse `event` when its line would nest deeper than [`MAX_DEPTH`].
pub(crate) fn check(event: &Event) -> Result<(), EventError> {
    // (where the value sits, how many containers enclose it in the line, the value)
    let mut parts: Vec<(Vec<String>, usize, &Value)> = Vec::new();
    for (key, value) in &event.extra {
        parts.push((vec![key.clone()], 1, value));
    }
    match &event.data {
        EventData::Other(value) => parts.push((vec!["data".into()], 1, value)),
        EventData::Message(data) => {
            let at = |segments: &[&str], key: &str| {
                let mut path: Vec<String> = segments.iter().map(|s| s.to_string()).collect();
                path.push(key.to_string());
                path
            };
            for (key, value) in &data.extra {
                parts.push((at(&["data"], key), 2, value));
            }
            let message = &data.message;
            for (key, value) in &message.extra {
                parts.push((at(&["data", "message"], key), 3, value));
            }
            if let Some(source) = &message.source {
                for (key, value) in &source.extra {
                    parts.push((at(&["data", "message", "source"], key), 4, value));
                }
            }
            for (i, block) in message.content.iter().enumerate() {
                let index = i.to_string();
                match block {
                    ContentBlock::Other(value) => {
                        parts.push((at(&["data", "message", "content"], &index), 4, value))
                    }
                    ContentBlock::Text { extra, .. } => {
                        for (key, value) in extra {
                            let mut path = at(&["data", "message", "content"], &index);
                            path.push(key.clone());
                            parts.push((path, 5, value));
                        }
                    }
                }
            }
        }
    }
    for (prefix, base, value) in parts {
        if let Some(inner) = first_beyond(value, MAX_DEPTH.saturating_sub(base)) {
            let mut path = prefix;
            path.extend(inner);
            return Err(EventError::TooDeep {
                kind: event.kind.clone(),
                at: pointer(&path),
                limit: MAX_DEPTH,
            });
        }
    }
    Ok(())
}

/// The path (inside `value`) to the first container nested more than `limit` levels deep
/// (`value` itself, if a container, is level 1), or `None` when there is none.
pub(crate) fn first_beyond(value: &Value, limit: usize) -> Option<Vec<String>> {
    enum Frame<'a> {
        Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
        Object(serde_json::map::Iter<'a>),
    }
    fn frame(value: &Value) -> Option<Frame<'_>> {
        match value {
            Value::Array(items) => Some(Frame::Array(items.iter().enumerate())),
            Value::Object(map) => Some(Frame::Object(map.iter())),
            _ => None,
        }
    }
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut path: Vec<String> = Vec::new();
    stack.push(frame(value)?);
    if limit == 0 {
        return Some(path);
    }
    while let Some(top) = stack.last_mut() {
        let next = match top {
            Frame::Array(items) => items.next().map(|(i, v)| (i.to_string(), v)),
            Frame::Object(entries) => entries.next().map(|(k, v)| (k.clone(), v)),
        };
        match next {
            None => {
                stack.pop();
                path.pop();
            }
            Some((segment, child)) => {
                if let Some(child) = frame(child) {
                    path.push(segment);
                    if stack.len() + 1 > limit {
                        return Some(path);
                    }
                    stack.push(child);
                }
            }
        }
    }
    None
}

/// A JSON pointer, elided after [`SHOWN_SEGMENTS`] segments.
fn pointer(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path.iter().take(SHOWN_SEGMENTS) {
        out.push('/');
        out.push_str(&segment.replace('~', "~0").replace('/', "~1"));
    }
    if path.len() > SHOWN_SEGMENTS {
        out.push_str("/…");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..levels {
            value = Value::Array(vec![value]);
        }
        value
    }

    #[test]
    fn serde_json_reads_exactly_max_depth() {
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(serde_json::from_str::<Value>(&ok).is_ok());
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        let err = serde_json::from_str::<Value>(&deep).unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");
    }

    #[test]
    fn first_beyond_finds_the_first_point_past_the_limit() {
        assert_eq!(first_beyond(&json!(1), 0), None);
        assert_eq!(first_beyond(&nested(3), 3), None);
        assert_eq!(
            first_beyond(&nested(4), 3),
            Some(vec!["0".to_string(), "0".into(), "0".into()])
        );
        let mixed = json!({"a": [1, {"b": []}], "c": 2});
        assert_eq!(first_beyond(&mixed, 4), None);
        assert_eq!(
            first_beyond(&mixed, 3),
            Some(vec!["a".to_string(), "1".into(), "b".into()])
        );
        assert_eq!(
            first_beyond(&mixed, 2),
            Some(vec!["a".to_string(), "1".into()])
        );
        // A million levels: no recursion, and the walk stops at the limit.
        let mut deep = json!(0);
        for _ in 0..1_000_000 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(
            first_beyond(&deep, MAX_DEPTH).map(|p| p.len()),
            Some(MAX_DEPTH)
        );
        // Dropping it recursively would overflow the stack.
        let mut deep = deep;
        while let Value::Array(mut items) = deep {
            deep = items.pop().unwrap_or(Value::Null);
        }
    }

    /// The check's offsets agree with the line actually written: for a value at each place
    /// an event holds one, nested around the limit, the check accepts exactly the events
    /// whose line reads back.
    #[test]
    fn the_check_agrees_with_the_reader_at_every_place() {
        use crate::session::message::{Message, MessageData, Source};
        use crate::session::{NewEvent, SurfaceIntent};
        type Place = fn(Value) -> Event;
        let places: [(&str, Place); 6] = [
            ("log data", |v| {
                NewEvent::log("step/start", json!({"x": v})).into_event(0, 0)
            }),
            ("envelope field", |v| {
                let mut e = NewEvent::log("step/start", json!({})).into_event(0, 0);
                e.extra.insert("x".into(), v);
                e
            }),
            ("content block", |v| {
                let block = ContentBlock::Other(json!({"type": "tool_call", "arguments": v}));
                let data = MessageData::new(Message::new("assistant", vec![block]));
                NewEvent::message("assistant/message", data, SurfaceIntent::append())
                    .into_event(0, 0)
            }),
            ("text block field", |v| {
                let mut extra = serde_json::Map::new();
                extra.insert("x".into(), v);
                let block = ContentBlock::Text {
                    text: "t".into(),
                    extra,
                };
                let data = MessageData::new(Message::new("user", vec![block]));
                NewEvent::message("user/message", data, SurfaceIntent::append()).into_event(0, 0)
            }),
            ("message field", |v| {
                let mut message = Message::user_text("t");
                message.extra.insert("x".into(), v);
                let mut data = MessageData::new(message);
                data.extra.insert("y".into(), json!(1));
                NewEvent::message("user/message", data, SurfaceIntent::append()).into_event(0, 0)
            }),
            ("source field", |v| {
                let mut message = Message::system("t", "p");
                let mut source = Source::plugin("p");
                source.extra.insert("x".into(), v);
                message.source = Some(source);
                let data = MessageData::new(message);
                NewEvent::message("system/message", data, SurfaceIntent::append()).into_event(0, 0)
            }),
        ];
        for (place, make) in places {
            let mut accepted = 0;
            for levels in MAX_DEPTH - 8..=MAX_DEPTH + 2 {
                let event = make(nested(levels));
                let reads_back = Event::from_line(&event.to_line().unwrap()).is_ok();
                assert_eq!(
                    check(&event).is_ok(),
                    reads_back,
                    "{place}, {levels} levels"
                );
                accepted += usize::from(reads_back);
            }
            assert!((1..11).contains(&accepted), "{place}: {accepted}");
        }
    }

    /// Parameters at the limit fit in a `request/header` line; one more level does not.
    #[test]
    fn tool_parameters_at_their_limit_fit_in_a_header() {
        use crate::session::NewEvent;
        let header = |levels: usize| {
            let tools = json!([{"name": "t", "parameters": nested(levels)}]);
            NewEvent::log(
                "request/header",
                json!({"reason": "initial", "header": {"tools": tools}}),
            )
            .into_event(0, 0)
        };
        assert!(check(&header(MAX_TOOL_PARAMETERS_DEPTH)).is_ok());
        assert!(check(&header(MAX_TOOL_PARAMETERS_DEPTH + 1)).is_err());
        assert_eq!(
            too_deep(
                &nested(MAX_TOOL_PARAMETERS_DEPTH),
                MAX_TOOL_PARAMETERS_DEPTH
            ),
            None
        );
        assert!(too_deep(&nested(3), 2).is_some_and(|at| at == "/0/0"));
    }

    #[test]
    fn pointers_escape_and_elide() {
        let path: Vec<String> = ["a/b", "c~d"].iter().map(|s| s.to_string()).collect();
        assert_eq!(pointer(&path), "/a~1b/c~0d");
        let long: Vec<String> = (0..20).map(|i| i.to_string()).collect();
        assert_eq!(pointer(&long), "/0/1/2/3/4/5/6/7/8/9/10/11/…");
    }
}
