//! The message model carried by surface events (`system/message`, `user/message`,
//! `assistant/message`, `tool/result`).
//!
//! The model is typed where the host reasons about it (role, text blocks, the plugin source)
//! and raw JSON everywhere else, so a log written by a richer producer round-trips unchanged:
//! unknown content blocks, unknown message fields and unknown data fields are all kept.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::prompt::NamedText;

mod decode;

/// The `data` of a surface event: the message plus the loop position it was produced at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageData {
    /// The message itself.
    pub message: Message,
    /// The turn that produced it, when the producer records one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// The step that produced it, when the producer records one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// Any other data field, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl MessageData {
    /// Data holding just `message`.
    pub fn new(message: Message) -> Self {
        Self {
            message,
            turn: None,
            step: None,
            extra: Map::new(),
        }
    }

    /// The same data tagged with a step number.
    pub fn at_step(mut self, step: u64) -> Self {
        self.step = Some(step);
        self
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// A unique id (see [`new_message_id`]).
    pub id: String,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The content blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Who formed the message, when it was not the user or the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Any other message field (for example a tool call id), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message with a fresh id and no source.
    pub fn new(role: impl Into<String>, content: Vec<ContentBlock>) -> Self {
        Self {
            id: new_message_id(),
            role: role.into(),
            content,
            source: None,
            extra: Map::new(),
        }
    }

    /// A system message formed by `plugin`: content `[]` for an empty text (an empty node
    /// reserves its slot but yields no wire message), otherwise one text block.
    pub fn system(text: &str, plugin: &str) -> Self {
        let mut message = Self::new("system", text_content(text));
        message.source = Some(Source::plugin(plugin));
        message
    }

    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new("user", vec![ContentBlock::text(text)])
    }

    /// The message the projections compare: `Some("")` for empty content, the text for
    /// exactly one text block, `None` for anything else ("not simple").
    pub fn simple_text(&self) -> Option<&str> {
        match self.content.as_slice() {
            [] => Some(""),
            [block] => block.as_text(),
            _ => None,
        }
    }

    /// The text of the message when it is exactly one text block (empty content is `None`).
    pub fn single_text(&self) -> Option<&str> {
        match self.content.as_slice() {
            [block] => block.as_text(),
            _ => None,
        }
    }

    /// Whether the source is `{kind:"plugin", plugin}`.
    pub fn is_from_plugin(&self, plugin: &str) -> bool {
        self.source
            .as_ref()
            .is_some_and(|s| s.kind == "plugin" && s.plugin.as_deref() == Some(plugin))
    }
}

/// Content `[]` for `""`, otherwise one text block.
pub fn text_content(text: &str) -> Vec<ContentBlock> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![ContentBlock::text(text)]
    }
}

/// Where a message came from. Only the plugin form is interpreted; other kinds are kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// `plugin` for plugin-formed messages; other kinds pass through.
    pub kind: String,
    /// The plugin id, for `kind == "plugin"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The form, e.g. `snapshot` for a runtime-context snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<String>,
    /// The named contributions that formed a snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<NamedText>>,
    /// Any other source field, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Source {
    /// `{kind:"plugin", plugin}`.
    pub fn plugin(plugin: &str) -> Self {
        Self {
            kind: "plugin".to_string(),
            plugin: Some(plugin.to_string()),
            form: None,
            sections: None,
            extra: Map::new(),
        }
    }
}

/// One content block. Text blocks are typed; every other block stays raw JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{type:"text", text, …}`; `extra` keeps any further keys (e.g. cache hints).
    Text {
        /// The text.
        text: String,
        /// Keys other than `type` and `text`, kept verbatim.
        extra: Map<String, Value>,
    },
    /// Any other block (reasoning, image, tool call, tool result, …), verbatim.
    Other(Value),
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            extra: Map::new(),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text, .. } => Some(text),
            Self::Other(_) => None,
        }
    }

    /// The block as JSON, exactly as it is written to the log.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Text { text, extra } => {
                let mut map = Map::with_capacity(extra.len() + 2);
                map.insert("type".into(), Value::String("text".into()));
                map.insert("text".into(), Value::String(text.clone()));
                for (k, v) in extra {
                    map.insert(k.clone(), v.clone());
                }
                Value::Object(map)
            }
            Self::Other(value) => value.clone(),
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Self::Text { text, extra } => {
                let mut map = serializer.serialize_map(Some(extra.len() + 2))?;
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
                for (k, v) in extra {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Self::Other(value) => value.serialize(serializer),
        }
    }
}

/// A fresh message id: unique within the process (counter) and across processes writing at
/// the same time (pid and clock), without needing a random source.
pub fn new_message_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("msg_{nanos:x}_{:x}_{n:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_blocks_and_fields_round_trip() {
        let raw = r#"{"message":{"id":"m","role":"assistant","content":[{"type":"text","text":"hi","cache":true},{"type":"reasoning","text":"r"}],"toolCallId":"t1"},"step":3,"x":[1]}"#;
        let data: MessageData = serde_json::from_str(raw).unwrap();
        assert_eq!(data.message.content[0].as_text(), Some("hi"));
        assert!(matches!(data.message.content[1], ContentBlock::Other(_)));
        assert_eq!(data.step, Some(3));
        let back = serde_json::to_string(&data).unwrap();
        let a: Value = serde_json::from_str(raw).unwrap();
        let b: Value = serde_json::from_str(&back).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn system_message_of_empty_text_has_no_content() {
        let m = Message::system("", "p");
        assert!(m.content.is_empty());
        assert_eq!(m.simple_text(), Some(""));
        assert_eq!(m.single_text(), None);
        assert!(m.is_from_plugin("p"));
        assert_ne!(new_message_id(), new_message_id());
    }
}
