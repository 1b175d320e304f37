//! prompt-host: a WebAssembly plugin host for an LLM agent's system prompt.
//!
//! The domain core (`prompt`, `session`, `projection`) names no wasmtime type; `wasm` makes
//! sandboxed components implement the core's provider traits.

pub mod config;
pub mod mcp;
pub mod projection;
pub mod prompt;
pub mod session;
pub mod wasm;
