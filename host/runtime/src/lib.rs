//! prompt-host: a WebAssembly plugin host for an LLM agent's system prompt.
//!
//! An agent's system prompt is assembled every step from many contributors, each a
//! sandboxed WebAssembly component declared in WIT and loaded into a scope. [`Host`] is the
//! entry point: it keeps a registry of layers and scopes, a Wasm runtime and the plugins
//! loaded from a host.toml or at run time, and runs assemble → render → step against a
//! durable session log.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use prompt_host::{Facts, Host, HostConfig, RuntimeConfig};
//! let config = HostConfig::load(std::path::Path::new("host.toml"))?;
//! let host = Host::from_config(&config, RuntimeConfig::default())?;
//! let rendered = host.render(Some("agent:1"), Facts::new().with("model", "m1")).await?;
//! println!("{}", rendered.prompt);
//! # Ok(()) }
//! ```
//!
//! The modules:
//!
//! - [`prompt`], [`session`], [`projection`]: the domain core (the `prompt-host-core`
//!   crate, which names no wasmtime type): registry and assembly, the session log, and how
//!   each rendering enters it;
//! - [`wasm`]: the runtime that makes sandboxed components implement the core's provider
//!   traits; [`policy`]: what a plugin may use (limits, failure policy, grants);
//! - [`host`]: the embedding API; [`config`]: host.toml; [`mcp`]: MCP servers feeding
//!   instruction-provider plugins (the JSON-RPC server of `prompt-host serve` is the
//!   `prompt-host-serve` crate); [`plugin_path`]: plugins found by name (`wasm = "persona"`); [`tokens`]: token counts
//!   and budgets (the `prompt-host-tokens` crate); [`oci`]: plugins from OCI registries (the
//!   `prompt-host-oci` crate); [`peer`]: what the host takes from a network peer (the
//!   `prompt-host-peer` crate).
//!
//! # Features
//!
//! All on by default; an embedder that runs Wasm plugins alone turns them off
//! (`default-features = false`) and compiles no MCP client, OCI client, tokenizer or
//! HTTP/TLS stack. Plugins, scopes, sessions, policy, host.toml and the [`Host`] API work
//! in every build. A host.toml or a call that asks for what a build lacks is refused with
//! an error naming the entry and the feature, never ignored.
//!
//! - `mcp`: MCP servers (`[[mcp]]`, [`Host::connect_mcp`], the `mcp` module), with rmcp,
//!   reqwest, rustls and oauth2; turns on `tokens` (instruction budgets are counted in
//!   tokens).
//! - `oci`: plugins from OCI registries (`wasm = "oci://…"`, `[host.registry]`,
//!   [`Host::fetch_oci`], the `oci` module).
//! - `tokens`: token counts and budgets (`[prompt] tokenizer`, `max_prompt_tokens`,
//!   `max_context_tokens`, [`Host::token_report`], the `tokens` module), with tiktoken-rs
//!   and Hugging Face tokenizers.
//!
//! The `peer` module comes with `mcp` or `oci`.

pub mod config;
// Only in a build without one of the default features (the public API of a default build
// stays as it was): the type its refusals name the missing feature with.
#[cfg(not(all(feature = "mcp", feature = "oci", feature = "tokens")))]
pub mod feature;
pub mod host;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod plugin_path;
pub mod policy;
pub mod wasm;

pub use prompt_host_core::{projection, prompt, session};
#[cfg(feature = "oci")]
pub use prompt_host_oci as oci;
#[cfg(any(feature = "mcp", feature = "oci"))]
pub use prompt_host_peer as peer;
#[cfg(feature = "tokens")]
pub use prompt_host_tokens as tokens;

// Child processes in a group of their own, ended with the host. Used by the command line
// for plugin builds; not part of the embedding API.
/// Opening paths that must be regular files, without blocking. Used by the command line;
/// not part of the embedding API.
#[doc(hidden)]
pub use prompt_host_core::child;

#[doc(hidden)]
pub use prompt_host_core::fsutil;

/// Faults injected in debug builds, for the tests of the request-level boundaries; not part
/// of the embedding API.
#[doc(hidden)]
pub mod fault;

/// Running plugin calls where blocking is allowed. Used by the command line; not part of
/// the embedding API.
#[doc(hidden)]
pub use prompt_host_core::blocking;

pub use config::HostConfig;
pub use host::{Facts, Host, HostError, PluginId, Rendered, StepOptions};
#[cfg(feature = "mcp")]
pub use host::{McpId, McpSpec};
pub use policy::PluginSpec;
pub use prompt::PromptConfig;
pub use wasm::{LoadedPlugin, PluginCode, PluginSource, RuntimeConfig, WasmRuntime};

#[cfg(all(test, feature = "oci"))]
mod tests {
    /// A component pulled from a registry may be as large as one read from a file.
    #[test]
    fn the_registry_pulls_what_the_runtime_loads() {
        assert_eq!(
            crate::oci::RegistrySettings::default().max_bytes,
            crate::wasm::DEFAULT_MAX_WASM_BYTES
        );
    }
}
