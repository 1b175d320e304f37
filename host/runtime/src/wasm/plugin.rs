//! A loaded plugin: the `LoadedPlugin` handle that owns its fiber (dropping or disposing it
//! removes every contribution), loading (a [`LoadRequest`]), reloading, and the generations
//! an instruction provider publishes.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::code::{Compiled, PluginCode};
use super::contract::{ServerInstructions, World};
use super::declare::{Declaration, Registration};
use super::engine::EngineCtx;
use super::error::WasmError;
use super::failure::CallFailure;
use super::ident::{scope_label, Ident};
use super::sandbox::grants::Granted;
use super::supervisor::Supervisor;
use crate::policy::{Grants, PluginOptions};
use crate::prompt::{Fiber, FiberId, Registry};

/// The health of a loaded plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PluginHealth {
    /// The longest run of consecutive failures of one entry (reset by its success).
    pub consecutive_failures: u32,
    /// A `skip` plugin that is no longer called.
    pub quarantined: bool,
    /// Why the plugin can no longer be called, if so.
    pub unavailable: Option<String>,
}

/// One published generation of an instruction provider: the fiber holding its entries.
struct Generation {
    fiber: Fiber,
}

/// What to load: one plugin's compiled code into a scope of a registry.
pub(crate) struct LoadRequest<'a> {
    pub(crate) engine: Arc<EngineCtx>,
    pub(crate) compiled: Arc<Compiled>,
    pub(crate) registry: &'a Arc<Registry>,
    pub(crate) name: &'a str,
    pub(crate) scope: Option<&'a str>,
    /// Handed to `init`.
    pub(crate) config_json: String,
    pub(crate) options: PluginOptions,
    /// What was granted, opened (a reload keeps the first load's).
    pub(crate) granted: Arc<Granted>,
    /// Replace that fiber's entries in one registry step (a reload) instead of registering
    /// `init`'s declarations as they come.
    pub(crate) replacing: Option<FiberId>,
}

impl LoadRequest<'_> {
    fn call_error(&self, export: &str, fail: CallFailure) -> WasmError {
        WasmError::Call {
            plugin: self.name.to_string(),
            export: export.to_string(),
            scope: self.scope.map(str::to_string),
            kind: fail.kind,
            message: fail.message,
        }
    }
}

/// A plugin loaded into a scope. Owns the fiber holding every entry it declared; dropping it
/// (or [`LoadedPlugin::dispose`]) removes them all and, once no assembly still holds one of
/// its providers, drops the instance.
pub struct LoadedPlugin {
    cell: Arc<Supervisor>,
    registry: Arc<Registry>,
    fiber: Arc<Fiber>,
    declared: Vec<Declaration>,
    generation: Mutex<Option<Generation>>,
    /// An instruction provider's place among the entries its generations tie with, taken
    /// when it was loaded (see `Registry::reserve_rank`): what its server publishes, and
    /// when, does not change where it renders.
    rank: Option<u64>,
    timing: LoadTiming,
}

/// How long a plugin's load took: instantiating its component, then running its `init`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadTiming {
    /// Instantiating the component (its code was compiled, or taken from a cache, before).
    pub instantiate: std::time::Duration,
    /// Running `init` with its config, declarations included.
    pub init: std::time::Duration,
}

impl LoadedPlugin {
    /// Open what `options` grants, instantiate `compiled` and run `init(config_json)` with
    /// declarations going straight into a fiber owned by `name` in `scope`.
    pub(crate) fn load(
        engine: Arc<EngineCtx>,
        compiled: Arc<Compiled>,
        registry: &Arc<Registry>,
        name: &str,
        scope: Option<&str>,
        config_json: String,
        options: PluginOptions,
    ) -> Result<Self, WasmError> {
        let granted = options.grants.open().map_err(|message| WasmError::Grant {
            plugin: name.to_string(),
            scope: scope.map(str::to_string),
            message,
        })?;
        let request = LoadRequest {
            engine,
            compiled,
            registry,
            name,
            scope,
            config_json,
            options,
            granted: Arc::new(granted),
            replacing: None,
        };
        crate::blocking::run_blocking(|| Self::load_here(request))
    }

    /// A fresh instance of `code` with this plugin's name, scope, config and options, whose
    /// declarations replace this plugin's in one registry step (see `Registry::swap`): an
    /// assembly sees the old plugin or the new one, never neither. A failed `init` or a
    /// refused declaration leaves this plugin in place. This handle then owns nothing; drop
    /// it. MCP instruction providers are not reloaded (their generations are the server's).
    pub fn reload(&self, code: &PluginCode) -> Result<LoadedPlugin, WasmError> {
        if self.is_instruction_provider() {
            return Err(WasmError::Unsupported {
                plugin: self.name().to_string(),
                message: "an MCP instruction provider is reloaded by reconnecting its server"
                    .into(),
            });
        }
        let request = LoadRequest {
            engine: self.cell.engine.clone(),
            compiled: code.compiled().clone(),
            registry: &self.registry,
            name: self.name(),
            scope: self.scope(),
            config_json: self.cell.config_json.clone(),
            options: self.cell.options.clone(),
            // The directories opened at the first load, not the paths again.
            granted: self.cell.granted.clone(),
            replacing: Some(self.fiber.id()),
        };
        crate::blocking::run_blocking(|| Self::load_here(request))
    }

    /// Load, registering `init`'s declarations as they come, or (`replacing`) all at once in
    /// place of that fiber's entries.
    fn load_here(request: LoadRequest<'_>) -> Result<Self, WasmError> {
        let LoadRequest {
            registry,
            name,
            scope,
            replacing,
            ..
        } = request;
        let cell = Supervisor::new(
            Ident::new(name, scope),
            request.options.clone(),
            request.granted.clone(),
            request.engine.clone(),
            request.compiled.clone(),
            request.config_json.clone(),
        );
        let fiber = Arc::new(registry.fiber(name, scope));
        // Hold the slot while init runs: an assembly that already sees a dynamic entry
        // waits for init instead of re-instantiating.
        let mut slot = cell.lock().map_err(|fail| WasmError::Engine {
            plugin: name.to_string(),
            scope: scope.map(str::to_string),
            message: fail.message,
        })?;
        let started = std::time::Instant::now();
        let mut instance = cell
            .instantiate()
            .map_err(|f| request.call_error("(instantiate)", f))?;
        let instantiated = started.elapsed();
        let window = match replacing {
            None => Registration::direct(fiber.clone()),
            Some(_) => Registration::buffered(scope.is_some()),
        };
        let timeout = cell.limits.init_timeout();
        let config = &request.config_json;
        let (result, window) = instance.with_registration(window, |inst| {
            inst.call(timeout, |b, s| b.init(s, config), |_| 0)
        });
        if let Err(fail) = result {
            slot.dead = Some("init failed".into());
            drop(slot);
            fiber.dispose();
            return Err(request.call_error("init", fail));
        }
        let declared = match (window, replacing) {
            (Registration::Direct { declared, .. }, _) => declared,
            (
                Registration::Buffered {
                    entries, declared, ..
                },
                Some(old),
            ) => {
                registry
                    .swap(old, &fiber, entries)
                    .map_err(|error| WasmError::Register {
                        plugin: name.to_string(),
                        scope: scope.map(str::to_string),
                        error,
                    })?;
                declared
            }
            _ => Vec::new(),
        };
        cell.live.store(instance.id, Ordering::Release);
        slot.instance = Some(instance);
        drop(slot);
        let timing = LoadTiming {
            instantiate: instantiated,
            init: started.elapsed() - instantiated,
        };
        log::info!(
            "plugin \"{name}\" ({}): loaded, {} declarations (instantiate {:?}, init {:?})",
            scope_label(scope),
            declared.len(),
            timing.instantiate,
            timing.init
        );
        let rank = provider_rank(&cell, registry);
        Ok(Self {
            cell,
            registry: registry.clone(),
            fiber,
            declared,
            generation: Mutex::new(None),
            rank,
            timing,
        })
    }

    /// A plugin whose entries are in `fiber` and whose live instance is `cell`'s (one
    /// loaded ahead of its turn, see `ahead.rs`).
    pub(super) fn from_parts(
        cell: Arc<Supervisor>,
        registry: Arc<Registry>,
        fiber: Arc<Fiber>,
        declared: Vec<Declaration>,
        timing: LoadTiming,
    ) -> Self {
        let rank = provider_rank(&cell, &registry);
        Self {
            cell,
            registry,
            fiber,
            declared,
            generation: Mutex::new(None),
            rank,
            timing,
        }
    }

    /// Instantiate `compiled` on its own, run `init(config_json)` with declarations
    /// buffered (nothing reaches any registry) and return them. For `check`.
    pub(crate) fn probe(
        engine: Arc<EngineCtx>,
        compiled: Arc<Compiled>,
        name: &str,
        config_json: String,
        options: PluginOptions,
    ) -> Result<Vec<Declaration>, CallFailure> {
        let granted = options.grants.open().map_err(|message| {
            CallFailure::new(crate::prompt::ProviderErrorKind::Unavailable, message)
        })?;
        let cell = Supervisor::new(
            Ident::new(name, None),
            options,
            Arc::new(granted),
            engine,
            compiled,
            config_json,
        );
        crate::blocking::run_blocking(|| {
            let mut instance = cell.instantiate()?;
            let timeout = cell.limits.init_timeout();
            let config = cell.config_json.clone();
            let (result, window) = instance
                .with_registration(Registration::buffered(false), |inst| {
                    inst.call(timeout, |b, s| b.init(s, &config), |_| 0)
                });
            result?;
            Ok(window.declared().to_vec())
        })
    }

    /// The plugin name (owner of its fiber).
    pub fn name(&self) -> &str {
        &self.cell.ident.plugin
    }

    /// The scope it was loaded into (`None` = global).
    pub fn scope(&self) -> Option<&str> {
        self.cell.ident.scope.as_deref()
    }

    /// What `init` declared.
    pub fn declarations(&self) -> &[Declaration] {
        &self.declared
    }

    /// Whether the component implements `instruction-provider` (has `publish`).
    pub fn is_instruction_provider(&self) -> bool {
        self.cell.compiled.world == World::InstructionProvider
    }

    pub(crate) fn cell(&self) -> &Arc<Supervisor> {
        &self.cell
    }

    /// The capabilities the plugin was granted.
    pub fn grants(&self) -> &Grants {
        &self.cell.options.grants
    }

    /// How long its load took (instantiation and `init`).
    pub fn load_timing(&self) -> LoadTiming {
        self.timing
    }

    /// Failure counters and availability.
    pub fn health(&self) -> PluginHealth {
        PluginHealth {
            consecutive_failures: self.cell.max_failures(),
            quarantined: self.cell.is_quarantined(),
            unavailable: self.cell.unavailable(),
        }
    }

    /// Run `publish(server)` with declarations buffered. They form one generation that
    /// replaces the previous one in one registry step when the call and every registration
    /// succeed (an assembly sees one generation or the other, never neither); on any error
    /// the previous generation stays. Every generation takes the place the plugin's load
    /// took among the entries it ties with. Returns what was declared.
    pub fn publish(&self, server: &ServerInstructions) -> Result<Vec<Declaration>, WasmError> {
        let plugin = self.name().to_string();
        let scope = self.scope().map(str::to_string);
        if !self.is_instruction_provider() {
            return Err(WasmError::Unsupported {
                plugin,
                message: "does not implement world `instruction-provider` (no `publish` export)"
                    .into(),
            });
        }
        let scoped = scope.is_some();
        let timeout = self.cell.limits.init_timeout();
        let outcome = self.cell.enter(|inst| {
            let (result, window) = inst.with_registration(Registration::buffered(scoped), |inst| {
                inst.call(timeout, |b, s| b.publish(s, server), |_| 0)
            });
            result.map(|()| window)
        });
        let (entries, declared) = match outcome {
            Ok(Registration::Buffered {
                entries, declared, ..
            }) => (entries, declared),
            Ok(_) => (Vec::new(), Vec::new()),
            Err(fail) => {
                return Err(WasmError::Call {
                    plugin,
                    export: "publish".into(),
                    scope,
                    kind: fail.kind,
                    message: fail.message,
                })
            }
        };
        let mut generation = self.generation.lock().map_err(|_| WasmError::Engine {
            plugin: plugin.clone(),
            scope: scope.clone(),
            message: "publish lock poisoned".into(),
        })?;
        let fiber = match self.rank {
            Some(rank) => self.registry.fiber_ranked(&plugin, scope.as_deref(), rank),
            None => self.registry.fiber(&plugin, scope.as_deref()),
        };
        // The first generation replaces the new fiber's own (empty) set of entries.
        let old = generation.as_ref().map_or(fiber.id(), |g| g.fiber.id());
        match self.registry.swap(old, &fiber, entries) {
            Ok(()) => {
                // The old fiber holds nothing now; it is dropped with the lock released.
                let replaced = generation.replace(Generation { fiber });
                drop(generation);
                drop(replaced);
                Ok(declared)
            }
            Err(error) => Err(WasmError::Register {
                plugin,
                scope,
                error,
            }),
        }
    }

    /// Remove every contribution (init's and published ones). Idempotent.
    pub fn dispose(&self) {
        self.fiber.dispose();
        if let Ok(mut generation) = self.generation.lock() {
            if let Some(g) = generation.take() {
                g.fiber.dispose();
            }
        }
    }
}

/// The rank an instruction provider's generations take: the place of its load, taken now.
/// Other plugins register only while they load, in their turn, and need none.
fn provider_rank(cell: &Supervisor, registry: &Registry) -> Option<u64> {
    (cell.compiled.world == World::InstructionProvider).then(|| registry.reserve_rank())
}

impl Drop for LoadedPlugin {
    fn drop(&mut self) {
        self.dispose();
    }
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.name())
            .field("scope", &self.scope())
            .field("declarations", &self.declared.len())
            .finish()
    }
}
