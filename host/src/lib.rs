//! prompt-host: a WebAssembly plugin host for an LLM agent's system prompt.
//!
//! The domain core (`prompt`, `session`, `projection`) names no wasmtime type; `wasm` makes
//! sandboxed components implement the core's provider traits.

pub mod blocking;
mod child;
pub mod cli;
pub mod config;
pub mod fsutil;
pub mod host;
pub mod mcp;
pub mod projection;
pub mod prompt;
pub mod serve;
pub mod session;
pub mod wasm;

pub use config::HostConfig;
pub use host::{Facts, Host, HostError, McpId, McpSpec, PluginId, Rendered, StepOptions};
pub use prompt::PromptConfig;
pub use wasm::{LoadedPlugin, PluginCode, PluginSpec, RuntimeConfig, WasmRuntime};
