//! The supervisor of one loaded plugin: its live instance (entered one call at a time, made
//! anew after a failure that poisons it) and the failure policy around every call.
//!
//! Trap recovery: a trapped instance is never entered again. The next call instantiates a
//! fresh one from the `InstancePre` and re-runs `init` with the same config in *shadow*
//! mode — declarations are accepted and discarded, because the first run's entries stand —
//! so the plugin's internal state is rebuilt the way it was first built. If that shadow
//! `init` fails, the plugin is marked dead and every later call fails `Unavailable` until it
//! is reloaded. Under `on_error = "skip"`, repeated failures quarantine it instead
//! (`quarantine.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::code::Compiled;
use super::declare::{EntryFactory, Registration};
use super::engine::EngineCtx;
use super::failure::CallFailure;
use super::ident::Ident;
use super::instance::Instance;
use super::quarantine::Quarantine;
use super::sandbox::grants::Granted;
use crate::policy::{Limits, OnError, PluginOptions};
use crate::prompt::{ProviderError, ProviderErrorKind};

/// The live instance, if any, and why there can be none.
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) instance: Option<Instance>,
    /// Why the plugin can no longer be called (shadow init failed, init failed).
    pub(crate) dead: Option<String>,
}

/// What providers and listeners of one plugin instance share.
pub(crate) struct Supervisor {
    pub(crate) ident: Ident,
    pub(crate) options: PluginOptions,
    pub(crate) limits: Arc<Limits>,
    /// What the plugin was granted, opened when it was first loaded (a reload keeps it).
    pub(crate) granted: Arc<Granted>,
    pub(crate) engine: Arc<EngineCtx>,
    pub(crate) compiled: Arc<Compiled>,
    pub(crate) config_json: String,
    me: Weak<Supervisor>,
    slot: Mutex<Slot>,
    /// Consecutive failures per entry (`export` + entry name).
    quarantine: Quarantine,
    /// The id of the live instance (0: none, after a failure dropped it). A kept answer
    /// (`control.keep-until-context-changes`) is reused only while its instance is live.
    pub(crate) live: AtomicU64,
}

impl Supervisor {
    /// A supervisor of `compiled` for `ident`, with nothing instantiated yet.
    pub(crate) fn new(
        ident: Ident,
        options: PluginOptions,
        granted: Arc<Granted>,
        engine: Arc<EngineCtx>,
        compiled: Arc<Compiled>,
        config_json: String,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Supervisor {
            ident,
            limits: Arc::new(options.limits.clone()),
            granted,
            options,
            engine,
            compiled,
            config_json,
            me: me.clone(),
            slot: Mutex::new(Slot::default()),
            quarantine: Quarantine::default(),
            live: AtomicU64::new(0),
        })
    }

    /// A fresh instance, the providers of whose dynamic entries call back into this
    /// supervisor.
    pub(crate) fn instantiate(&self) -> Result<Instance, CallFailure> {
        self.instantiate_with(false)
    }

    /// [`Supervisor::instantiate`], holding everything the instance writes until
    /// `Instance::release_output` (a plugin loaded ahead of its turn).
    pub(crate) fn instantiate_with(&self, hold_output: bool) -> Result<Instance, CallFailure> {
        let factory: Weak<dyn EntryFactory> = self.me.clone();
        Instance::new(
            &self.engine,
            &self.compiled,
            self.ident.clone(),
            self.limits.clone(),
            self.granted.clone(),
            factory,
            hold_output,
        )
    }

    pub(crate) fn lock(&self) -> Result<MutexGuard<'_, Slot>, CallFailure> {
        self.slot
            .lock()
            .map_err(|_| CallFailure::new(ProviderErrorKind::Unavailable, "instance lock poisoned"))
    }

    /// Run `f` on the live instance (one call at a time), re-instantiating a trapped one
    /// first; a failure that poisons the instance drops it. The call runs where blocking is
    /// allowed (see [`crate::blocking`]), whatever thread the caller is on. A failure is a
    /// provider error naming the plugin, `export` and the scope.
    pub(crate) fn with_instance<R: Send>(
        &self,
        export: &'static str,
        f: impl FnOnce(&mut Instance) -> Result<R, CallFailure> + Send,
    ) -> Result<R, ProviderError> {
        self.enter(f)
            .map_err(|fail| fail.provider_error(&self.ident, export))
    }

    /// [`Supervisor::with_instance`], with the failure as it is.
    pub(crate) fn enter<R: Send>(
        &self,
        f: impl FnOnce(&mut Instance) -> Result<R, CallFailure> + Send,
    ) -> Result<R, CallFailure> {
        crate::blocking::run_blocking(|| self.enter_here(f))
    }

    fn enter_here<R>(
        &self,
        f: impl FnOnce(&mut Instance) -> Result<R, CallFailure>,
    ) -> Result<R, CallFailure> {
        let mut slot = self.lock()?;
        if let Some(reason) = &slot.dead {
            return Err(CallFailure::new(
                ProviderErrorKind::Unavailable,
                format!("plugin unavailable: {reason}"),
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
                    return Err(CallFailure::new(ProviderErrorKind::Unavailable, reason));
                }
            },
        };
        let result = f(instance);
        if let Err(fail) = &result {
            if fail.poisons() {
                // Never enter a trapped instance again.
                slot.instance = None;
                self.live.store(0, Ordering::Release);
            }
        }
        result
    }

    /// The id of the live instance, 0 when there is none.
    pub(crate) fn live_instance(&self) -> u64 {
        self.live.load(Ordering::Acquire)
    }

    /// A fresh instance with `init` re-run in shadow mode.
    fn shadow_instance(&self) -> Result<Instance, CallFailure> {
        let mut instance = self.instantiate()?;
        let config = self.config_json.clone();
        let timeout = self.limits.init_timeout();
        let (result, _) = instance.with_registration(Registration::Shadow, |inst| {
            inst.call(timeout, |b, s| b.init(s, &config), |_| 0)
        });
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
        if skip && self.quarantine.is_quarantined() {
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
        self.quarantine.record_success(entry);
    }

    /// Count one skipped failure of `entry`; quarantine after `quarantine_after` in a row.
    pub(crate) fn note_skipped(&self, entry: &str, e: &ProviderError) {
        let verdict = self
            .quarantine
            .record_failure(entry, self.options.quarantine_after);
        let (n, limit) = (verdict.failures, verdict.limit);
        self.engine.announce(
            &self.ident,
            "skipped",
            &format!(
                "{e}; left out of this assembly (on_error = \"skip\", failure {n} of {limit} in a row before quarantine)"
            ),
        );
        if verdict.quarantined_now {
            self.engine.announce(
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
    pub(crate) fn max_failures(&self) -> u32 {
        self.quarantine.longest_run()
    }

    /// Whether the skip policy applies.
    pub(crate) fn skips(&self) -> bool {
        self.options.on_error == OnError::Skip
    }

    /// Whether a `skip` plugin was quarantined.
    pub(crate) fn is_quarantined(&self) -> bool {
        self.quarantine.is_quarantined()
    }

    /// Why the plugin can no longer be called, if so.
    pub(crate) fn unavailable(&self) -> Option<String> {
        self.slot.lock().ok().and_then(|s| s.dead.clone())
    }
}
