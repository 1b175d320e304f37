//! The domain core: registry (layers, scopes, fibers), assembly, strict rendering, tool
//! order, the assembly waterfall and its invariants.
//!
//! Nothing in this module names a wasmtime type. Wasm plugins (see `crate::wasm`) and native
//! Rust closures implement the same provider traits (`provider.rs`), so the core is tested
//! with native providers and the sandbox is glue on top.

mod assemble;
pub(crate) mod assembly;
pub mod cache_prefix;
pub(crate) mod cancel;
pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod error;
pub(crate) mod errors;
mod invariant;
pub(crate) mod listener_changes;
pub(crate) mod names;
pub(crate) mod provider;
pub(crate) mod registry;
pub(crate) mod render;
pub(crate) mod timings;
pub(crate) mod tool_order;
mod waterfall;

pub use assembly::{Assembly, NamedText, Rendered, ToolSchema};
pub use cancel::{CancelOnDrop, CancelToken};
pub use config::{PromptConfig, DEFAULT_MAX_CONTEXT_BYTES, DEFAULT_MAX_PROMPT_BYTES};
pub use context::AssembleContext;
pub use error::{ProviderError, ProviderErrorKind};
pub use errors::{AssembleError, ConfigError, EntryKind, RegisterError, ScopeError};
pub use listener_changes::ListenerChange;
pub use names::{is_variable_name, scope_label, utf16_cmp};
pub use provider::{
    AssembleListener, ContextText, Next, SectionText, TextProvider, TextSource, ToolProvider,
    ToolSet, ToolSource, VariableProvider,
};
pub use registry::{
    EntryId, EntryInfo, Fiber, FiberId, ListenerOptions, ObserverId, Owner, Registration, Registry,
    SectionDef, BUILT_IN_OWNER,
};
pub use render::{
    interpolate_into, join_context_sections, render_context_sections,
    render_context_sections_within, render_context_snapshot, render_prompt, render_prompt_within,
    Budget, Budgeted, RenderError,
};
pub use timings::{CallTiming, PhaseTiming, TimingReport, Timings};
pub use tool_order::{order_tools, validate_tool_order, CollectedTool};

/// Name of the built-in identity section (order -100).
pub const IDENTITY_SECTION: &str = "harness:identity";
/// Order of the built-in identity section.
pub const IDENTITY_ORDER: f64 = -100.0;
/// The default identity text, used unless `[prompt] identity` sets another.
pub const DEFAULT_IDENTITY: &str = "You are an AI agent powered by the DeepSeek Harness SDK.";
/// Name of the built-in persona section.
pub const PERSONA_SECTION: &str = "deployment:persona";
/// Order of the built-in persona section.
pub const PERSONA_ORDER: f64 = 0.0;
/// The rest marker of `tool_order`: where tools not listed are inserted.
pub const TOOL_ORDER_REST: &str = "<unlisted-tools>";
/// Prefix of a runtime-context snapshot; followed by `\n\n` and the body.
pub const CONTEXT_SNAPSHOT_PREFIX: &str =
    "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.";
/// The text that says no runtime context applies any more.
pub const CONTEXT_CLEARED: &str =
    "Current runtime context: none. Earlier runtime-context snapshots no longer apply.";
/// Source plugin id of system messages and runtime-context snapshots.
pub const SYSTEM_PROMPT_PLUGIN_ID: &str = "@deepseek-ai/dsh-system-prompt";

#[cfg(test)]
mod tests;
