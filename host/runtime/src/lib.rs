//! prompt-host: a WebAssembly plugin host for an LLM agent's system prompt.
//!
//! The domain core (`prompt`, `session`, `projection`) names no wasmtime type; `wasm` makes
//! sandboxed components implement the core's provider traits.

pub mod child;
pub mod config;
pub mod host;
pub mod mcp;
pub mod policy;
pub mod serve;
pub mod wasm;

pub use prompt_host_core::{blocking, fsutil, projection, prompt, session};

pub use config::HostConfig;
pub use host::{Facts, Host, HostError, McpId, McpSpec, PluginId, Rendered, StepOptions};
pub use policy::PluginSpec;
pub use prompt::PromptConfig;
pub use wasm::{LoadedPlugin, PluginCode, PluginSource, RuntimeConfig, WasmRuntime};
