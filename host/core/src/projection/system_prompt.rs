//! `SystemPromptProjection`: how a rendered system prompt reaches the surface.
//!
//! The first prompt, even empty, reserves a system node. A route that reads later system
//! messages ("in-history") appends a changed non-empty prompt after the cached history. A
//! plain route, a new request series or an empty prompt instead normalises: later non-empty
//! system nodes are emptied and the head is rewritten last. Empty tails are dormant: they hold
//! no effective text and are never replaced again.

use serde::Serialize;

use crate::prompt::SYSTEM_PROMPT_PLUGIN_ID;
use crate::session::event::{NewEvent, SYSTEM_MESSAGE};
use crate::session::{Message, MessageData, Session, SurfaceIntent};

/// The route and series facts one decision is made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdmissionFlags {
    /// The prepared route reads a later `system` message as the effective prompt.
    pub in_history: bool,
    /// This request starts a new model-message series.
    pub starts_series: bool,
}

/// One uncommitted system-prompt surface operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemPromptCommit {
    /// The system message: content `[]` for an empty text, otherwise one text block.
    pub message: Message,
    /// `append`, or a replacement of exactly one surviving system node.
    pub intent: SurfaceIntent,
}

impl SystemPromptCommit {
    fn append(text: &str) -> Self {
        Self {
            message: Message::system(text, SYSTEM_PROMPT_PLUGIN_ID),
            intent: SurfaceIntent::append(),
        }
    }

    fn replace(seq: u64, text: &str) -> Self {
        Self {
            message: Message::system(text, SYSTEM_PROMPT_PLUGIN_ID),
            intent: SurfaceIntent::replace_one(seq),
        }
    }

    /// The text this commit sets (`""` for empty content).
    pub fn text(&self) -> &str {
        self.message.single_text().unwrap_or("")
    }

    /// The `system/message` event that commits this decision, tagged with `step`.
    pub fn to_event(&self, step: Option<u64>) -> NewEvent {
        self.to_event_with(step, None)
    }

    /// [`SystemPromptCommit::to_event`], recording `origins` (who wrote each section of the
    /// text) as `sections` when it writes a text.
    pub fn to_event_with(
        &self,
        step: Option<u64>,
        origins: Option<&[super::step::SectionOrigin]>,
    ) -> NewEvent {
        let mut data = MessageData::new(self.message.clone());
        data.step = step;
        if let Some(origins) = origins.filter(|_| !self.text().is_empty()) {
            if let Ok(value) = serde_json::to_value(origins) {
                data.extra.insert("sections".into(), value);
            }
        }
        NewEvent::message(SYSTEM_MESSAGE, data, self.intent.clone())
    }
}

/// A `system/message` node on the surface, as the projection sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemNode {
    /// Its seq.
    pub seq: u64,
    /// `Some("")` for empty content, the text for exactly one text block, `None` otherwise
    /// ("not simple": never equal to anything, never dormant).
    pub text: Option<String>,
}

/// The decision over one session's current surface. Borrowing the session keeps the decision
/// pure: it cannot commit.
#[derive(Debug, Clone, Copy)]
pub struct SystemPromptProjection<'a> {
    session: &'a Session,
}

impl<'a> SystemPromptProjection<'a> {
    /// The projection over `session`.
    pub fn new(session: &'a Session) -> Self {
        Self { session }
    }

    /// Every `system/message` node on the surface, in surface order.
    pub fn nodes(&self) -> Vec<SystemNode> {
        self.session
            .surface_events()
            .filter(|event| event.kind == SYSTEM_MESSAGE)
            .filter_map(|event| {
                event.message().map(|message| SystemNode {
                    seq: event.seq,
                    text: message.simple_text().map(str::to_string),
                })
            })
            .collect()
    }

    /// The ordered commits that bring `rendered` onto the surface; empty when none is needed.
    pub fn project(&self, rendered: &str, flags: AdmissionFlags) -> Vec<SystemPromptCommit> {
        let nodes = self.nodes();
        // B1: no system node yet; even an empty prompt reserves the slot.
        let Some(head) = nodes.first() else {
            return vec![SystemPromptCommit::append(rendered)];
        };
        // B2: normalise. Tails first, the head last, so the head commit is the newest event.
        if !flags.in_history || flags.starts_series || rendered.is_empty() {
            let mut commits: Vec<SystemPromptCommit> = nodes[1..]
                .iter()
                .filter(|node| node.text.as_deref() != Some(""))
                .map(|node| SystemPromptCommit::replace(node.seq, ""))
                .collect();
            if head.text.as_deref() != Some(rendered) {
                commits.push(SystemPromptCommit::replace(head.seq, rendered));
            }
            return commits;
        }
        // B3/B4 compare with the latest effective text, not the head: returning to an older
        // text while continuing in history appends again.
        let latest = nodes
            .iter()
            .rev()
            .find(|node| node.text.as_deref() != Some(""))
            .unwrap_or(head);
        if latest.text.as_deref() == Some(rendered) {
            Vec::new()
        } else {
            vec![SystemPromptCommit::append(rendered)]
        }
    }
}

#[cfg(test)]
#[path = "system_prompt/tests.rs"]
mod tests;
