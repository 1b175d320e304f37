//! prompt-host: a WebAssembly plugin host for an LLM agent's system prompt.
//!
//! The domain core (`prompt`, `session`, `projection`) names no wasmtime type; `wasm` makes
//! sandboxed components implement the core's provider traits.

pub mod prompt;
pub mod wasm;
pub mod config;
pub mod projection;
pub mod session;
