//! Compaction: a range of the surface replaced by a summary, the log keeping what it replaced.
//!
//! Written as three events, in one durable write: `compaction/start` (the range and every
//! node it replaces), the summary — a `user/message` whose `surfaceOp` replaces the range and
//! whose `sourceEventSeqs` cite every replaced node — and `compaction/end`. The surface then
//! holds the summary where the range was; the requests of earlier steps, rebuilt from the log
//! (`replay`), are unchanged, because each is derived from the surface as its step left it.
//!
//! A range is refused, with nothing written, when it could not be sent: when it is not on
//! the surface, is reversed, starts at the system prompt (node 0, which only the system
//! prompt's projection rewrites), holds system prompt nodes only, separates a tool call from
//! its result, or covers a call of the current turn that has no result yet. The projections
//! need nothing from the compaction: the next step sees a replaced system node or
//! runtime-context snapshot as SPEC §6 says (re-anchored, re-emitted or cleared).

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{json, Value};
use thiserror::Error;

use super::conversation::{open_calls, tool_calls};
use super::event::{ASSISTANT_MESSAGE, SYSTEM_MESSAGE, TOOL_RESULT, USER_MESSAGE};
use super::message::{ContentBlock, Message, MessageData, Source};
use super::{NewEvent, Session, SurfaceIntent};

/// `compaction/start`: a compaction begins; its data names the range and the replaced nodes.
pub const COMPACTION_START: &str = "compaction/start";
/// `compaction/end`: a compaction ended; its data names the summary's seq.
pub const COMPACTION_END: &str = "compaction/end";
/// The `kind` of a summary message's source.
pub const COMPACTION_SOURCE: &str = "compaction";
/// The largest summary, in bytes of UTF-8. A summary stands for what it replaces in every
/// later request: one larger than a mebibyte is a mistake, not a summary.
pub const MAX_SUMMARY_BYTES: usize = 1 << 20;

/// What to compact: the surface nodes from `start_seq` to `end_seq` (inclusive, in surface
/// order), replaced by `summary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionRange {
    /// The first node replaced (an event seq on the surface).
    pub start_seq: u64,
    /// The last node replaced (an event seq on the surface, not before `start_seq`).
    pub end_seq: u64,
}

impl CompactionRange {
    /// The oldest range that keeps the newest `keep_turns` turns whole
    /// ([`oldest_compactable`]); refused when there is none.
    pub fn keeping(session: &Session, keep_turns: usize) -> Result<Self, CompactionError> {
        oldest_compactable(session, keep_turns)
            .ok_or(CompactionError::NothingToCompact { keep_turns })
    }
}

/// Why a compaction was refused. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CompactionError {
    /// A seq of the range is past the end of the log.
    #[error("seq {seq} is beyond the log, which has {events} events (seqs 0 to {last})", last = events.saturating_sub(1))]
    BeyondLog {
        /// The seq asked for.
        seq: u64,
        /// How many events the log has.
        events: u64,
    },
    /// A seq of the range is an event that is not (or no longer) on the surface.
    #[error(
        "seq {seq} is not on the surface (its event is {kind}{why}); the surface holds {surface}"
    )]
    NotOnSurface {
        /// The seq asked for.
        seq: u64,
        /// Its event type.
        kind: String,
        /// Why, when it was replaced.
        why: String,
        /// The surface's seqs, shortened.
        surface: String,
    },
    /// The range ends before it starts.
    #[error("the range is reversed: seq {start} comes after seq {end} on the surface")]
    Reversed {
        /// The start asked for.
        start: u64,
        /// The end asked for.
        end: u64,
    },
    /// The range starts at node 0, the system prompt.
    #[error("the range starts at seq {seq}, the system prompt (node 0), which only the system prompt's projection rewrites; start at the next node")]
    SystemHead {
        /// Node 0's seq.
        seq: u64,
    },
    /// Every node of the range is a system prompt node.
    #[error("the range holds system prompt nodes only (seqs {seqs}): there is no conversation to compact")]
    SystemOnly {
        /// The range's seqs.
        seqs: String,
    },
    /// A tool call and its result would be separated.
    #[error("the range would separate tool call {call_id} (seq {call_seq}) from its result (seq {result_seq}); end the range {hint}")]
    SplitsToolCall {
        /// The call's id.
        call_id: String,
        /// The assistant message making the call.
        call_seq: u64,
        /// The tool result answering it.
        result_seq: u64,
        /// Where the range could end instead.
        hint: String,
    },
    /// The range covers a call of the current turn that has no result yet.
    #[error("the range covers tool call {call_id} (seq {call_seq}) of the current turn, which has no result yet; end the range before seq {call_seq}")]
    OpenCall {
        /// The call's id.
        call_id: String,
        /// The assistant message making the call.
        call_seq: u64,
    },
    /// `keep_turns` keeps every turn there is: no range before them can be compacted.
    #[error("nothing to compact: the session has no turns before its newest {keep_turns}")]
    NothingToCompact {
        /// The turns asked to be kept.
        keep_turns: usize,
    },
    /// The summary is empty (or whitespace).
    #[error("the summary is empty: a compaction replaces the range with the summary's text")]
    EmptySummary,
    /// The summary is too large.
    #[error("the summary is {bytes} bytes; a compaction summary may be at most {MAX_SUMMARY_BYTES} bytes (1 MiB)")]
    SummaryTooLarge {
        /// Its size.
        bytes: usize,
    },
}

/// A compaction, checked and ready to append.
#[derive(Debug, Clone)]
pub struct PlannedCompaction {
    /// The surface nodes replaced, in surface order.
    pub replaced: Vec<u64>,
    /// The events to append, in order (`compaction/start`, the summary, `compaction/end`).
    pub events: Vec<NewEvent>,
}

/// What a compaction wrote, and what it left of the request's cached prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Compacted {
    /// The seq of `compaction/start`.
    pub start_event: u64,
    /// The seq of the summary message, which now stands where the range was.
    pub summary_seq: u64,
    /// The seq of `compaction/end`.
    pub end_event: u64,
    /// The surface nodes replaced, in surface order.
    pub replaced: Vec<u64>,
    /// How many of the request's messages before the range are sent as they were: a
    /// provider's prompt cache holds at most the tools, the system prompt and these. The
    /// range's first node is where the cached prefix ends; a range that starts later keeps
    /// more of it.
    pub prefix_messages_kept: u64,
}

/// Check `range` and `summary` against `session` and form the events that compact it.
pub fn plan_compaction(
    session: &Session,
    range: &CompactionRange,
    summary: &str,
) -> Result<PlannedCompaction, CompactionError> {
    if summary.len() > MAX_SUMMARY_BYTES {
        return Err(CompactionError::SummaryTooLarge {
            bytes: summary.len(),
        });
    }
    if summary.trim().is_empty() {
        return Err(CompactionError::EmptySummary);
    }
    let surface = session.surface();
    let start = index_on_surface(session, range.start_seq)?;
    let end = index_on_surface(session, range.end_seq)?;
    if end < start {
        return Err(CompactionError::Reversed {
            start: range.start_seq,
            end: range.end_seq,
        });
    }
    let nodes = surface.nodes();
    let replaced = nodes[start..=end].to_vec();
    let kind_of = |seq: u64| session.event(seq).map_or("", |e| e.kind.as_str());
    if start == 0 && kind_of(nodes[0]) == SYSTEM_MESSAGE {
        return Err(CompactionError::SystemHead { seq: nodes[0] });
    }
    if replaced.iter().all(|seq| kind_of(*seq) == SYSTEM_MESSAGE) {
        return Err(CompactionError::SystemOnly {
            seqs: shortened(&replaced),
        });
    }
    check_tool_pairs(session, &nodes, start, end)?;

    let mut message = Message::new("user", vec![ContentBlock::text(summary)]);
    message.source = Some(Source {
        kind: COMPACTION_SOURCE.to_string(),
        plugin: None,
        form: None,
        sections: None,
        extra: Default::default(),
    });
    let first = session.events().len() as u64;
    let events = vec![
        NewEvent::log(
            COMPACTION_START,
            json!({
                "startSeq": range.start_seq,
                "endSeq": range.end_seq,
                "replaced": replaced,
                "summaryBytes": summary.len(),
            }),
        ),
        NewEvent::message(
            USER_MESSAGE,
            MessageData::new(message),
            SurfaceIntent::replace(range.start_seq, range.end_seq, replaced.clone()),
        ),
        NewEvent::log(
            COMPACTION_END,
            json!({"startEvent": first, "summarySeq": first + 1}),
        ),
    ];
    Ok(PlannedCompaction { replaced, events })
}

/// Append a planned compaction (one durable write) and say what it wrote.
pub fn compact(
    session: &mut Session,
    range: &CompactionRange,
    summary: &str,
) -> Result<Compacted, CompactionOrAppend> {
    let planned = plan_compaction(session, range, summary)?;
    let kept = prefix_messages_before(session, range.start_seq);
    let seqs = session
        .append_all(planned.events)
        .map_err(CompactionOrAppend::Append)?;
    Ok(Compacted {
        start_event: seqs.start,
        summary_seq: seqs.start + 1,
        end_event: seqs.start + 2,
        replaced: planned.replaced,
        prefix_messages_kept: kept,
    })
}

/// A compaction refused, or its write failed.
#[derive(Debug, Error)]
pub enum CompactionOrAppend {
    /// The range or the summary was refused.
    #[error(transparent)]
    Refused(#[from] CompactionError),
    /// The log refused or failed the write.
    #[error(transparent)]
    Append(super::AppendError),
}

/// The oldest range a compaction could replace while keeping the newest `keep_turns` turns
/// (a turn starts at a user's input): from the first node after the system prompt to the
/// node before the kept turns, or `None` when there is nothing older to compact. Its end
/// never separates a call from its result, as a turn's calls are answered within it.
pub fn oldest_compactable(session: &Session, keep_turns: usize) -> Option<CompactionRange> {
    let nodes = session.surface().nodes();
    let kind_of = |seq: u64| session.event(seq).map_or("", |e| e.kind.as_str());
    let first = usize::from(nodes.first().is_some_and(|s| kind_of(*s) == SYSTEM_MESSAGE));
    let turn_starts: Vec<usize> = nodes
        .iter()
        .enumerate()
        .skip(first)
        .filter(|(_, seq)| is_user_input(session, **seq))
        .map(|(i, _)| i)
        .collect();
    let keep_from = if keep_turns == 0 {
        nodes.len()
    } else {
        *turn_starts.get(turn_starts.len().checked_sub(keep_turns)?)?
    };
    let mut end = keep_from.checked_sub(1)?;
    // Not ending on a system node, and holding something besides them.
    while end >= first && kind_of(nodes[end]) == SYSTEM_MESSAGE {
        end = end.checked_sub(1)?;
    }
    if end < first {
        return None;
    }
    let range = CompactionRange {
        start_seq: nodes[first],
        end_seq: nodes[end],
    };
    check_tool_pairs(session, &nodes, first, end).ok()?;
    Some(range)
}

/// Whether `seq` is a user's own input (not a plugin's snapshot or a summary).
fn is_user_input(session: &Session, seq: u64) -> bool {
    session
        .event(seq)
        .is_some_and(|e| e.kind == USER_MESSAGE && e.message().is_some_and(|m| m.source.is_none()))
}

/// The index of `seq` on the surface, or why it has none.
fn index_on_surface(session: &Session, seq: u64) -> Result<usize, CompactionError> {
    let events = session.events().len() as u64;
    let Some(event) = session.event(seq) else {
        return Err(CompactionError::BeyondLog { seq, events });
    };
    if let Some(index) = session.surface().index_of(seq) {
        return Ok(index);
    }
    let why = session
        .events()
        .iter()
        .skip(seq as usize + 1)
        .find(|e| e.is_replacement() && cites(e, seq))
        .map(|e| format!(", replaced by seq {}", e.seq))
        .unwrap_or_default();
    Err(CompactionError::NotOnSurface {
        seq,
        kind: event.kind.clone(),
        why,
        surface: shortened(&session.surface().nodes()),
    })
}

/// Whether a replacement event cites `seq` among its sources.
fn cites(event: &super::Event, seq: u64) -> bool {
    event
        .source_event_seqs
        .as_ref()
        .is_some_and(|sources| sources.contains(&seq))
}

/// Refuse a range (surface indexes `start..=end`) that separates a tool call from its
/// result, or covers a call of the current turn with no result yet.
fn check_tool_pairs(
    session: &Session,
    nodes: &[u64],
    start: usize,
    end: usize,
) -> Result<(), CompactionError> {
    let open: HashSet<String> = open_calls(session).into_iter().collect();
    let inside: HashSet<u64> = nodes[start..=end].iter().copied().collect();
    // Each call on the surface, and the surface node answering it.
    let mut calls: Vec<(String, u64)> = Vec::new();
    let mut answers: std::collections::HashMap<String, u64> = Default::default();
    for &seq in nodes {
        let Some(event) = session.event(seq) else {
            continue;
        };
        let Some(message) = event.message() else {
            continue;
        };
        if event.kind == ASSISTANT_MESSAGE {
            calls.extend(tool_calls(message).map(|call| (call.id, seq)));
        } else if event.kind == TOOL_RESULT {
            if let Some(id) = message.extra.get("toolCallId").and_then(Value::as_str) {
                answers.insert(id.to_string(), seq);
            }
        }
    }
    for (id, call_seq) in calls {
        let call_in = inside.contains(&call_seq);
        if call_in && open.contains(&id) {
            return Err(CompactionError::OpenCall {
                call_id: id,
                call_seq,
            });
        }
        let Some(&result_seq) = answers.get(&id) else {
            continue;
        };
        if call_in != inside.contains(&result_seq) {
            let hint = if call_in {
                format!("at seq {result_seq} or later")
            } else {
                format!("before seq {call_seq}, or start it at seq {call_seq} or earlier")
            };
            return Err(CompactionError::SplitsToolCall {
                call_id: id,
                call_seq,
                result_seq,
                hint,
            });
        }
    }
    Ok(())
}

/// How many wire messages the surface yields before `seq`.
fn prefix_messages_before(session: &Session, seq: u64) -> u64 {
    let nodes = session.surface().nodes();
    let before = nodes.iter().take_while(|s| **s != seq);
    before
        .filter(|s| {
            session
                .event(**s)
                .and_then(|e| e.message())
                .is_some_and(|m| !m.content.is_empty())
        })
        .count() as u64
}

/// Seqs shown in an error: all of them up to 12, else the first and last few.
fn shortened(seqs: &[u64]) -> String {
    let shown = |part: &[u64]| {
        part.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if seqs.len() <= 12 {
        format!("[{}]", shown(seqs))
    } else {
        format!(
            "[{}, … {} more …, {}]",
            shown(&seqs[..6]),
            seqs.len() - 9,
            shown(&seqs[seqs.len() - 3..])
        )
    }
}
