//! Registry tests: see `crate::prompt::tests` for the conformance suite.
