//! Reading one log line in a single pass: the envelope fields land in a map, and the data of
//! a surface event is decoded straight into its typed form when `type` precedes it (as it
//! does in every line this crate writes).

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use super::is_surface_type;
use crate::session::message::MessageData;

/// The data of a line, typed when that was possible in the same pass.
pub(super) enum RawData {
    Typed(Box<MessageData>),
    Raw(Value),
}

/// The envelope keys this build interprets, in slots (no map insertions for them).
pub(super) const ENVELOPE_KEYS: [&str; 6] = [
    "type",
    "seq",
    "time",
    "ignorable",
    "surfaceOp",
    "sourceEventSeqs",
];

/// An envelope whose fields are still unchecked: `known[i]` holds `ENVELOPE_KEYS[i]`, and
/// `fields` every other key except `data`.
pub(super) struct RawEnvelope {
    pub(super) known: [Option<Value>; 6],
    pub(super) fields: Map<String, Value>,
    pub(super) data: Option<RawData>,
}

impl RawEnvelope {
    /// Take the value of envelope key `key` (one of `ENVELOPE_KEYS`).
    pub(super) fn take(&mut self, key: &str) -> Option<Value> {
        let index = ENVELOPE_KEYS.iter().position(|k| *k == key)?;
        self.known[index].take()
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = RawEnvelope;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEnvelope, A::Error> {
        let mut fields = Map::new();
        let mut known: [Option<Value>; 6] = Default::default();
        let mut data = None;
        let mut surface = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "data" {
                data = Some(if surface {
                    RawData::Typed(Box::new(map.next_value::<MessageData>()?))
                } else {
                    RawData::Raw(map.next_value::<Value>()?)
                });
                continue;
            }
            let value = map.next_value::<Value>()?;
            if key == "type" {
                surface = value.as_str().is_some_and(is_surface_type);
            }
            match ENVELOPE_KEYS.iter().position(|k| *k == key) {
                Some(index) => known[index] = Some(value),
                None => {
                    fields.insert(key, value);
                }
            }
        }
        Ok(RawEnvelope {
            known,
            fields,
            data,
        })
    }
}

impl<'de> Deserialize<'de> for RawEnvelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}
