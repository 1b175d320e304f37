//! The `Host` API as an embedder uses it: whole conversations, retries, cancellation, and the
//! same bytes whatever the timing.

pub(crate) mod determinism;
pub(crate) mod embedding;
