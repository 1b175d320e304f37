//! The Wasm runtime: sandboxed components implement the core's provider traits.
//!
//! - [`WasmRuntime`]: one engine context and one code cache per host; [`WasmRuntime::load`]
//!   loads a plugin from a [`PluginSource`] into a scope of a registry,
//!   [`WasmRuntime::check`] validates one and reports what it declares.
//! - [`LoadedPlugin`]: one plugin loaded into a scope; owns the fiber with everything it
//!   declared.
//!
//! Fixed texts, tool sets and variable values are stored as host data at `init`; only
//! dynamic entries call into Wasm, each call under a wall-clock deadline, memory/table
//! limits, an output-byte budget and optional fuel.
//!
//! Inside, the modules point one way: the runtime facade uses the code cache, the engine
//! context and the plugin; a plugin has a supervisor (its live instance and failure policy,
//! `quarantine.rs`) whose providers (`providers.rs`) call the instance; an instance runs a
//! call in a store (`store.rs`) through the bindings of its contract version
//! (`contract.rs`); the host imports (`imports/`) and the sandbox (`sandbox/`) work on the
//! store, which holds the `wasi:http` hooks of `egress/` (a plugin's requests, sent by the
//! host to the origins it was granted); the leaves — `declare`, `ident`, `failure`, `names`, `digest` — name none of the
//! others. A test checks that no module imports one that imports it back.

mod ahead;
mod answers;
mod cache;
mod call;
mod check;
mod code;
mod contract;
mod convert;
mod declare;
mod digest;
#[cfg(feature = "http")]
pub(crate) mod egress;
mod engine;
mod engine_build;
mod error;
mod failure;
mod ident;
mod imports;
mod instance;
mod names;
mod plugin;
mod progress;
mod providers;
mod quarantine;
mod runtime;
mod sandbox;
mod settings;
mod store;
mod supervisor;
mod validate;
mod warm_up;

pub(crate) use ahead::Ahead;
pub use cache::default_cache_dir;
pub use call::Export;
pub use check::{CheckOptions, PluginReport};
pub use code::{CacheStats, PluginCode};
pub use contract::{ServerInstructions, ServerSkill, ServerTool, WitVersion, World};
pub use declare::Declaration;
pub(crate) use digest::pin_matches;
pub use digest::sha256_hex;
pub use error::WasmError;
pub use ident::{scope_label, LogSink, PluginLog};
pub use plugin::{LoadTiming, LoadedPlugin, PluginHealth};
pub use progress::{CompileProgress, ProgressSink, DEFAULT_PROGRESS_AFTER};
pub use runtime::{PluginSource, WasmRuntime};
pub use settings::{Pooling, RuntimeConfig, DEFAULT_MAX_WASM_BYTES};

pub(crate) use names::escape;
