//! The registry: one global layer, one layer per scope key, the scope parent relation, and
//! the fibers that own every entry (SPEC §1.6, §2, §5).
//!
//! SKELETON: signatures are the contract other modules code against; bodies to be written.

use std::sync::Arc;

use super::assembly::Assembly;
use super::config::PromptConfig;
use super::context::AssembleContext;
use super::errors::{AssembleError, ConfigError, RegisterError, ScopeError};
use super::provider::{AssembleListener, TextSource, ToolSource, VariableProvider};

/// Identifies one fiber (one loaded plugin instance, or one native registration group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiberId(pub u64);

/// Identifies one registration; `Fiber::remove` takes it (a per-entry disposer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId(pub u64);

/// A section (or context) definition to register.
#[derive(Debug, Clone)]
pub struct SectionDef {
    /// Name; no format check (SPEC §1.1).
    pub name: String,
    /// Render order; must be finite.
    pub order: f64,
    /// Static or dynamic text.
    pub text: TextSource,
    /// Marks this section as the entire system prompt (SPEC §3.6). Ignored for contexts.
    pub complete: bool,
}

/// Options of a waterfall listener registration (SPEC §3.8).
#[derive(Debug, Clone, Copy, Default)]
pub struct ListenerOptions {
    /// Insert at the front of the listener list instead of appending.
    pub prepend: bool,
    /// Receive every assembly, whatever its scope.
    pub global: bool,
}

/// Identifies a change observer registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObserverId(pub u64);

/// The registry. Shared as `Arc<Registry>`; every method takes `&self`.
pub struct Registry {
    _private: (),
}

impl Registry {
    /// Build a registry from config: validates `tool_order` (SPEC §2.2), registers the
    /// built-ins (identity, persona, and a permanent suppressor when runtime context is off)
    /// in the global layer under a built-in fiber that is never disposed.
    pub fn new(config: PromptConfig) -> Result<Arc<Registry>, ConfigError> {
        let _ = config;
        todo!()
    }

    /// Start a fiber owned by `owner` (a plugin name, used in errors and `inspect`), whose
    /// registrations go to `scope`'s layer (`None` = global). Dropping the handle disposes it.
    pub fn fiber(self: &Arc<Self>, owner: &str, scope: Option<&str>) -> Fiber {
        let _ = (owner, scope);
        todo!()
    }

    /// Bind `key`'s parent once (SPEC §5): re-binding or a cycle is refused.
    pub fn bind_scope_parent(&self, key: &str, parent: &str) -> Result<(), ScopeError> {
        let _ = (key, parent);
        todo!()
    }

    /// The chain of `key`, nearest first (`[key, parent, …]`).
    pub fn scope_chain(&self, key: &str) -> Vec<Arc<str>> {
        let _ = key;
        todo!()
    }

    /// Remove every registration made through scope `key` (all fibers loaded into it), one
    /// change notification per removed entry. Idempotent.
    pub fn dispose_scope(&self, key: &str) {
        let _ = key;
        todo!()
    }

    /// Call `f` after every committed registration and every removal.
    pub fn subscribe(&self, f: Arc<dyn Fn() + Send + Sync>) -> ObserverId {
        let _ = f;
        todo!()
    }

    /// Stop notifying an observer.
    pub fn unsubscribe(&self, id: ObserverId) {
        let _ = id;
        todo!()
    }

    /// Assemble for `scope` (SPEC §3) on a snapshot of the registry, on the calling thread.
    /// `ctx.scope_chain` is filled from `scope`.
    pub fn assemble_blocking(
        &self,
        scope: Option<&str>,
        ctx: AssembleContext,
    ) -> Result<Assembly, AssembleError> {
        let _ = (scope, ctx);
        todo!()
    }

    /// Assemble for `scope` off the async executor (providers may be Wasm calls with
    /// deadlines); assemblies of different scopes run concurrently.
    pub async fn assemble(
        self: &Arc<Self>,
        scope: Option<&str>,
        ctx: AssembleContext,
    ) -> Result<Assembly, AssembleError> {
        let _ = (scope, ctx);
        todo!()
    }
}

/// A registration handle for one fiber. Dropping it (or `dispose`) removes every entry it
/// registered.
pub struct Fiber {
    _private: (),
}

impl Fiber {
    /// This fiber's id.
    pub fn id(&self) -> FiberId {
        todo!()
    }

    /// The owner name given at creation.
    pub fn owner(&self) -> &str {
        todo!()
    }

    /// The scope this fiber registers into (`None` = global).
    pub fn scope(&self) -> Option<&str> {
        todo!()
    }

    /// Register a section (SPEC §2.1 errors; nothing registered, no notification on error).
    pub fn section(&self, def: SectionDef) -> Result<EntryId, RegisterError> {
        let _ = def;
        todo!()
    }

    /// Register a runtime context (`def.complete` is ignored).
    pub fn context(&self, def: SectionDef) -> Result<EntryId, RegisterError> {
        let _ = def;
        todo!()
    }

    /// Register a variable provider.
    pub fn variable(
        &self,
        name: &str,
        provider: Arc<dyn VariableProvider>,
    ) -> Result<EntryId, RegisterError> {
        let _ = (name, provider);
        todo!()
    }

    /// Register a tool provider (no validation at registration).
    pub fn tools(&self, source: ToolSource) -> EntryId {
        let _ = source;
        todo!()
    }

    /// Register a runtime-context suppressor.
    pub fn suppress_runtime_context(&self) -> EntryId {
        todo!()
    }

    /// Register a waterfall listener, tagged with this fiber's scope.
    pub fn listener(&self, listener: Arc<dyn AssembleListener>, options: ListenerOptions) -> EntryId {
        let _ = (listener, options);
        todo!()
    }

    /// Remove one entry; a second call does nothing.
    pub fn remove(&self, id: EntryId) {
        let _ = id;
        todo!()
    }

    /// Remove every entry of this fiber (one notification per entry). Idempotent.
    pub fn dispose(&self) {
        todo!()
    }
}
