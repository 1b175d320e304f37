//! The event envelope `{type, seq, time, data, ignorable?, surfaceOp?, sourceEventSeqs?}` and
//! its JSON-lines form.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

mod decode;

use decode::{RawData, RawEnvelope};

use super::error::EventError;
use super::message::{Message, MessageData};
use super::op::{SurfaceIntent, SurfaceOp, MAX_SAFE_SEQ};

/// `system/message`: a system-prompt node.
pub const SYSTEM_MESSAGE: &str = "system/message";
/// `user/message`: user input, runtime-context snapshots, compaction summaries.
pub const USER_MESSAGE: &str = "user/message";
/// `assistant/message`: a model reply.
pub const ASSISTANT_MESSAGE: &str = "assistant/message";
/// `tool/result`: the result of one tool call.
pub const TOOL_RESULT: &str = "tool/result";
/// `request/header`: the canonical request header (tools), logged when it changes.
pub const REQUEST_HEADER: &str = "request/header";
/// `request/context`: provider, model and route facts, logged when they change.
pub const REQUEST_CONTEXT: &str = "request/context";
/// `step/start`: a loop step begins.
pub const STEP_START: &str = "step/start";
/// `step/end`: a loop step ends.
pub const STEP_END: &str = "step/end";

/// The event types that produce model messages; they require a `surfaceOp`.
pub const SURFACE_TYPES: [&str; 4] = [SYSTEM_MESSAGE, USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT];

/// The vocabulary this build understands. A type outside it is refused unless the event is
/// marked `ignorable`, because silently skipping a required event would rebuild a wrong session.
pub const KNOWN_TYPES: &[&str] = &[
    ASSISTANT_MESSAGE,
    "assistant/attempt",
    "compaction/end",
    "compaction/start",
    "compaction/summary",
    "llm/retry",
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    STEP_END,
    STEP_START,
    SYSTEM_MESSAGE,
    "tool/call",
    TOOL_RESULT,
    "turn/end",
    "turn/start",
    USER_MESSAGE,
];

/// Whether `kind` joins the surface.
pub fn is_surface_type(kind: &str) -> bool {
    SURFACE_TYPES.contains(&kind)
}

/// Whether `kind` belongs to the known vocabulary.
pub fn is_known_type(kind: &str) -> bool {
    KNOWN_TYPES.contains(&kind)
}

/// The payload: typed for the four message types, raw JSON for everything else.
#[derive(Debug, Clone, PartialEq)]
pub enum EventData {
    /// The data of a surface event.
    Message(Box<MessageData>),
    /// Any other payload, verbatim.
    Other(Value),
}

impl Serialize for EventData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Message(data) => data.serialize(serializer),
            Self::Other(value) => value.serialize(serializer),
        }
    }
}

/// One committed event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The event type (`type` on the wire).
    pub kind: String,
    /// Position in the log, contiguous from 0.
    pub seq: u64,
    /// Epoch milliseconds at append time.
    pub time: u64,
    /// The payload.
    pub data: EventData,
    /// Whether a reader that does not know the type may skip it.
    pub ignorable: bool,
    /// How the event entered the surface (surface types only).
    pub surface_op: Option<SurfaceOp>,
    /// Provenance of a surface event.
    pub source_event_seqs: Option<Vec<u64>>,
    /// Envelope fields this build does not interpret (including the surface metadata of an
    /// unknown ignorable event), written back verbatim.
    pub extra: Map<String, Value>,
}

impl Event {
    /// The message of a surface event.
    pub fn message(&self) -> Option<&Message> {
        match &self.data {
            EventData::Message(data) => Some(&data.message),
            EventData::Other(_) => None,
        }
    }

    /// The typed data of a surface event.
    pub fn message_data(&self) -> Option<&MessageData> {
        match &self.data {
            EventData::Message(data) => Some(data),
            EventData::Other(_) => None,
        }
    }

    /// Whether this event replaced a surface range.
    pub fn is_replacement(&self) -> bool {
        self.surface_op.is_some_and(|op| op.is_replace())
    }

    /// The JSON line for this event, without the trailing newline.
    pub fn to_line(&self) -> Result<Vec<u8>, EventError> {
        serde_json::to_vec(self).map_err(|e| EventError::Malformed {
            reason: e.to_string(),
        })
    }

    /// Parse one JSON line. Shape errors are reported here; rules that depend on the log and
    /// the surface are checked by the session.
    pub fn from_line(line: &[u8]) -> Result<Self, EventError> {
        let malformed = |reason: String| EventError::Malformed { reason };
        let mut envelope: RawEnvelope =
            serde_json::from_slice(line).map_err(|e| malformed(e.to_string()))?;
        let kind = match envelope.take("type") {
            Some(Value::String(kind)) => kind,
            _ => return Err(malformed("\"type\" must be a string".into())),
        };
        let seq = take_u64(envelope.take("seq"), "seq")?;
        let time = take_u64(envelope.take("time"), "time")?;
        let data = envelope
            .data
            .take()
            .ok_or_else(|| malformed("\"data\" is missing".into()))?;
        let ignorable = match envelope.take("ignorable") {
            None => false,
            Some(Value::Bool(b)) => b,
            Some(_) => return Err(malformed("\"ignorable\" must be a boolean".into())),
        };
        // An unknown ignorable event keeps its metadata opaque: it never touches the surface.
        let opaque = ignorable && !is_known_type(&kind);
        let mut extra = Map::new();
        let (surface_op, source_event_seqs) = if opaque {
            for key in ["surfaceOp", "sourceEventSeqs"] {
                if let Some(value) = envelope.take(key) {
                    extra.insert(key.to_string(), value);
                }
            }
            (None, None)
        } else {
            let op = match envelope.take("surfaceOp") {
                None => None,
                Some(v) => Some(SurfaceOp::from_value(&v).map_err(|replace_shape| {
                    if replace_shape {
                        EventError::InvalidReplaceOp { kind: kind.clone() }
                    } else {
                        EventError::InvalidSurfaceOp { kind: kind.clone() }
                    }
                })?),
            };
            let sources = match envelope.take("sourceEventSeqs") {
                None => None,
                Some(Value::Array(items)) => Some(
                    items
                        .iter()
                        .map(|v| v.as_u64().filter(|n| *n <= MAX_SAFE_SEQ))
                        .collect::<Option<Vec<u64>>>()
                        .ok_or_else(|| EventError::SourcesNotSeqs { kind: kind.clone() })?,
                ),
                Some(_) => return Err(EventError::SourcesNotArray { seq }),
            };
            (op, sources)
        };
        extra.extend(std::mem::take(&mut envelope.fields));
        let data = match data {
            RawData::Typed(typed) => EventData::Message(typed),
            RawData::Raw(value) if is_surface_type(&kind) => {
                let typed =
                    MessageData::from_value(value).map_err(|reason| EventError::InvalidData {
                        kind: kind.clone(),
                        reason,
                    })?;
                EventData::Message(Box::new(typed))
            }
            RawData::Raw(value) => EventData::Other(value),
        };
        Ok(Self {
            kind,
            seq,
            time,
            data,
            ignorable,
            surface_op,
            source_event_seqs,
            extra,
        })
    }
}

fn take_u64(value: Option<Value>, key: &str) -> Result<u64, EventError> {
    value
        .and_then(|v| v.as_u64())
        .filter(|n| *n <= MAX_SAFE_SEQ)
        .ok_or_else(|| EventError::Malformed {
            reason: format!("\"{key}\" must be a non-negative safe integer"),
        })
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", &self.kind)?;
        map.serialize_entry("seq", &self.seq)?;
        map.serialize_entry("time", &self.time)?;
        map.serialize_entry("data", &self.data)?;
        if self.ignorable {
            map.serialize_entry("ignorable", &true)?;
        }
        if let Some(op) = &self.surface_op {
            map.serialize_entry("surfaceOp", op)?;
        }
        if let Some(sources) = &self.source_event_seqs {
            map.serialize_entry("sourceEventSeqs", sources)?;
        }
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A candidate event: everything but the seq and time, which the session assigns.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The event type.
    pub kind: String,
    /// The payload.
    pub data: EventData,
    /// The `ignorable` marker.
    pub ignorable: bool,
    /// The surface operation (surface types only).
    pub surface_op: Option<SurfaceOp>,
    /// Provenance (surface types only).
    pub source_event_seqs: Option<Vec<u64>>,
}

impl NewEvent {
    /// A surface event of type `kind` carrying `data`, entering the surface by `intent`.
    pub fn message(kind: &str, data: MessageData, intent: SurfaceIntent) -> Self {
        Self {
            kind: kind.to_string(),
            data: EventData::Message(Box::new(data)),
            ignorable: false,
            surface_op: Some(intent.surface_op),
            source_event_seqs: intent.source_event_seqs,
        }
    }

    /// A log-only event of type `kind`.
    pub fn log(kind: &str, data: Value) -> Self {
        Self {
            kind: kind.to_string(),
            data: EventData::Other(data),
            ignorable: false,
            surface_op: None,
            source_event_seqs: None,
        }
    }

    /// The same event marked `ignorable`.
    pub fn ignorable(mut self) -> Self {
        self.ignorable = true;
        self
    }

    /// The committed form at `seq`, `time`.
    pub(crate) fn into_event(self, seq: u64, time: u64) -> Event {
        let mut extra = Map::new();
        let (mut surface_op, mut source_event_seqs) = (self.surface_op, self.source_event_seqs);
        // Same rule as reading: an unknown ignorable event's metadata is opaque.
        if self.ignorable && !is_known_type(&self.kind) {
            if let Some(op) = surface_op.take() {
                extra.insert(
                    "surfaceOp".into(),
                    serde_json::to_value(op).unwrap_or(Value::Null),
                );
            }
            if let Some(sources) = source_event_seqs.take() {
                extra.insert("sourceEventSeqs".into(), Value::from(sources));
            }
        }
        Event {
            kind: self.kind,
            seq,
            time,
            data: self.data,
            ignorable: self.ignorable,
            surface_op,
            source_event_seqs,
            extra,
        }
    }
}
