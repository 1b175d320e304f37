//! Caller facts: what an embedder knows about the step (model, cwd, provider, anything else).

use crate::prompt::{AssembleContext, CancelToken};

/// Ordered `key = value` facts handed to every provider of an assembly, and the caller's
/// signal to cancel it.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pairs: Vec<(String, String)>,
    signal: Option<CancelToken>,
}

/// Equal when the pairs are: the signal controls a request, it is not part of it.
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

    /// An assemble context carrying these facts (the registry fills the scope chain).
    pub fn into_context(self) -> AssembleContext {
        AssembleContext {
            scope_chain: Vec::new(),
            facts: self.pairs,
            signal: self.signal,
        }
    }
}

impl From<Vec<(String, String)>> for Facts {
    fn from(pairs: Vec<(String, String)>) -> Self {
        Self {
            pairs,
            signal: None,
        }
    }
}
