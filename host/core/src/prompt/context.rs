//! The context one assembly runs with: which scope it is for, and the caller's facts.

use std::sync::Arc;

use super::cancel::CancelToken;
use super::timings::Timings;

/// What an assembly is for. Every provider and listener of one assembly sees the same
/// context.
#[derive(Debug, Clone, Default)]
pub struct AssembleContext {
    /// The scope chain, nearest first (`[agent:7, preset:coder]`); empty for an unscoped
    /// assembly. Filled by the registry from the requested scope key.
    pub scope_chain: Vec<Arc<str>>,
    /// Caller facts in the order given, e.g. `("model", "deepseek-v4")`, `("cwd", "/work")`.
    pub facts: Vec<(String, String)>,
    /// Explicit request control: cancelling it stops the assembly.
    pub signal: Option<CancelToken>,
    /// Where each provider and listener call's time is recorded, when the caller asked for
    /// timings; `None` measures nothing.
    pub timings: Option<Arc<Timings>>,
    /// Assemble on the calling thread, leaving its runtime for the duration, rather than on
    /// the blocking pool: two thread wake-ups fewer, but once the assembly has started,
    /// dropping its future no longer interrupts it (cancel it with `signal`). Honoured where
    /// the thread can leave its runtime (none, or a multi-threaded one); a current-thread
    /// runtime's assembly goes to the pool regardless.
    pub on_caller_thread: bool,
}

/// Two contexts are equal when a provider would see the same thing: the scope chain and
/// the facts. The signal, the timings and where the assembly runs are how the caller
/// controls and watches the request, not part of it.
impl PartialEq for AssembleContext {
    fn eq(&self, other: &Self) -> bool {
        self.scope_chain == other.scope_chain && self.facts == other.facts
    }
}

impl AssembleContext {
    /// A context with caller facts and no scope (the registry fills the chain).
    pub fn with_facts<K: Into<String>, V: Into<String>>(
        facts: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            scope_chain: Vec::new(),
            facts: facts
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            signal: None,
            timings: None,
            on_caller_thread: false,
        }
    }

    /// Whether the caller cancelled this assembly.
    pub fn is_cancelled(&self) -> bool {
        self.signal.as_ref().is_some_and(CancelToken::is_cancelled)
    }

    /// The scope this assembly is for (nearest key of the chain), if any.
    pub fn scope(&self) -> Option<&str> {
        self.scope_chain.first().map(|s| &**s)
    }

    /// The last fact named `key`, if the caller gave one.
    pub fn fact(&self, key: &str) -> Option<&str> {
        self.facts
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}
