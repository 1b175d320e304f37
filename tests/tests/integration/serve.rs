//! `prompt-host serve`'s protocol (docs/protocol.md): conversations, rules at the edges, and
//! its stdio attacked.

pub(crate) mod attacked;
pub(crate) mod protocol;
pub(crate) mod rules;
