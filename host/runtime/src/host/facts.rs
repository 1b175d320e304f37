//! Caller facts: what an embedder knows about the step (model, cwd, provider, anything else).

use std::sync::Arc;

use crate::prompt::{AssembleContext, CancelToken, Timings};

/// Ordered `key = value` facts handed to every provider of an assembly, the caller's
/// signal to cancel it, and where to record its timings.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pairs: Vec<(String, String)>,
    signal: Option<CancelToken>,
    timings: Option<Arc<Timings>>,
    on_caller_thread: bool,
}

/// Equal when the pairs are: the signal and the timings control and watch a request, they
/// are not part of it.
impl PartialEq for Facts {
    fn eq(&self, other: &Self) -> bool {
        self.pairs == other.pairs
    }
}

impl Eq for Facts {}

impl Facts {
    /// No facts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a fact (a later fact of the same key wins).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.pairs.push((key.into(), value.into()));
        self
    }

    /// The facts as pairs.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The value of fact `key` (the last one given).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Cancel the assembly (and step) these facts go with when `token` is cancelled.
    pub fn signal(mut self, token: CancelToken) -> Self {
        self.signal = Some(token);
        self
    }

    /// The signal, if any.
    pub fn signal_token(&self) -> Option<CancelToken> {
        self.signal.clone()
    }

    /// Record where the assembly's (and step's) time goes in `timings`: each plugin call,
    /// and the assemble, render and commit phases.
    pub fn timings(mut self, timings: Arc<Timings>) -> Self {
        self.timings = Some(timings);
        self
    }

    /// The timings collector, if any.
    pub fn timings_handle(&self) -> Option<Arc<Timings>> {
        self.timings.clone()
    }

    /// Assemble on the calling thread instead of handing the assembly to Tokio's blocking
    /// pool and waiting to be woken with its result (about half of a `Host::render` from
    /// async code on the reference deployment; docs/benchmarks.md §1). On a multi-threaded
    /// runtime's worker the thread leaves the runtime for the duration
    /// (`tokio::task::block_in_place`: the worker's other tasks move to another thread), so
    /// a plugin that takes until its deadline holds this thread, not the runtime. The price:
    /// once the assembly has started, dropping the render's (or step's) future no longer
    /// interrupts it: cancel it with [`Facts::signal`]. On a current-thread runtime, which
    /// cannot be left, the assembly goes to the blocking pool as without this.
    pub fn on_caller_thread(mut self, yes: bool) -> Self {
        self.on_caller_thread = yes;
        self
    }

    /// An assemble context carrying these facts (the registry fills the scope chain).
    pub fn into_context(self) -> AssembleContext {
        AssembleContext {
            scope_chain: Vec::new(),
            facts: self.pairs,
            signal: self.signal,
            timings: self.timings,
            on_caller_thread: self.on_caller_thread,
        }
    }
}

impl From<Vec<(String, String)>> for Facts {
    fn from(pairs: Vec<(String, String)>) -> Self {
        Self {
            pairs,
            signal: None,
            timings: None,
            on_caller_thread: false,
        }
    }
}
