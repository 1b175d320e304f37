//! `RuntimeContextProjection`: keeps the runtime-context snapshot at the history
//! tail without rewriting the system prompt.
//!
//! State is restored from the log once, then follows committed events of the same session;
//! `project` is pure, so a decision that is never committed changes nothing.

use std::collections::HashSet;

use crate::prompt::{NamedText, CONTEXT_CLEARED, SYSTEM_PROMPT_PLUGIN_ID};
use crate::session::event::{ASSISTANT_MESSAGE, USER_MESSAGE};
use crate::session::route::reply::compacted_by_provider;
use crate::session::{ContentBlock, Event, Message, Session, SessionId, Source};

/// The snapshot the projection believes the model currently sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retained {
    /// No owned snapshot was ever seen.
    Never,
    /// One existed, but none is on the surface any more.
    Gone,
    /// The surviving snapshot: its seq, and its text when it is exactly one text block.
    Snapshot {
        /// The snapshot's seq.
        seq: u64,
        /// Its text; `None` when the message is not a single text block.
        text: Option<String>,
    },
}

/// The runtime-context projection of one session.
#[derive(Debug, Clone)]
pub struct RuntimeContextProjection {
    session: SessionId,
    retained: Retained,
}

/// A `user/message` formed by the system-prompt plugin.
fn owned_message(event: &Event) -> Option<&Message> {
    if event.kind != USER_MESSAGE {
        return None;
    }
    event
        .message()
        .filter(|m| m.is_from_plugin(SYSTEM_PROMPT_PLUGIN_ID))
}

/// An assistant reply in which the provider compacted the conversation on its side
/// (OpenAI's `compaction` item, Anthropic's `compaction` block). Sent back, it stands for
/// everything before it: Anthropic drops the messages before it, OpenAI lets them go. A
/// snapshot before it is, to the model, part of a summary, so the projection sends the
/// snapshot again, as after a compaction of the log (RC8, RC9).
fn provider_compaction(event: &Event) -> bool {
    event.kind == ASSISTANT_MESSAGE && event.message().is_some_and(compacted_by_provider)
}

fn retained_of(event: &Event, message: &Message) -> Retained {
    Retained::Snapshot {
        seq: event.seq,
        text: message.single_text().map(str::to_string),
    }
}

impl RuntimeContextProjection {
    /// Restore from `session`: the newest owned snapshot still on the surface wins; owned
    /// snapshots that were shadowed, or that a provider's compaction on the surface follows,
    /// only record that one existed.
    pub fn restore(session: &Session) -> Self {
        let surface: HashSet<u64> = session.surface().iter().collect();
        let mut retained = Retained::Never;
        let mut compacted_after = false;
        for event in session.events().iter().rev() {
            if surface.contains(&event.seq) && provider_compaction(event) {
                compacted_after = true;
            }
            let Some(message) = owned_message(event) else {
                continue;
            };
            retained = Retained::Gone;
            if compacted_after {
                break;
            }
            if surface.contains(&event.seq) {
                retained = retained_of(event, message);
                break;
            }
        }
        Self {
            session: session.id(),
            retained,
        }
    }

    /// The current state.
    pub fn retained(&self) -> &Retained {
        &self.retained
    }

    /// The session this projection follows.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Follow one committed event of `session`; events of other sessions are ignored.
    pub fn observe(&mut self, session: SessionId, event: &Event) {
        if session != self.session {
            return;
        }
        // Checked first: an owned message that is itself a replacement is a new snapshot.
        if let Some(message) = owned_message(event) {
            self.retained = retained_of(event, message);
            return;
        }
        if let Retained::Snapshot { seq, .. } = &self.retained {
            let cites_retained = event.is_replacement()
                && event
                    .source_event_seqs
                    .as_ref()
                    .is_some_and(|sources| sources.contains(seq));
            if cites_retained || provider_compaction(event) {
                self.retained = Retained::Gone;
            }
        }
    }

    /// The snapshot message to append for `current` (the joined snapshot text, `""` when no
    /// context applies) formed from `sections`; `None` when the model already sees it.
    pub fn project(&self, current: &str, sections: &[NamedText]) -> Option<Message> {
        if self.retained == Retained::Never && current.is_empty() {
            return None;
        }
        let snapshot = if current.is_empty() {
            CONTEXT_CLEARED
        } else {
            current
        };
        if let Retained::Snapshot {
            text: Some(text), ..
        } = &self.retained
        {
            if text == snapshot {
                return None;
            }
        }
        let mut source = Source::plugin(SYSTEM_PROMPT_PLUGIN_ID);
        // The cleared marker has no contributions left to attribute.
        if !sections.is_empty() {
            source.form = Some("snapshot".to_string());
            source.sections = Some(sections.to_vec());
        }
        let mut message = Message::new("user", vec![ContentBlock::text(snapshot)]);
        message.source = Some(source);
        Some(message)
    }
}

#[cfg(test)]
#[path = "runtime_context/tests.rs"]
mod tests;
