//! The registry: one global layer, one layer per scope key, the scope parent relation, and
//! the fibers that own every entry.
//!
//! State is copy-on-write (`state.rs`): an assembly clones an `Arc` under a read lock and
//! runs with no lock held, so assemblies are concurrent and a provider may even register
//! (the change shows up in the next assembly). Change observers are host-side: they run
//! after the change committed and the lock is released, so an observer cannot fail a
//! registration and roll it back, as a throwing observer does in the TypeScript DeepSeek
//! Harness.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::assembly::Assembly;
use super::config::PromptConfig;
use super::context::AssembleContext;
use super::errors::{AssembleError, ConfigError, RegisterError, ScopeError};
use super::provider::{AssembleListener, TextSource, ToolSource, VariableProvider};
use super::tool_order::validate_tool_order;
use super::{DEFAULT_IDENTITY, IDENTITY_ORDER, IDENTITY_SECTION, PERSONA_ORDER, PERSONA_SECTION};

mod fiber;
mod handoff;
mod insert;
mod inspect;
mod rank;
pub(crate) mod state;
mod swap;

pub use fiber::Fiber;
pub use inspect::{EntryInfo, Owner};

use insert::{duplicate_of, insert, precheck};
use state::{Meta, Removed, State};

/// Owner name of the built-in entries (identity, persona, the config suppressor).
pub const BUILT_IN_OWNER: &str = "prompt-host";

/// The built-in fiber: never handed out, so never disposed.
const BUILT_IN_FIBER: FiberId = FiberId(0);

/// Identifies one fiber (one loaded plugin instance, or one native registration group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FiberId(pub u64);

/// Identifies one registration; `Fiber::remove` takes it (a per-entry disposer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId(pub u64);

/// A section (or context) definition to register.
#[derive(Debug, Clone)]
pub struct SectionDef {
    /// Name; no format check.
    pub name: String,
    /// Render order; must be finite.
    pub order: f64,
    /// Static or dynamic text.
    pub text: TextSource,
    /// Marks this section as the entire system prompt. Ignored for contexts.
    pub complete: bool,
}

impl SectionDef {
    /// A non-complete definition.
    pub fn new(name: impl Into<String>, order: f64, text: TextSource) -> Self {
        Self {
            name: name.into(),
            order,
            text,
            complete: false,
        }
    }

    /// A non-complete definition with fixed text.
    pub fn fixed(name: impl Into<String>, order: f64, text: impl Into<Arc<str>>) -> Self {
        Self::new(name, order, TextSource::fixed(text))
    }

    /// The same definition marked complete.
    pub fn complete(mut self) -> Self {
        self.complete = true;
        self
    }
}

/// Options of a waterfall listener registration.
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

type Observer = Arc<dyn Fn() + Send + Sync>;

/// Where a removable entry lives (built-ins are not indexed, so they cannot be removed).
#[derive(Debug, Clone)]
struct Location {
    fiber: FiberId,
    scope: Option<Arc<str>>,
    listener: bool,
}

struct Inner {
    state: Arc<State>,
    index: BTreeMap<EntryId, Location>,
    next_entry: u64,
}

/// What a fiber asks to register, as one value ([`Fiber::register`], and [`Registry::swap`],
/// which registers a batch in place of a fiber's entries).
#[derive(Clone)]
pub enum Registration {
    /// A system-prompt section.
    Section(SectionDef),
    /// A runtime-context section.
    Context(SectionDef),
    /// A variable and its provider.
    Variable(String, Arc<dyn VariableProvider>),
    /// Tools, fixed or from a provider.
    Tools(ToolSource),
    /// A runtime-context suppressor.
    Suppressor,
    /// An assembly listener.
    Listener(Arc<dyn AssembleListener>, ListenerOptions),
}

/// The registry. Shared as `Arc<Registry>`; every method takes `&self`.
pub struct Registry {
    inner: RwLock<Inner>,
    observers: Mutex<Vec<(ObserverId, Observer)>>,
    next_fiber: AtomicU64,
    next_observer: AtomicU64,
    config: PromptConfig,
    /// How an async caller's assembly is handed to the blocking pool and waited for.
    handoff: handoff::Handoff,
}

impl Registry {
    /// Build a registry from config: validates `tool_order`, registers the built-ins
    /// (identity, persona, and a permanent suppressor when runtime context is off) in the
    /// global layer under a built-in fiber that is never disposed.
    pub fn new(config: PromptConfig) -> Result<Arc<Registry>, ConfigError> {
        if let Some(order) = &config.tool_order {
            validate_tool_order(order)?;
        }
        let registry = Registry {
            inner: RwLock::new(Inner {
                state: Arc::new(State::default()),
                index: BTreeMap::new(),
                next_entry: 1,
            }),
            observers: Mutex::new(Vec::new()),
            next_fiber: AtomicU64::new(BUILT_IN_FIBER.0 + 1),
            next_observer: AtomicU64::new(1),
            config,
            handoff: handoff::Handoff::default(),
        };
        let owner: Arc<str> = Arc::from(BUILT_IN_OWNER);
        let mut built_ins = Vec::new();
        if registry.config.include_harness_identity {
            let identity = registry
                .config
                .identity
                .as_deref()
                .unwrap_or(DEFAULT_IDENTITY);
            built_ins.push(Registration::Section(SectionDef::fixed(
                IDENTITY_SECTION,
                IDENTITY_ORDER,
                identity,
            )));
        }
        built_ins.push(Registration::Section(SectionDef::fixed(
            PERSONA_SECTION,
            PERSONA_ORDER,
            registry.config.persona.as_str(),
        )));
        if !registry.config.include_runtime_context {
            built_ins.push(Registration::Suppressor);
        }
        for registration in built_ins {
            // The global layer is empty and the built-in names differ: this cannot fail.
            if let Err(error) = registry.register(BUILT_IN_FIBER, &owner, None, None, registration)
            {
                debug_assert!(false, "built-in registration failed: {error}");
            }
        }
        Ok(Arc::new(registry))
    }

    /// The configuration this registry was built from.
    pub fn config(&self) -> &PromptConfig {
        &self.config
    }

    /// Start a fiber owned by `owner` (a plugin name, used in errors and `inspect`), whose
    /// registrations go to `scope`'s layer (`None` = global). Dropping the handle disposes it.
    pub fn fiber(self: &Arc<Self>, owner: &str, scope: Option<&str>) -> Fiber {
        let id = FiberId(self.next_fiber.fetch_add(1, Ordering::Relaxed));
        Fiber::new(
            Arc::clone(self),
            id,
            Arc::from(owner),
            scope.map(Arc::from),
            None,
        )
    }

    /// Bind `key`'s parent once: re-binding or a cycle is refused.
    pub fn bind_scope_parent(&self, key: &str, parent: &str) -> Result<(), ScopeError> {
        let mut inner = self.write();
        if let Some(existing) = inner.state.parents.get(key) {
            return Err(ScopeError::AlreadyBound {
                key: key.to_string(),
                existing: existing.to_string(),
            });
        }
        if inner.state.chain(parent).iter().any(|k| &**k == key) {
            return Err(ScopeError::Cycle {
                key: key.to_string(),
                parent: parent.to_string(),
            });
        }
        let state = Arc::make_mut(&mut inner.state);
        Arc::make_mut(&mut state.parents).insert(Arc::from(key), Arc::from(parent));
        Ok(())
    }

    /// The chain of `key`, nearest first (`[key, parent, …]`).
    pub fn scope_chain(&self, key: &str) -> Vec<Arc<str>> {
        self.snapshot().chain(key)
    }

    /// Remove every registration made through scope `key` (all fibers loaded into it), one
    /// change notification per removed entry. Idempotent.
    pub fn dispose_scope(&self, key: &str) {
        self.remove_where(|loc| loc.scope == Some(key));
    }

    /// Call `f` after every committed registration and every removal.
    pub fn subscribe(&self, f: Arc<dyn Fn() + Send + Sync>) -> ObserverId {
        let id = ObserverId(self.next_observer.fetch_add(1, Ordering::Relaxed));
        self.observers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, f));
        id
    }

    /// Stop notifying an observer.
    pub fn unsubscribe(&self, id: ObserverId) {
        let removed: Vec<(ObserverId, Observer)> = {
            let mut observers = self
                .observers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let (gone, kept) = std::mem::take(&mut *observers)
                .into_iter()
                .partition(|(observer, _)| *observer == id);
            *observers = kept;
            gone
        };
        // Dropped with no lock held: an observer may own a fiber.
        drop(removed);
    }

    /// Assemble for `scope` on a snapshot of the registry, on the calling thread.
    /// `ctx.scope_chain` is filled from `scope`.
    pub fn assemble_blocking(
        &self,
        scope: Option<&str>,
        ctx: AssembleContext,
    ) -> Result<Assembly, AssembleError> {
        let state = self.snapshot();
        super::assemble::assemble(&state, self.config.tool_order.as_deref(), scope, ctx)
    }

    /// Assemble for `scope` off the async executor (providers may be Wasm calls with
    /// deadlines); assemblies of different scopes run concurrently.
    pub async fn assemble(
        self: &Arc<Self>,
        scope: Option<&str>,
        ctx: AssembleContext,
    ) -> Result<Assembly, AssembleError> {
        let span = tracing::info_span!(
            "prompt_host.assemble",
            prompt_host.scope = scope.unwrap_or("global"),
        );
        // A thread marked as one that may block (the thread `serve` runs a session's request
        // on, an in-process client's calling thread) assembles itself: handing the work to
        // the blocking pool and being woken for its result costs more than a whole
        // assembly there (docs/benchmarks.md §1), and protects nothing, since no runtime
        // worker is held. Cancellation is the context's signal either way.
        // So does a caller that asked for it (`AssembleContext::on_caller_thread`) on a
        // thread that can leave its runtime, trading interruption by drop for the hand-off.
        if crate::blocking::can_block_here()
            || (ctx.on_caller_thread && crate::blocking::can_leave_runtime())
        {
            return crate::blocking::block_here(|| {
                crate::blocking::allow_blocking(|| {
                    span.in_scope(|| self.assemble_blocking(scope, ctx))
                })
            });
        }
        let registry = Arc::clone(self);
        let scope = scope.map(str::to_string);
        // The caller's subscriber goes with the span to the blocking thread, so that the
        // plugin calls' spans are its children there too (nothing to carry when disabled).
        let dispatch =
            (!span.is_disabled()).then(|| tracing::dispatcher::get_default(Clone::clone));
        let task = self.handoff.run(move || {
            let assemble = || {
                span.in_scope(|| {
                    crate::blocking::allow_blocking(|| {
                        registry.assemble_blocking(scope.as_deref(), ctx)
                    })
                })
            };
            match dispatch {
                Some(dispatch) => tracing::dispatcher::with_default(&dispatch, assemble),
                None => assemble(),
            }
        });
        match task.await {
            Ok(result) => result,
            // A panicking provider panics the caller, as a synchronous call would.
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => Err(AssembleError::Cancelled(error.to_string())),
        }
    }

    /// The current state, for one assembly or one read.
    pub(crate) fn snapshot(&self) -> Arc<State> {
        Arc::clone(&self.read().state)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Register one entry for `fiber`. Validation that does not need the layer runs first;
    /// the duplicate check reads the layer before anything is created, so a refused
    /// registration leaves no empty layer behind and notifies nobody.
    /// `rank`: the fiber's rank (`rank.rs`), else the entry's own id.
    pub(crate) fn register(
        &self,
        fiber: FiberId,
        owner: &Arc<str>,
        scope: Option<&Arc<str>>,
        rank: Option<u64>,
        registration: Registration,
    ) -> Result<EntryId, RegisterError> {
        precheck(&registration)?;
        let id = {
            let mut inner = self.write();
            // A refused registration is dropped after the guard (it is a parameter), never
            // under the lock: its provider may own the last handle to a fiber.
            if let Some(error) = duplicate_of(&inner.state, scope.map(|s| &**s), &registration) {
                return Err(error);
            }
            let id = EntryId(inner.next_entry);
            let meta = Meta {
                id,
                rank: rank.unwrap_or(id.0),
                fiber,
                owner: Arc::clone(owner),
                scope: scope.cloned(),
            };
            let listener = matches!(registration, Registration::Listener(..));
            insert(Arc::make_mut(&mut inner.state), meta, registration);
            inner.next_entry += 1;
            if fiber != BUILT_IN_FIBER {
                inner.index.insert(
                    id,
                    Location {
                        fiber,
                        scope: scope.cloned(),
                        listener,
                    },
                );
            }
            id
        };
        self.notify(1);
        Ok(id)
    }

    /// Remove every indexed entry matching `pred`, in registration order, then notify once
    /// per removed entry.
    pub(crate) fn remove_where(&self, pred: impl Fn(&LocationView<'_>) -> bool) -> usize {
        // Removed entries are dropped only after the lock is released (see `Removed`).
        let mut graveyard: Vec<Removed> = Vec::new();
        let removed = {
            let mut inner = self.write();
            let doomed: Vec<(EntryId, Location)> = inner
                .index
                .iter()
                .filter(|(id, loc)| {
                    pred(&LocationView {
                        id: **id,
                        fiber: loc.fiber,
                        scope: loc.scope.as_deref(),
                    })
                })
                .map(|(id, loc)| (*id, loc.clone()))
                .collect();
            if doomed.is_empty() {
                return 0;
            }
            let state = Arc::make_mut(&mut inner.state);
            for (id, loc) in &doomed {
                let entry = if loc.listener {
                    state.remove_listener(*id)
                } else {
                    state.remove_from_layer(loc.scope.as_ref(), *id)
                };
                graveyard.extend(entry);
            }
            for (id, _) in &doomed {
                inner.index.remove(id);
            }
            doomed.len()
        };
        drop(graveyard);
        self.notify(removed);
        removed
    }

    /// Call every observer `times` times, with no lock held.
    fn notify(&self, times: usize) {
        let observers: Vec<Observer> = self
            .observers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, f)| Arc::clone(f))
            .collect();
        for _ in 0..times {
            for observer in &observers {
                observer();
            }
        }
    }
}

/// What `remove_where` predicates see of an entry.
pub(crate) struct LocationView<'a> {
    pub id: EntryId,
    pub fiber: FiberId,
    pub scope: Option<&'a str>,
}

#[cfg(test)]
mod tests;
