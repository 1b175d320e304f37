//! Where an assembly's time goes: each provider and listener call, with the plugin that
//! registered it, and the phases of a step (assemble, render, commit) around them.
//!
//! Every call is also a `prompt_host.plugin_call` span (see docs/observability.md), which
//! costs nothing without a `tracing` subscriber.
//!
//! A caller that wants them puts a [`Timings`] in the assembly's context
//! ([`AssembleContext::timings`]); without one nothing is measured, so timing costs
//! nothing unless asked for. Fixed texts are not calls and are not listed; every variable
//! provider is (a fixed variable answers in nanoseconds). A listener's time includes the
//! listeners it runs through `next`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::context::AssembleContext;
use super::errors::EntryKind;
use super::registry::state::Meta;

/// One provider or listener call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CallTiming {
    /// `section`, `context`, `variable`, `tool provider` or `listener`.
    #[cfg_attr(feature = "schema", schemars(with = "crate::schema::TimedKind"))]
    pub kind: &'static str,
    /// The entry's name (a keyed tool provider's or listener's key; `None` without one).
    pub name: Option<String>,
    /// The plugin that registered it.
    pub plugin: String,
    /// The layer it is in: a scope key, or `global`.
    pub layer: String,
    /// How long the call took, in microseconds.
    pub micros: f64,
}

/// One phase of a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PhaseTiming {
    /// `assemble`, `render` or `commit`.
    #[cfg_attr(feature = "schema", schemars(with = "crate::schema::PhaseName"))]
    pub phase: &'static str,
    /// How long it took, in microseconds.
    pub micros: f64,
}

/// What [`Timings`] measured, in the order it happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TimingReport {
    /// The phases.
    pub phases: Vec<PhaseTiming>,
    /// The calls.
    pub calls: Vec<CallTiming>,
}

impl TimingReport {
    /// The calls, slowest first.
    pub fn slowest(&self) -> Vec<&CallTiming> {
        let mut calls: Vec<&CallTiming> = self.calls.iter().collect();
        calls.sort_by(|a, b| b.micros.total_cmp(&a.micros));
        calls
    }
}

/// Collects the timings of the assemblies (and steps) it is given to.
#[derive(Debug, Default)]
pub struct Timings {
    report: Mutex<TimingReport>,
    /// Whether what each listener changed is recorded too ([`Timings::tracing_listeners`]).
    pub(crate) trace_listeners: bool,
    /// Each listener's whole effect, as it returned.
    effects: Mutex<Vec<super::listener_changes::Effect>>,
}

/// Whole nanoseconds divided once, so `163 ns` is written `0.163`, not `0.16299999999999998`.
fn micros(elapsed: Duration) -> f64 {
    elapsed.as_nanos() as f64 / 1e3
}

impl Timings {
    /// An empty collector, to share with an assembly's context.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A collector that also records what each listener changed (see
    /// [`Timings::listener_changes`]): the names and content hashes of the assembly's parts
    /// before and after every listener, so only for a caller that shows them.
    pub fn tracing_listeners() -> Arc<Self> {
        Arc::new(Self {
            trace_listeners: true,
            ..Self::default()
        })
    }

    /// What each listener of the assemblies measured changed, outermost first (empty
    /// unless made with [`Timings::tracing_listeners`]).
    pub fn listener_changes(&self) -> Vec<super::listener_changes::ListenerChange> {
        let effects = self
            .effects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        super::listener_changes::own_changes(effects)
    }

    /// Record a listener's whole effect.
    pub(crate) fn listener_ran(&self, effect: super::listener_changes::Effect) {
        self.effects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(effect);
    }

    /// Record a phase of a step.
    pub fn phase(&self, phase: &'static str, elapsed: Duration) {
        self.lock().phases.push(PhaseTiming {
            phase,
            micros: micros(elapsed),
        });
    }

    /// What was measured so far.
    pub fn report(&self) -> TimingReport {
        self.lock().clone()
    }

    fn call(&self, kind: EntryKind, name: Option<&str>, meta: &Meta, elapsed: Duration) {
        self.lock().calls.push(CallTiming {
            kind: kind.as_str(),
            name: name.map(str::to_string),
            plugin: meta.owner.to_string(),
            layer: meta.scope_label().to_string(),
            micros: micros(elapsed),
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TimingReport> {
        // Each change is one push: a panic elsewhere leaves the report whole.
        self.report.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Run `call` (a provider or listener of `kind`, `name`, registered with `meta`) in its
/// `prompt_host.plugin_call` span, timing it when `ctx` collects timings.
pub(crate) fn timed<T>(
    ctx: &AssembleContext,
    kind: EntryKind,
    name: Option<&str>,
    meta: &Meta,
    call: impl FnOnce() -> T,
) -> T {
    let span = tracing::info_span!(
        "prompt_host.plugin_call",
        prompt_host.plugin = %meta.owner,
        prompt_host.entry.kind = kind.as_str(),
        prompt_host.entry.name = name,
        prompt_host.layer = %meta.scope_label(),
    );
    let _entered = span.enter();
    let Some(timings) = &ctx.timings else {
        return call();
    };
    let started = Instant::now();
    let result = call();
    timings.call(kind, name, meta, started.elapsed());
    result
}
