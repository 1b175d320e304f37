//! The surface: the ordered seqs of the events that currently produce model messages, and the
//! rules an event must satisfy to change it.
//!
//! Validation is split from mutation (`plan` then `apply`) so a refused event leaves the
//! surface untouched, and so the same rules serve appends and replay.

mod nodes;

use std::collections::HashSet;

use serde_json::Value;

use nodes::Nodes;

use super::error::EventError;
use super::event::{
    is_known_type, is_surface_type, Event, EventData, ASSISTANT_MESSAGE, REQUEST_HEADER,
    SYSTEM_MESSAGE, TOOL_RESULT, USER_MESSAGE,
};
use super::message::MessageData;
use super::op::SurfaceOp;

/// The model-visible view of the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Surface {
    nodes: Nodes,
    replace_generation: u64,
}

/// A validated transition, not yet applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// A log-only event: the surface does not change.
    None,
    /// Push `seq`.
    Append(u64),
    /// Replace nodes `start..=end` (indices) by `seq`.
    Replace { seq: u64, start: usize, end: usize },
}

impl Surface {
    /// The seqs on the surface, in model-visible order (a fresh list).
    pub fn nodes(&self) -> Vec<u64> {
        self.nodes.iter().collect()
    }

    /// The seqs on the surface, in model-visible order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.nodes.iter()
    }

    /// How many nodes the surface has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the surface has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 0
    }

    /// Monotonic count of committed replacements.
    pub fn replace_generation(&self) -> u64 {
        self.replace_generation
    }

    /// The surface index of `seq`, if it is on the surface.
    pub fn index_of(&self, seq: u64) -> Option<usize> {
        self.nodes.index_of(seq)
    }

    /// Whether `seq` is on the surface.
    pub fn contains(&self, seq: u64) -> bool {
        self.index_of(seq).is_some()
    }

    /// Check `event` as the next event of `events` (the whole log so far) and say how it
    /// would change the surface.
    pub(crate) fn plan(&self, event: &Event, events: &[Event]) -> Result<Plan, EventError> {
        let expected = events.len() as u64;
        if event.seq != expected {
            return Err(EventError::NotContiguous {
                seq: event.seq,
                expected,
            });
        }
        let op = check_local(event)?;
        let Some(op) = op else {
            return Ok(Plan::None);
        };
        let SurfaceOp::Replace { start_seq, end_seq } = op else {
            return Ok(Plan::Append(event.seq));
        };
        let start = self
            .index_of(start_seq)
            .ok_or(EventError::StartNotFound { seq: start_seq })?;
        let end = self
            .index_of(end_seq)
            .ok_or(EventError::EndNotFound { seq: end_seq })?;
        if start > end {
            return Err(EventError::StartAfterEnd {
                start: start_seq,
                start_index: start,
                end: end_seq,
                end_index: end,
            });
        }
        let shadowed: Vec<u64> = (start..=end).filter_map(|i| self.nodes.get(i)).collect();
        check_provenance(event, &shadowed)?;
        check_tool_result_rewrite(event, &shadowed, events)?;
        self.check_system_head(event, start, &shadowed, events)?;
        Ok(Plan::Replace {
            seq: event.seq,
            start,
            end,
        })
    }

    /// Apply a plan made against this very surface.
    pub(crate) fn apply(&mut self, plan: Plan) {
        match plan {
            Plan::None => {}
            Plan::Append(seq) => self.nodes.push(seq),
            Plan::Replace { seq, start, end } => {
                self.nodes.replace(start, end, seq);
                self.replace_generation += 1;
            }
        }
    }

    /// Node 0 holding a system prompt may be rewritten only by a system message over exactly
    /// that node; later system nodes are not protected (compaction may shadow them).
    fn check_system_head(
        &self,
        event: &Event,
        start: usize,
        shadowed: &[u64],
        events: &[Event],
    ) -> Result<(), EventError> {
        if start != 0 {
            return Ok(());
        }
        let head_is_system = self
            .nodes
            .get(0)
            .and_then(|seq| events.get(seq as usize))
            .is_some_and(|head| head.kind == SYSTEM_MESSAGE);
        if head_is_system && (event.kind != SYSTEM_MESSAGE || shadowed.len() != 1) {
            return Err(EventError::SystemHead);
        }
        Ok(())
    }
}

/// The rules that need only the event itself; returns its surface op, if any.
fn check_local(event: &Event) -> Result<Option<SurfaceOp>, EventError> {
    let kind = &event.kind;
    if !is_known_type(kind) && !event.ignorable {
        return Err(EventError::UnknownType { kind: kind.clone() });
    }
    if !is_surface_type(kind) {
        if event.surface_op.is_some() {
            return Err(EventError::NotSurfaceEligible {
                kind: kind.clone(),
                field: "surfaceOp",
            });
        }
        if event.source_event_seqs.is_some() {
            return Err(EventError::NotSurfaceEligible {
                kind: kind.clone(),
                field: "sourceEventSeqs",
            });
        }
        if kind == REQUEST_HEADER {
            check_request_header(event)?;
        }
        return Ok(None);
    }
    let op = event
        .surface_op
        .ok_or_else(|| EventError::SurfaceOpRequired { kind: kind.clone() })?;
    check_message_data(event)?;
    if let SurfaceOp::Replace { start_seq, end_seq } = op {
        if start_seq >= event.seq || end_seq >= event.seq {
            return Err(EventError::ReplaceNotEarlier { seq: event.seq });
        }
    }
    check_provenance(event, &[])?;
    Ok(Some(op))
}

/// A surface event carries a message whose role matches its type.
fn check_message_data(event: &Event) -> Result<(), EventError> {
    let invalid = |reason: String| EventError::InvalidData {
        kind: event.kind.clone(),
        reason,
    };
    let EventData::Message(data) = &event.data else {
        return Err(invalid("a surface event must carry {message}".into()));
    };
    let expected = match event.kind.as_str() {
        SYSTEM_MESSAGE => Some("system"),
        USER_MESSAGE => Some("user"),
        ASSISTANT_MESSAGE => Some("assistant"),
        _ => None,
    };
    match expected {
        Some(role) if data.message.role != role => Err(invalid(format!(
            "message role must be \"{role}\", not \"{}\"",
            data.message.role
        ))),
        _ => Ok(()),
    }
}

/// The header lives in `data.header`; the system prompt never travels in it.
fn check_request_header(event: &Event) -> Result<(), EventError> {
    let invalid = |reason: &str| EventError::InvalidData {
        kind: event.kind.clone(),
        reason: reason.to_string(),
    };
    let EventData::Other(Value::Object(data)) = &event.data else {
        return Err(invalid("data must be an object"));
    };
    let Some(Value::Object(header)) = data.get("header") else {
        return Err(invalid("header must be an object"));
    };
    if header.contains_key("system") {
        return Err(invalid("must omit header.system; use system/message"));
    }
    if header
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        return Err(invalid("must omit empty tools"));
    }
    Ok(())
}

/// Source rules; with `shadowed` non-empty, also that every shadowed node is cited.
fn check_provenance(event: &Event, shadowed: &[u64]) -> Result<(), EventError> {
    let sources = event.source_event_seqs.as_deref();
    if event.kind == ASSISTANT_MESSAGE && sources.is_some() {
        return Err(EventError::AssistantSources);
    }
    let sources = sources.unwrap_or(&[]);
    // A set, so that citing k sources over a range of k nodes is linear, not k².
    let unique: HashSet<u64> = sources.iter().copied().collect();
    if event.source_event_seqs.is_some() {
        if sources.is_empty() {
            return Err(EventError::SourcesEmpty);
        }
        if unique.len() != sources.len() {
            return Err(EventError::SourcesDuplicate);
        }
        if let Some(&bad) = sources.iter().find(|&&s| s >= event.seq) {
            return Err(EventError::SourceNotEarlier {
                source_seq: bad,
                seq: event.seq,
            });
        }
    }
    let missing: Vec<u64> = shadowed
        .iter()
        .copied()
        .filter(|seq| !unique.contains(seq))
        .collect();
    if !missing.is_empty() {
        return Err(EventError::MissingShadowed { missing });
    }
    Ok(())
}

/// A tool-result replacement rewrites exactly one current tool result and may change only
/// the result content (`content[0].content`); everything else, ids included, must match.
fn check_tool_result_rewrite(
    event: &Event,
    shadowed: &[u64],
    events: &[Event],
) -> Result<(), EventError> {
    if event.kind != TOOL_RESULT {
        return Ok(());
    }
    let [original] = shadowed else {
        return Err(EventError::ToolResultCount);
    };
    let original = events
        .get(*original as usize)
        .filter(|e| e.kind == TOOL_RESULT)
        .and_then(Event::message_data)
        .ok_or(EventError::ToolResultTarget)?;
    let replacement = event
        .message_data()
        .ok_or(EventError::ToolResultContentOnly)?;
    if without_result_content(original) != without_result_content(replacement) {
        return Err(EventError::ToolResultContentOnly);
    }
    Ok(())
}

/// The data with `message.content` reduced to its first block, whose `content` is nulled.
fn without_result_content(data: &MessageData) -> Value {
    let mut value = serde_json::to_value(data).unwrap_or(Value::Null);
    if let Some(content) = value.pointer_mut("/message/content") {
        let mut first = content
            .as_array()
            .and_then(|blocks| blocks.first())
            .cloned()
            .unwrap_or(Value::Null);
        if let Value::Object(block) = &mut first {
            block.insert("content".into(), Value::Null);
        }
        *content = Value::Array(vec![first]);
    }
    value
}
