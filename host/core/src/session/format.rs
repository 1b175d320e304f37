//! The on-disk format and what opening does with each shape of file.
//!
//! A log is a header line, `{"prompt-host":"session-log","version":1}`, then one event per
//! line with `seq` contiguous from 0. Logs written before the header existed start straight
//! with the event at seq 0; they are read the same way and never rewritten (appends to them
//! stay headerless).
//!
//! Deciding is separate from doing: `replay` reads the bytes, refuses what is not a valid
//! log, and returns the events and the single repair the file needs, so that nothing is
//! written before the whole file has been judged.

use std::path::Path;

use serde_json::Value;

use super::error::OpenError;
use super::event::Event;
use super::surface::Surface;

/// The format version this build writes and reads.
pub const FORMAT_VERSION: u64 = 1;

/// The first line of a log this build creates (without its newline).
pub const HEADER: &str = r#"{"prompt-host":"session-log","version":1}"#;

/// The header line with its newline, as written.
const HEADER_LINE: &[u8] = b"{\"prompt-host\":\"session-log\",\"version\":1}\n";

/// The one change opening makes to the file, decided before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repair {
    /// The file is a complete log.
    None,
    /// The file is empty (or missing): a new log. Nothing is written at open; the header
    /// goes out with the first event.
    WriteHeader,
    /// The file holds a strict prefix of the header line (a crash while creating it):
    /// append the rest.
    CompleteHeader(&'static [u8]),
    /// The last line is complete but lacks its newline: append it. `event` tells a last
    /// event (kept, counted in the replay) from a header that is the only line.
    AddNewline { event: bool },
    /// The last line is a torn append: cut the file back to `keep` bytes.
    Cut { keep: usize },
}

/// A judged log: its events, its surface, and the repair it needs.
#[derive(Debug)]
pub(crate) struct Replay {
    pub(crate) events: Vec<Event>,
    pub(crate) surface: Surface,
    /// No header: a log of an earlier release.
    pub(crate) legacy: bool,
    pub(crate) repair: Repair,
}

/// What the first line of a non-empty file says it is.
enum FirstLine {
    /// `{"prompt-host":"session-log", …}`: the version, or why it is not one.
    Header(Result<u64, &'static str>),
    /// An object with a string `type` and an unsigned `seq`: an event of a headerless log.
    Event,
    /// Anything else.
    Foreign,
}

fn first_line(line: &[u8]) -> FirstLine {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(line) else {
        return FirstLine::Foreign;
    };
    match map.get("prompt-host") {
        Some(tag) if tag == "session-log" => FirstLine::Header(
            map.get("version")
                .and_then(Value::as_u64)
                .filter(|v| *v >= 1)
                .ok_or("\"version\" must be a positive integer"),
        ),
        Some(_) => FirstLine::Foreign,
        None if map.get("type").is_some_and(Value::is_string)
            && map.get("seq").is_some_and(Value::is_u64) =>
        {
            FirstLine::Event
        }
        None => FirstLine::Foreign,
    }
}

/// Whether `bytes` is one complete JSON value (a strict prefix of a line this crate writes
/// never is, so such a line is not a torn append).
fn is_complete_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// Judge the content of the log at `path`: replay every complete line, and decide the one
/// repair the file needs. Refusals leave the decision to write nothing.
///
/// - empty → a new log ([`Repair::WriteHeader`]);
/// - no newline and a strict prefix of the header line → [`Repair::CompleteHeader`];
/// - a first line that is neither a header nor an event → [`OpenError::NotALog`];
/// - a header of another version → [`OpenError::UnsupportedVersion`], a broken one →
///   [`OpenError::InvalidHeader`];
/// - a complete line that is not the valid next event → [`OpenError::Line`];
/// - an unterminated last line that is the valid next event → kept, [`Repair::AddNewline`];
///   that is complete JSON but not the valid next event → [`OpenError::Line`]; that is not
///   complete JSON (a write cut short) → [`Repair::Cut`].
pub(crate) fn replay(path: &Path, bytes: &[u8]) -> Result<Replay, OpenError> {
    let mut replay = Replay {
        events: Vec::new(),
        surface: Surface::default(),
        legacy: false,
        repair: Repair::None,
    };
    if bytes.is_empty() {
        replay.repair = Repair::WriteHeader;
        return Ok(replay);
    }
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if complete == 0 && HEADER_LINE.starts_with(bytes) {
        replay.repair = Repair::CompleteHeader(&HEADER_LINE[bytes.len()..]);
        return Ok(replay);
    }
    let (body, tail) = bytes.split_at(complete);
    let mut lines = body
        .split_inclusive(|&b| b == b'\n')
        .map(|line| &line[..line.len() - 1]);
    let mut line_no = 0;
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    match first_line(first) {
        FirstLine::Header(Ok(FORMAT_VERSION)) => {
            if complete == 0 {
                replay.repair = Repair::AddNewline { event: false };
                return Ok(replay);
            }
            lines.next();
            line_no = 1;
        }
        FirstLine::Header(Ok(version)) => {
            return Err(OpenError::UnsupportedVersion {
                path: path.to_path_buf(),
                version,
            })
        }
        FirstLine::Header(Err(reason)) => {
            return Err(OpenError::InvalidHeader {
                path: path.to_path_buf(),
                reason,
            })
        }
        FirstLine::Event => replay.legacy = true,
        FirstLine::Foreign => {
            return Err(OpenError::NotALog {
                path: path.to_path_buf(),
            })
        }
    }
    let line_error = |line: usize| {
        move |source| OpenError::Line {
            path: path.to_path_buf(),
            line,
            error: source,
        }
    };
    for line in lines {
        line_no += 1;
        let event = Event::from_line(line).map_err(line_error(line_no))?;
        let plan = replay
            .surface
            .plan(&event, &replay.events)
            .map_err(line_error(line_no))?;
        replay.surface.apply(plan);
        replay.events.push(event);
    }
    if !tail.is_empty() {
        line_no += 1;
        match Event::from_line(tail) {
            Ok(event) => {
                let plan = replay
                    .surface
                    .plan(&event, &replay.events)
                    .map_err(line_error(line_no))?;
                replay.surface.apply(plan);
                replay.events.push(event);
                replay.repair = Repair::AddNewline { event: true };
            }
            Err(e) if is_complete_json(tail) => return Err(line_error(line_no)(e)),
            Err(_) => replay.repair = Repair::Cut { keep: complete },
        }
    }
    Ok(replay)
}

/// The header line (with its newline) that a new log starts with.
pub(crate) fn header_line() -> &'static [u8] {
    HEADER_LINE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_constants_agree() {
        assert_eq!(HEADER_LINE, format!("{HEADER}\n").as_bytes());
        let value: Value = serde_json::from_str(HEADER).unwrap();
        assert_eq!(value["version"], FORMAT_VERSION);
        assert!(matches!(
            first_line(HEADER.as_bytes()),
            FirstLine::Header(Ok(FORMAT_VERSION))
        ));
    }
}
