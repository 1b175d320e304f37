//! A loaded plugin: the shared cell its providers call through, and the `LoadedPlugin`
//! handle that owns its fiber (dropping or disposing it removes every contribution).
//!
//! Trap recovery: a trapped instance is never entered again. The next call instantiates a
//! fresh one from the `InstancePre` and re-runs `init` with the same config in *shadow*
//! mode — declarations are accepted and discarded, because the first run's entries stand —
//! so the plugin's internal state is rebuilt the way it was first built. If that shadow
//! `init` fails, the plugin is marked dead and every later call fails `Unavailable` until it
//! is reloaded. Under `on_error = "skip"`, repeated failures quarantine it instead.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::bindings::instruction_provider::exports::prompt_host::plugin::instructions::McpServer;
use super::error::WasmError;
use super::grants::Granted;
use super::instance::{CallFailure, Instance};
use super::limits::{Limits, OnError, PluginOptions};
use super::registry_host::{Decl, Declaration, Registration};
use super::runtime::{Compiled, RuntimeInner, World};
use super::state::Ident;
use crate::prompt::{Fiber, ProviderError, ProviderErrorKind, Registry};

#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) instance: Option<Instance>,
    /// Why the plugin can no longer be called (shadow init failed, init failed).
    dead: Option<String>,
}

/// What providers and listeners of one plugin instance share.
pub(crate) struct PluginCell {
    pub(crate) ident: Ident,
    pub(crate) options: PluginOptions,
    pub(crate) limits: Arc<Limits>,
    /// What the plugin was granted, opened when it was first loaded (a reload keeps it).
    pub(crate) granted: Arc<Granted>,
    runtime: Arc<RuntimeInner>,
    compiled: Arc<Compiled>,
    config_json: String,
    me: Weak<PluginCell>,
    slot: Mutex<Slot>,
    /// Consecutive failures per entry (`export` + entry name): a plugin with one broken
    /// entry is quarantined even while its other entries succeed.
    failures: Mutex<HashMap<String, u32>>,
    /// Whether `failures` ever counted one: until then a success has nothing to reset and
    /// skips the lock (every successful call reports one).
    ever_failed: AtomicBool,
    quarantined: AtomicBool,
    /// The id of the live instance (0: none, after a failure dropped it). A kept answer
    /// (`control.keep-until-context-changes`) is reused only while its instance is live.
    live: AtomicU64,
}

impl PluginCell {
    /// A cell for one instance of `compiled`, with nothing instantiated yet.
    fn new(
        ident: &Ident,
        options: PluginOptions,
        granted: Arc<Granted>,
        runtime: &Arc<RuntimeInner>,
        compiled: &Arc<Compiled>,
        config_json: &str,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| PluginCell {
            ident: ident.clone(),
            limits: Arc::new(options.limits.clone()),
            granted,
            options,
            runtime: runtime.clone(),
            compiled: compiled.clone(),
            config_json: config_json.to_string(),
            me: me.clone(),
            slot: Mutex::new(Slot::default()),
            failures: Mutex::new(HashMap::new()),
            ever_failed: AtomicBool::new(false),
            quarantined: AtomicBool::new(false),
            live: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, Slot>, ProviderError> {
        self.slot.lock().map_err(|_| {
            ProviderError::new(
                ProviderErrorKind::Unavailable,
                format!(
                    "plugin \"{}\" ({}): instance lock poisoned",
                    self.ident.plugin,
                    self.ident.scope_label()
                ),
            )
        })
    }

    /// Run `f` on the live instance (one call at a time), re-instantiating a trapped one
    /// first; a failure that poisons the instance drops it. The call runs where blocking is
    /// allowed (see [`crate::blocking`]), whatever thread the caller is on.
    pub(crate) fn with_instance<R: Send>(
        &self,
        export: &'static str,
        f: impl FnOnce(&mut Instance) -> Result<R, CallFailure> + Send,
    ) -> Result<R, ProviderError> {
        crate::blocking::run_blocking(|| self.with_instance_here(export, f))
    }

    fn with_instance_here<R>(
        &self,
        export: &'static str,
        f: impl FnOnce(&mut Instance) -> Result<R, CallFailure>,
    ) -> Result<R, ProviderError> {
        let mut slot = self.lock()?;
        if let Some(reason) = &slot.dead {
            return Err(ProviderError::new(
                ProviderErrorKind::Unavailable,
                format!(
                    "plugin \"{}\" export \"{export}\" ({}): plugin unavailable: {reason}",
                    self.ident.plugin,
                    self.ident.scope_label()
                ),
            ));
        }
        let instance = match &mut slot.instance {
            Some(instance) => instance,
            empty => match self.shadow_instance() {
                Ok(instance) => {
                    self.live.store(instance.id, Ordering::Release);
                    empty.insert(instance)
                }
                Err(fail) => {
                    let reason =
                        format!("re-instantiation after a failure failed: {}", fail.message);
                    log::error!(
                        "plugin \"{}\" ({}): {reason}; marked unavailable until reloaded",
                        self.ident.plugin,
                        self.ident.scope_label()
                    );
                    slot.dead = Some(reason.clone());
                    return Err(ProviderError::new(
                        ProviderErrorKind::Unavailable,
                        format!(
                            "plugin \"{}\" export \"{export}\" ({}): {reason}",
                            self.ident.plugin,
                            self.ident.scope_label()
                        ),
                    ));
                }
            },
        };
        match f(instance) {
            Ok(r) => Ok(r),
            Err(fail) => {
                if fail.poisons() {
                    // Never enter a trapped instance again.
                    slot.instance = None;
                    self.live.store(0, Ordering::Release);
                }
                Err(fail.provider_error(&self.ident, export))
            }
        }
    }

    /// The id of the live instance, 0 when there is none.
    pub(crate) fn live_instance(&self) -> u64 {
        self.live.load(Ordering::Acquire)
    }

    /// A fresh instance with `init` re-run in shadow mode.
    fn shadow_instance(&self) -> Result<Instance, CallFailure> {
        let mut instance = Instance::new(
            &self.runtime,
            &self.compiled,
            self.ident.clone(),
            self.limits.clone(),
            self.me.clone(),
        )?;
        instance.store.data_mut().registration = Registration::Shadow;
        let config = self.config_json.clone();
        let result = instance.call(self.limits.init_timeout(), |b, s| b.init(s, &config), |_| 0);
        instance.store.data_mut().registration = Registration::Closed;
        log::info!(
            "plugin \"{}\" ({}): re-instantiated after a failure",
            self.ident.plugin,
            self.ident.scope_label()
        );
        result.map(|()| instance)
    }

    /// Apply the plugin's failure policy around one provider call of `entry` (export and
    /// entry name): under `skip`, a failure (or quarantine) becomes a `Skipped` error, which
    /// the assembly treats as "this entry is not registered" for this assembly.
    pub(crate) fn guarded<T>(
        &self,
        entry: &str,
        f: impl FnOnce() -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        let skip = self.options.on_error == OnError::Skip;
        if skip && self.quarantined.load(Ordering::Relaxed) {
            return Err(ProviderError::new(
                ProviderErrorKind::Skipped,
                format!(
                    "plugin \"{}\" ({}) is quarantined",
                    self.ident.plugin,
                    self.ident.scope_label()
                ),
            ));
        }
        match f() {
            Ok(v) => {
                self.note_success(entry);
                Ok(v)
            }
            // A cancelled call is the caller's decision, not the plugin's failure.
            Err(e) if skip && e.kind != ProviderErrorKind::Cancelled => {
                self.note_skipped(entry, &e);
                Err(ProviderError::new(ProviderErrorKind::Skipped, e.message))
            }
            Err(e) => Err(e),
        }
    }

    /// Reset `entry`'s failure count.
    pub(crate) fn note_success(&self, entry: &str) {
        if !self.ever_failed.load(Ordering::Acquire) {
            return;
        }
        if let Ok(mut failures) = self.failures.lock() {
            if failures.get(entry).is_some_and(|n| *n > 0) {
                failures.insert(entry.to_string(), 0);
            }
        }
    }

    /// Count one skipped failure of `entry`; quarantine after `quarantine_after` in a row.
    pub(crate) fn note_skipped(&self, entry: &str, e: &ProviderError) {
        let n = match self.failures.lock() {
            Ok(mut failures) => {
                self.ever_failed.store(true, Ordering::Release);
                let n = failures.entry(entry.to_string()).or_insert(0);
                *n += 1;
                *n
            }
            Err(_) => u32::MAX,
        };
        let limit = self.options.quarantine_after.max(1);
        self.runtime.announce(
            &self.ident,
            "skipped",
            &format!(
                "{e}; left out of this assembly (on_error = \"skip\", failure {n} of {limit} in a row before quarantine)"
            ),
        );
        if n >= limit && !self.quarantined.swap(true, Ordering::Relaxed) {
            self.runtime.announce(
                &self.ident,
                "quarantined",
                &format!(
                    "plugin \"{}\" ({}) quarantined after {n} consecutive failures of {entry}; it is no longer called until it is reloaded",
                    self.ident.plugin,
                    self.ident.scope_label()
                ),
            );
        }
    }

    /// The longest current run of failures over all entries.
    fn max_failures(&self) -> u32 {
        self.failures
            .lock()
            .map(|f| f.values().copied().max().unwrap_or(0))
            .unwrap_or(0)
    }

    /// Whether the skip policy applies.
    pub(crate) fn skips(&self) -> bool {
        self.options.on_error == OnError::Skip
    }

    /// Whether a `skip` plugin was quarantined.
    pub(crate) fn is_quarantined(&self) -> bool {
        self.quarantined.load(Ordering::Relaxed)
    }
}

/// The health of a loaded plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginHealth {
    /// The longest run of consecutive failures of one entry (reset by its success).
    pub consecutive_failures: u32,
    /// A `skip` plugin that is no longer called.
    pub quarantined: bool,
    /// Why the plugin can no longer be called, if so.
    pub unavailable: Option<String>,
}

/// One published generation of an instruction provider.
struct Generation {
    fiber: Fiber,
    decls: Vec<Decl>,
}

/// A plugin loaded into a scope. Owns the fiber holding every entry it declared; dropping it
/// (or [`LoadedPlugin::dispose`]) removes them all and, once no assembly still holds one of
/// its providers, drops the instance.
pub struct LoadedPlugin {
    cell: Arc<PluginCell>,
    registry: Arc<Registry>,
    fiber: Arc<Fiber>,
    declared: Vec<Declaration>,
    generation: Mutex<Option<Generation>>,
}

impl LoadedPlugin {
    /// Instantiate `compiled`, run `init(config_json)` with registration open into a fiber
    /// owned by `name` in `scope`, and close registration.
    pub(crate) fn load(
        runtime: Arc<RuntimeInner>,
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
        crate::blocking::run_blocking(|| {
            Self::load_here(
                runtime,
                compiled,
                registry,
                name,
                scope,
                config_json,
                (options, Arc::new(granted)),
                None,
            )
        })
    }

    /// A fresh instance of `code` with this plugin's name, scope, config and options, whose
    /// declarations replace this plugin's in one registry step (see `Registry::swap`): an
    /// assembly sees the old plugin or the new one, never neither. A failed `init` or a
    /// refused declaration leaves this plugin in place. This handle then owns nothing; drop
    /// it. MCP instruction providers are not reloaded (their generations are the server's).
    pub fn reload(&self, code: &super::runtime::PluginCode) -> Result<LoadedPlugin, WasmError> {
        if self.is_instruction_provider() {
            return Err(WasmError::Unsupported {
                plugin: self.name().to_string(),
                message: "an MCP instruction provider is reloaded by reconnecting its server"
                    .into(),
            });
        }
        let compiled = code.compiled().clone();
        crate::blocking::run_blocking(|| {
            Self::load_here(
                self.cell.runtime.clone(),
                compiled,
                &self.registry,
                self.name(),
                self.scope(),
                self.cell.config_json.clone(),
                // The directories opened at the first load, not the paths again.
                (self.cell.options.clone(), self.cell.granted.clone()),
                Some(self.fiber.id()),
            )
        })
    }

    /// Load, registering `init`'s declarations as they come, or (`replacing`) all at once in
    /// place of that fiber's entries.
    #[allow(clippy::too_many_arguments)]
    fn load_here(
        runtime: Arc<RuntimeInner>,
        compiled: Arc<Compiled>,
        registry: &Arc<Registry>,
        name: &str,
        scope: Option<&str>,
        config_json: String,
        (options, granted): (PluginOptions, Arc<Granted>),
        replacing: Option<crate::prompt::FiberId>,
    ) -> Result<Self, WasmError> {
        let ident = Ident {
            plugin: name.into(),
            scope: scope.map(Into::into),
        };
        let cell = PluginCell::new(&ident, options, granted, &runtime, &compiled, &config_json);
        let limits = cell.limits.clone();
        let fiber = Arc::new(registry.fiber(name, scope));
        let call_error = |export: &str, fail: CallFailure| WasmError::Call {
            plugin: name.to_string(),
            export: export.to_string(),
            scope: scope.map(str::to_string),
            message: fail.message,
        };
        // Hold the slot while init runs: an assembly that already sees a dynamic entry
        // waits for init instead of re-instantiating.
        let mut slot = cell.lock().map_err(|e| WasmError::Engine {
            plugin: name.to_string(),
            scope: scope.map(str::to_string),
            message: e.message,
        })?;
        let started = std::time::Instant::now();
        let mut instance = Instance::new(
            &runtime,
            &compiled,
            ident,
            limits.clone(),
            Arc::downgrade(&cell),
        )
        .map_err(|f| call_error("(instantiate)", f))?;
        let instantiated = started.elapsed();
        instance.store.data_mut().registration = match replacing {
            None => Registration::Direct {
                fiber: fiber.clone(),
                declared: Vec::new(),
                listener: false,
            },
            Some(_) => Registration::Buffered {
                decls: Vec::new(),
                declared: Vec::new(),
                names: Vec::new(),
                listener: false,
                scoped: scope.is_some(),
            },
        };
        let result = instance.call(limits.init_timeout(), |b, s| b.init(s, &config_json), |_| 0);
        let registration = std::mem::replace(
            &mut instance.store.data_mut().registration,
            Registration::Closed,
        );
        if let Err(fail) = result {
            slot.dead = Some("init failed".into());
            drop(slot);
            fiber.dispose();
            return Err(call_error("init", fail));
        }
        let declared = match (registration, replacing) {
            (Registration::Direct { declared, .. }, _) => declared,
            (
                Registration::Buffered {
                    decls, declared, ..
                },
                Some(old),
            ) => {
                let registrations = decls.into_iter().map(Decl::into_registration).collect();
                registry
                    .swap(old, &fiber, registrations)
                    .map_err(|e| WasmError::Register {
                        plugin: name.to_string(),
                        scope: scope.map(str::to_string),
                        message: e.to_string(),
                    })?;
                declared
            }
            _ => Vec::new(),
        };
        cell.live.store(instance.id, Ordering::Release);
        slot.instance = Some(instance);
        drop(slot);
        log::info!(
            "plugin \"{name}\" ({}): loaded, {} declarations (instantiate {:?}, init {:?})",
            super::error::scope_label(scope),
            declared.len(),
            instantiated,
            started.elapsed() - instantiated
        );
        Ok(Self {
            cell,
            registry: registry.clone(),
            fiber,
            declared,
            generation: Mutex::new(None),
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

    pub(crate) fn cell(&self) -> &Arc<PluginCell> {
        &self.cell
    }

    /// The capabilities the plugin was granted.
    pub fn grants(&self) -> &super::grants::Grants {
        &self.cell.options.grants
    }

    /// Failure counters and availability.
    pub fn health(&self) -> PluginHealth {
        let unavailable = self.cell.slot.lock().ok().and_then(|s| s.dead.clone());
        PluginHealth {
            consecutive_failures: self.cell.max_failures(),
            quarantined: self.cell.is_quarantined(),
            unavailable,
        }
    }

    /// Run `publish(server)` with registration open. The declarations form one generation
    /// that replaces the previous one when the call and every registration succeed; on any
    /// error the previous generation stays. Returns what was declared.
    pub fn publish(&self, server: &McpServer) -> Result<Vec<Declaration>, WasmError> {
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
        let limits = self.cell.limits.clone();
        let outcome = self.cell.with_instance("publish", |inst| {
            inst.store.data_mut().registration = Registration::Buffered {
                decls: Vec::new(),
                declared: Vec::new(),
                names: Vec::new(),
                listener: false,
                scoped,
            };
            let result = inst.call(limits.init_timeout(), |b, s| b.publish(s, server), |_| 0);
            let reg = std::mem::replace(
                &mut inst.store.data_mut().registration,
                Registration::Closed,
            );
            result.map(|()| reg)
        });
        let (decls, declared) = match outcome {
            Ok(Registration::Buffered {
                decls, declared, ..
            }) => (decls, declared),
            Ok(_) => (Vec::new(), Vec::new()),
            Err(e) => {
                return Err(WasmError::Call {
                    plugin,
                    export: "publish".into(),
                    scope,
                    message: e.message,
                })
            }
        };
        let mut generation = self.generation.lock().map_err(|_| WasmError::Engine {
            plugin: plugin.clone(),
            scope: scope.clone(),
            message: "publish lock poisoned".into(),
        })?;
        // The old generation must go first, or the new one's names collide with it.
        let old = generation.take();
        let old_decls = old.map(|g| {
            g.fiber.dispose();
            g.decls
        });
        match self.commit(&decls) {
            Ok(fiber) => {
                *generation = Some(Generation { fiber, decls });
                Ok(declared)
            }
            Err(message) => {
                if let Some(old_decls) = old_decls {
                    if let Ok(fiber) = self.commit(&old_decls) {
                        *generation = Some(Generation {
                            fiber,
                            decls: old_decls,
                        });
                    }
                }
                Err(WasmError::Register {
                    plugin,
                    scope,
                    message,
                })
            }
        }
    }

    /// Register one generation into a fresh fiber; all or nothing.
    fn commit(&self, decls: &[Decl]) -> Result<Fiber, String> {
        let fiber = self.registry.fiber(self.name(), self.scope());
        for decl in decls.iter().cloned() {
            let result = decl.register(&fiber);
            if let Err(e) = result {
                fiber.dispose();
                return Err(e.to_string());
            }
        }
        Ok(fiber)
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

impl PluginCell {
    /// Instantiate `compiled` on its own, run `init(config_json)` with declarations buffered
    /// (nothing reaches any registry) and return them. For `check`.
    pub(crate) fn probe(
        name: &str,
        runtime: Arc<RuntimeInner>,
        compiled: Arc<Compiled>,
        config_json: String,
        options: PluginOptions,
    ) -> Result<Vec<Declaration>, CallFailure> {
        crate::blocking::run_blocking(|| {
            Self::probe_here(name, runtime, compiled, config_json, options)
        })
    }

    fn probe_here(
        name: &str,
        runtime: Arc<RuntimeInner>,
        compiled: Arc<Compiled>,
        config_json: String,
        options: PluginOptions,
    ) -> Result<Vec<Declaration>, CallFailure> {
        let ident = Ident {
            plugin: name.into(),
            scope: None,
        };
        let granted = options.grants.open().map_err(|message| CallFailure {
            kind: ProviderErrorKind::Unavailable,
            message,
        })?;
        let cell = PluginCell::new(
            &ident,
            options,
            Arc::new(granted),
            &runtime,
            &compiled,
            &config_json,
        );
        let limits = cell.limits.clone();
        let mut instance = Instance::new(
            &runtime,
            &compiled,
            ident,
            limits.clone(),
            Arc::downgrade(&cell),
        )?;
        instance.store.data_mut().registration = Registration::Buffered {
            decls: Vec::new(),
            declared: Vec::new(),
            names: Vec::new(),
            listener: false,
            scoped: false,
        };
        instance.call(limits.init_timeout(), |b, s| b.init(s, &config_json), |_| 0)?;
        match std::mem::replace(
            &mut instance.store.data_mut().registration,
            Registration::Closed,
        ) {
            Registration::Buffered { declared, .. } => Ok(declared),
            _ => Ok(Vec::new()),
        }
    }
}
