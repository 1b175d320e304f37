//! Surface operations: how a surface-eligible event enters the model-visible surface.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

/// The largest integer JSON readers agree on (2^53 - 1); seqs beyond it are refused so a log
/// stays readable by every consumer.
pub const MAX_SAFE_SEQ: u64 = (1 << 53) - 1;

/// `"append"` or `{op:"replace", startSeq, endSeq}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurfaceOp {
    /// Push the event's seq onto the surface.
    Append,
    /// Replace the inclusive surface range `start_seq..=end_seq` by the event's seq.
    Replace {
        /// First replaced node (a seq, not an index).
        start_seq: u64,
        /// Last replaced node (a seq, not an index).
        end_seq: u64,
    },
}

impl SurfaceOp {
    /// A replacement of exactly the node `seq`.
    pub fn replace_one(seq: u64) -> Self {
        Self::Replace {
            start_seq: seq,
            end_seq: seq,
        }
    }

    /// Whether this is a replacement.
    pub fn is_replace(&self) -> bool {
        matches!(self, Self::Replace { .. })
    }

    /// Parse the JSON form. `Err(true)` means "an object that is not the exact replace shape"
    /// and `Err(false)` any other invalid value, so callers can word the two cases as the
    /// session does.
    pub fn from_value(value: &Value) -> Result<Self, bool> {
        match value {
            Value::String(s) if s == "append" => Ok(Self::Append),
            Value::Object(map) => {
                // Exactly three keys: an extra key would be silently dropped otherwise.
                let seq = |key: &str| {
                    map.get(key)
                        .and_then(Value::as_u64)
                        .filter(|n| *n <= MAX_SAFE_SEQ)
                };
                match (map.len(), map.get("op"), seq("startSeq"), seq("endSeq")) {
                    (3, Some(Value::String(op)), Some(start_seq), Some(end_seq))
                        if op == "replace" =>
                    {
                        Ok(Self::Replace { start_seq, end_seq })
                    }
                    _ => Err(true),
                }
            }
            _ => Err(false),
        }
    }
}

impl Serialize for SurfaceOp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Append => serializer.serialize_str("append"),
            Self::Replace { start_seq, end_seq } => {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("op", "replace")?;
                map.serialize_entry("startSeq", start_seq)?;
                map.serialize_entry("endSeq", end_seq)?;
                map.end()
            }
        }
    }
}

/// How a producer wants a message to reach the surface: the op plus its provenance.
/// Serialises as `{surfaceOp}` or `{surfaceOp, sourceEventSeqs}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SurfaceIntent {
    /// The surface operation.
    #[serde(rename = "surfaceOp")]
    pub surface_op: SurfaceOp,
    /// The events the new one was derived from; a replacement must cite every node it shadows.
    #[serde(rename = "sourceEventSeqs", skip_serializing_if = "Option::is_none")]
    pub source_event_seqs: Option<Vec<u64>>,
}

impl SurfaceIntent {
    /// `{surfaceOp:"append"}`.
    pub fn append() -> Self {
        Self {
            surface_op: SurfaceOp::Append,
            source_event_seqs: None,
        }
    }

    /// `{surfaceOp:{op:"replace",startSeq:seq,endSeq:seq}, sourceEventSeqs:[seq]}`.
    pub fn replace_one(seq: u64) -> Self {
        Self {
            surface_op: SurfaceOp::replace_one(seq),
            source_event_seqs: Some(vec![seq]),
        }
    }

    /// A replacement of the range `start..=end` citing `sources`.
    pub fn replace(start_seq: u64, end_seq: u64, sources: Vec<u64>) -> Self {
        Self {
            surface_op: SurfaceOp::Replace { start_seq, end_seq },
            source_event_seqs: Some(sources),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replace_shape_is_exact() {
        let ok = json!({"op":"replace","startSeq":1,"endSeq":2});
        assert_eq!(
            SurfaceOp::from_value(&ok),
            Ok(SurfaceOp::Replace {
                start_seq: 1,
                end_seq: 2
            })
        );
        let extra = json!({"op":"replace","startSeq":1,"endSeq":2,"x":0});
        assert_eq!(SurfaceOp::from_value(&extra), Err(true));
        assert_eq!(
            SurfaceOp::from_value(&json!({"op":"replace","startSeq":-1,"endSeq":2})),
            Err(true)
        );
        assert_eq!(SurfaceOp::from_value(&json!("prepend")), Err(false));
        assert_eq!(
            SurfaceOp::from_value(&json!("append")),
            Ok(SurfaceOp::Append)
        );
        assert_eq!(
            serde_json::to_value(SurfaceIntent::replace_one(4)).unwrap(),
            json!({"surfaceOp":{"op":"replace","startSeq":4,"endSeq":4},"sourceEventSeqs":[4]})
        );
        assert_eq!(
            serde_json::to_value(SurfaceIntent::append()).unwrap(),
            json!({"surfaceOp":"append"})
        );
    }
}
