//! `Fiber`: the registration handle of one plugin instance (or one native group). Every
//! entry it registers is owned by it; disposing it (or dropping it) removes exactly those.

use std::sync::Arc;

use super::super::errors::RegisterError;
use super::super::provider::{AssembleListener, ToolSource, VariableProvider};
use super::{EntryId, FiberId, ListenerOptions, Registration, Registry, SectionDef};

/// A registration handle for one fiber. Dropping it (or `dispose`) removes every entry it
/// registered. It stays usable after `dispose` or `Registry::dispose_scope`: registering
/// again creates a fresh layer.
pub struct Fiber {
    registry: Arc<Registry>,
    id: FiberId,
    owner: Arc<str>,
    scope: Option<Arc<str>>,
    /// The rank its entries take among those they tie with (`rank.rs`); `None`: each
    /// entry's own, its registration order.
    rank: Option<u64>,
}

impl Fiber {
    pub(super) fn new(
        registry: Arc<Registry>,
        id: FiberId,
        owner: Arc<str>,
        scope: Option<Arc<str>>,
        rank: Option<u64>,
    ) -> Self {
        Self {
            registry,
            id,
            owner,
            scope,
            rank,
        }
    }

    /// The rank its entries take, when it was given one ([`Registry::fiber_ranked`]).
    pub fn rank(&self) -> Option<u64> {
        self.rank
    }

    /// This fiber's id.
    pub fn id(&self) -> FiberId {
        self.id
    }

    /// The owner name given at creation.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The scope this fiber registers into (`None` = global).
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The registry this fiber registers into.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Register one entry of any kind (what a batch of [`Registration`]s holds, one by one).
    pub fn register(&self, registration: Registration) -> Result<EntryId, RegisterError> {
        self.registry.register(
            self.id,
            &self.owner,
            self.scope.as_ref(),
            self.rank,
            registration,
        )
    }

    /// Register through a path that cannot be refused (tools, suppressors, listeners).
    fn register_infallible(&self, registration: Registration) -> EntryId {
        match self.register(registration) {
            Ok(id) => id,
            // Only named tables and orders are validated; these registrations have neither.
            Err(_) => EntryId(0),
        }
    }

    /// Register a section (on error, nothing is registered and no observer is notified).
    pub fn section(&self, def: SectionDef) -> Result<EntryId, RegisterError> {
        self.register(Registration::Section(def))
    }

    /// Register a runtime context (`def.complete` is ignored).
    pub fn context(&self, def: SectionDef) -> Result<EntryId, RegisterError> {
        self.register(Registration::Context(def))
    }

    /// Register a variable provider.
    pub fn variable(
        &self,
        name: &str,
        provider: Arc<dyn VariableProvider>,
    ) -> Result<EntryId, RegisterError> {
        self.register(Registration::Variable(name.to_string(), provider))
    }

    /// Register a tool provider (no validation at registration).
    pub fn tools(&self, source: ToolSource) -> EntryId {
        self.register_infallible(Registration::Tools(source))
    }

    /// Register a runtime-context suppressor.
    pub fn suppress_runtime_context(&self) -> EntryId {
        self.register_infallible(Registration::Suppressor)
    }

    /// Register a waterfall listener, tagged with this fiber's scope.
    pub fn listener(
        &self,
        listener: Arc<dyn AssembleListener>,
        options: ListenerOptions,
    ) -> EntryId {
        self.register_infallible(Registration::Listener(listener, options))
    }

    /// Remove one entry of this fiber; a second call (or another fiber's id) does nothing.
    pub fn remove(&self, id: EntryId) {
        let fiber = self.id;
        self.registry
            .remove_where(|loc| loc.id == id && loc.fiber == fiber);
    }

    /// Remove every entry of this fiber (one notification per entry). Idempotent.
    pub fn dispose(&self) {
        let fiber = self.id;
        self.registry.remove_where(|loc| loc.fiber == fiber);
    }
}

impl Drop for Fiber {
    fn drop(&mut self) {
        self.dispose();
    }
}

impl std::fmt::Debug for Fiber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fiber")
            .field("id", &self.id)
            .field("owner", &self.owner)
            .field("scope", &self.scope)
            .field("rank", &self.rank)
            .finish()
    }
}
