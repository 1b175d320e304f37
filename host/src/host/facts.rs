//! Caller facts: what an embedder knows about the step (model, cwd, provider, anything else).

use crate::prompt::AssembleContext;

/// Ordered `key = value` facts handed to every provider of an assembly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts(Vec<(String, String)>);

impl Facts {
    /// No facts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a fact (a later fact of the same key wins).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.push((key.into(), value.into()));
        self
    }

    /// The facts as pairs.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// An assemble context carrying these facts (the registry fills the scope chain).
    pub fn into_context(self) -> AssembleContext {
        AssembleContext {
            scope_chain: Vec::new(),
            facts: self.0,
        }
    }
}

impl From<Vec<(String, String)>> for Facts {
    fn from(pairs: Vec<(String, String)>) -> Self {
        Self(pairs)
    }
}
