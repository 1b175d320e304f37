//! A plugin loaded ahead of its turn: instantiated, its `init` run with the declarations
//! kept and everything it writes held, then either committed into the registry in its turn
//! or dropped unseen.
//!
//! [`crate::Host::from_config`] loads a deployment's plugins this way, side by side on the
//! machine's cores, and commits them in host.toml's order. What the registry, the plugin
//! ids and the host's log see is then what loading them one by one gives: the entries are
//! registered in the same order, the plugins' log lines come out in their turn, and a
//! plugin after one that stops the deployment is never heard of.
//!
//! A run ahead stands when it went as a load in its turn would have: `init` succeeded with
//! no declaration refused, or `init` failed (its error and output are then given in its
//! turn, as a load then would give them; a plugin that timed out is not run again for
//! another deadline). Otherwise — the registry refused a declaration in its turn, the
//! plugin's own window refused one, or instantiation failed — the plugin is loaded again
//! the usual way, in its turn, and that load decides: its errors, its messages and what the
//! guest was told are exactly a sequential load's. (Both runs see the same inputs; only what
//! `init` itself does differently from one run to the next, the clock or randomness, can
//! differ.)

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::code::Compiled;
use super::declare::{Declaration, Registration};
use super::engine::EngineCtx;
use super::error::WasmError;
use super::ident::{scope_label, Ident};
use super::instance::Instance;
use super::plugin::{LoadTiming, LoadedPlugin};
use super::supervisor::Supervisor;
use crate::policy::PluginOptions;
use crate::prompt::Registry;

/// A plugin whose `init` ran ahead of its turn (see the module docs).
pub(crate) struct Ahead {
    cell: Arc<Supervisor>,
    instance: Instance,
    outcome: Outcome,
}

/// How `init` went.
enum Outcome {
    /// It succeeded with these declarations, none refused.
    Declared {
        entries: Vec<crate::prompt::Registration>,
        declared: Vec<Declaration>,
        timing: LoadTiming,
    },
    /// It failed: the error a load in its turn gives (a plugin that timed out is not run
    /// again for another deadline's length).
    Failed(WasmError),
}

impl Ahead {
    /// Open what `options` grants, instantiate `compiled` and run `init(config_json)`,
    /// keeping the declarations and holding the output. `None` when the grants could not be
    /// opened, instantiation failed or the plugin's window refused a declaration: the plugin
    /// is then to be loaded in its turn.
    pub(crate) fn run(
        engine: Arc<EngineCtx>,
        compiled: Arc<Compiled>,
        name: &str,
        scope: Option<&str>,
        config_json: String,
        options: PluginOptions,
    ) -> Option<Self> {
        let granted = options.grants.open().ok()?;
        let cell = Supervisor::new(
            Ident::new(name, scope),
            options,
            Arc::new(granted),
            engine,
            compiled,
            config_json,
        );
        let started = std::time::Instant::now();
        let mut instance = cell.instantiate_with(true).ok()?;
        let instantiated = started.elapsed();
        let timeout = cell.limits.init_timeout();
        let config = cell.config_json.clone();
        let (result, window) = instance
            .with_registration(Registration::buffered(scope.is_some()), |inst| {
                inst.call(timeout, |b, s| b.init(s, &config), |_| 0)
            });
        let refused = matches!(
            window,
            Registration::Buffered {
                refused_duplicate: true,
                ..
            }
        );
        let outcome = match (result, window) {
            // What the guest did after a refusal is decided by a load in its turn.
            _ if refused => return None,
            (Err(fail), _) => Outcome::Failed(WasmError::Call {
                plugin: name.to_string(),
                export: "init".into(),
                scope: scope.map(str::to_string),
                kind: fail.kind,
                message: fail.message,
            }),
            (
                Ok(()),
                Registration::Buffered {
                    entries, declared, ..
                },
            ) => Outcome::Declared {
                entries,
                declared,
                timing: LoadTiming {
                    instantiate: instantiated,
                    init: started.elapsed() - instantiated,
                },
            },
            _ => return None,
        };
        Some(Self {
            cell,
            instance,
            outcome,
        })
    }

    /// The plugin in its turn: a fiber of `registry` takes its declarations in the order
    /// `init` made them, the instance becomes the live one and its held output is emitted;
    /// or, if `init` failed, its output is emitted and its error returned. `None` when the
    /// registry refused a declaration (nothing of the plugin stays): load it the usual way,
    /// so that the guest is told as a load in its turn tells it.
    pub(crate) fn commit(
        self,
        registry: &Arc<Registry>,
    ) -> Option<Result<LoadedPlugin, WasmError>> {
        let Self {
            cell,
            mut instance,
            outcome,
        } = self;
        let (entries, declared, timing) = match outcome {
            Outcome::Declared {
                entries,
                declared,
                timing,
            } => (entries, declared, timing),
            Outcome::Failed(error) => {
                instance.release_output();
                return Some(Err(error));
            }
        };
        let (name, scope) = (&*cell.ident.plugin, cell.ident.scope.as_deref());
        let fiber = Arc::new(registry.fiber(name, scope));
        for entry in entries {
            if fiber.register(entry).is_err() {
                fiber.dispose();
                return None;
            }
        }
        let Ok(mut slot) = cell.lock() else {
            fiber.dispose();
            return None;
        };
        instance.release_output();
        cell.live.store(instance.id, Ordering::Release);
        slot.instance = Some(instance);
        drop(slot);
        log::info!(
            "plugin \"{name}\" ({}): loaded, {} declarations (instantiate {:?}, init {:?}, ahead of its turn)",
            scope_label(scope),
            declared.len(),
            timing.instantiate,
            timing.init
        );
        Some(Ok(LoadedPlugin::from_parts(
            cell,
            registry.clone(),
            fiber,
            declared,
            timing,
        )))
    }
}
