//! Decoding messages from JSON by moving fields out of the parsed value.
//!
//! Replay parses every line once into a `Value`; taking the known fields out of it and
//! keeping the rest as-is is several times cheaper than serde's buffered `flatten`, and it
//! keeps unknown fields in their original order.

use serde_json::{Map, Value};

use super::{ContentBlock, Message, MessageData, Source};
use crate::prompt::NamedText;

type Fields = Map<String, Value>;

fn object(value: Value, what: &str) -> Result<Fields, String> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(format!("{what} must be an object")),
    }
}

fn string(map: &mut Fields, key: &str, what: &str) -> Result<String, String> {
    match map.shift_remove(key) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(format!("{what}.{key} must be a string")),
    }
}

fn opt_string(map: &mut Fields, key: &str, what: &str) -> Result<Option<String>, String> {
    match map.shift_remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("{what}.{key} must be a string")),
    }
}

fn opt_u64(map: &mut Fields, key: &str) -> Result<Option<u64>, String> {
    match map.shift_remove(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{key} must be a non-negative integer")),
    }
}

impl MessageData {
    /// Decode `{message, turn?, step?, …}`.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let mut map = object(value, "data")?;
        let message = map
            .shift_remove("message")
            .ok_or_else(|| "data.message is missing".to_string())?;
        Ok(Self {
            message: Message::from_value(message)?,
            turn: opt_u64(&mut map, "turn")?,
            step: opt_u64(&mut map, "step")?,
            extra: map,
        })
    }
}

impl Message {
    /// Decode `{id, role, content, source?, …}`.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let mut map = object(value, "message")?;
        let id = string(&mut map, "id", "message")?;
        let role = string(&mut map, "role", "message")?;
        let content = match map.shift_remove("content") {
            Some(Value::Array(blocks)) => blocks
                .into_iter()
                .map(ContentBlock::from_value)
                .collect::<Result<Vec<_>, _>>()?,
            _ => return Err("message.content must be an array".into()),
        };
        let source = map
            .shift_remove("source")
            .map(Source::from_value)
            .transpose()?;
        Ok(Self {
            id,
            role,
            content,
            source,
            extra: map,
        })
    }
}

impl ContentBlock {
    /// Decode one block: `{type:"text", text: string, …}` is text, anything else is kept raw.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let Value::Object(mut map) = value else {
            return Err("a content block must be an object".into());
        };
        let is_text = map.get("type").and_then(Value::as_str) == Some("text")
            && map.get("text").is_some_and(Value::is_string);
        if !is_text {
            return Ok(Self::Other(Value::Object(map)));
        }
        let text = string(&mut map, "text", "block")?;
        map.shift_remove("type");
        Ok(Self::Text { text, extra: map })
    }
}

impl Source {
    /// Decode `{kind, plugin?, form?, sections?, …}`.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let mut map = object(value, "message.source")?;
        let kind = string(&mut map, "kind", "message.source")?;
        let plugin = opt_string(&mut map, "plugin", "message.source")?;
        let form = opt_string(&mut map, "form", "message.source")?;
        let sections = map
            .shift_remove("sections")
            .map(serde_json::from_value::<Vec<NamedText>>)
            .transpose()
            .map_err(|e| format!("message.source.sections: {e}"))?;
        Ok(Self {
            kind,
            plugin,
            form,
            sections,
            extra: map,
        })
    }
}

macro_rules! deserialize_via_value {
    ($($ty:ty),*) => {$(
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
                Self::from_value(value).map_err(serde::de::Error::custom)
            }
        }
    )*};
}

deserialize_via_value!(ContentBlock, Source);

/// Messages and their data are decoded straight from the token stream during replay (no
/// intermediate `Value` for them), which is where most of the replay time goes otherwise.
mod direct {
    use std::fmt;

    use serde::de::{Deserialize, Deserializer, Error, MapAccess, Visitor};
    use serde_json::{Map, Value};

    use super::super::{ContentBlock, Message, MessageData, Source};

    struct DataVisitor;

    impl<'de> Visitor<'de> for DataVisitor {
        type Value = MessageData;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("message data {message, turn?, step?}")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MessageData, A::Error> {
            let (mut message, mut turn, mut step, mut extra) = (None, None, None, Map::new());
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "message" => message = Some(map.next_value::<Message>()?),
                    "turn" => turn = Some(map.next_value::<u64>()?),
                    "step" => step = Some(map.next_value::<u64>()?),
                    _ => {
                        extra.insert(key, map.next_value::<Value>()?);
                    }
                }
            }
            Ok(MessageData {
                message: message.ok_or_else(|| A::Error::custom("data.message is missing"))?,
                turn,
                step,
                extra,
            })
        }
    }

    impl<'de> Deserialize<'de> for MessageData {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_map(DataVisitor)
        }
    }

    struct MessageVisitor;

    impl<'de> Visitor<'de> for MessageVisitor {
        type Value = Message;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a message {id, role, content, source?}")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
            let (mut id, mut role, mut content, mut source) = (None, None, None, None);
            let mut extra = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "id" => id = Some(map.next_value::<String>()?),
                    "role" => role = Some(map.next_value::<String>()?),
                    "content" => content = Some(map.next_value::<Vec<ContentBlock>>()?),
                    "source" => source = Some(map.next_value::<Source>()?),
                    _ => {
                        extra.insert(key, map.next_value::<Value>()?);
                    }
                }
            }
            let missing = |field| A::Error::custom(format!("message.{field} is missing"));
            Ok(Message {
                id: id.ok_or_else(|| missing("id"))?,
                role: role.ok_or_else(|| missing("role"))?,
                content: content.ok_or_else(|| missing("content"))?,
                source,
                extra,
            })
        }
    }

    impl<'de> Deserialize<'de> for Message {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_map(MessageVisitor)
        }
    }
}
