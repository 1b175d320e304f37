//! The domain core of prompt-host: what a system prompt is made of and how it reaches a
//! model, with no WebAssembly runtime in its dependency tree.
//!
//! - [`prompt`]: the registry of contributions (global and scoped layers, fibers), assembly,
//!   strict `{{variable}}` rendering, tool order, the listener waterfall, the cache-prefix
//!   report. Contributors implement its provider traits ([`prompt::TextProvider`], …); the
//!   `prompt-host` crate makes sandboxed WebAssembly components implement them.
//! - [`session`]: the durable session log (events, the model-visible surface, appends that
//!   read back, conversations, replay).
//! - [`projection`]: which `system/message` and runtime-context events a new rendering
//!   needs, and one loop step from rendered text to the model request.
//! - [`fsutil`]: the one place files the host did not create are opened (never blocking,
//!   never redirected after a check); [`blocking`]: the one gate calls that may block go
//!   through.

pub mod blocking;
pub mod child;
pub mod digest;
pub mod escape;
pub mod fsutil;
pub mod projection;
pub mod prompt;
#[cfg(feature = "schema")]
pub mod schema;
pub mod session;
pub mod suggest;
