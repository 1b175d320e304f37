//! One instantiated plugin: its `Store` and export bindings, and the single place where a
//! call into Wasm runs — under a wall-clock deadline, fuel and the output budget — and where
//! a failure is classified (trap, timeout, limit, `err` result).

use std::sync::{Arc, Weak};
use std::time::Duration;

use wasmtime::{Store, Trap, UpdateDeadline};

use super::answers::KeepAsked;
use super::code::Compiled;
use super::contract::wit::types::{AssembleContext, PluginError};
use super::contract::{plugin_error, Bindings, WitVersion};
use super::declare::{EntryFactory, Registration};
use super::engine::EngineCtx;
use super::failure::CallFailure;
use super::ident::Ident;
use super::names::escape;
use super::sandbox::grants::Granted;
use super::store::StoreData;
use crate::policy::Limits;
use crate::prompt::ProviderErrorKind;

/// One live instance.
pub(crate) struct Instance {
    /// Unique in the process: what a remembered answer belongs to.
    pub(crate) id: u64,
    pub(crate) store: Store<StoreData>,
    pub(crate) bindings: Bindings,
    fuel: Option<u64>,
    /// The context this instance was sent last (see `context_arg`).
    last_context: Option<crate::prompt::AssembleContext>,
    /// The signal of the context of the next call (set by `context_arg`).
    signal: Option<crate::prompt::CancelToken>,
}

impl Instance {
    /// Instantiate `compiled` in a fresh store (from its `InstancePre`: no compilation).
    pub(crate) fn new(
        engine: &EngineCtx,
        compiled: &Compiled,
        ident: Ident,
        limits: Arc<Limits>,
        granted: Arc<Granted>,
        factory: Weak<dyn EntryFactory>,
        hold_output: bool,
    ) -> Result<Self, CallFailure> {
        let fuel = engine.fuel.then(|| limits.fuel.unwrap_or(u64::MAX));
        // Instantiation is mostly host work (memory setup, data segments); give it at least
        // a second even when the plugin's own init budget is tighter.
        let init_timeout = limits.init_timeout().max(Duration::from_secs(1));
        let mut state = StoreData::new(
            ident,
            limits,
            Some(granted),
            factory,
            engine.log_sink.clone(),
        );
        if hold_output {
            state.output.hold();
        }
        let mut store = Store::new(&engine.engine, state);
        store.limiter(|s| &mut s.limiter);
        // Plugins of contract 0.2.0 and later can see a cancellation (`control.cancelled`)
        // and stop on their own; give them two milliseconds before interrupting.
        if compiled.version >= WitVersion::V0_2_0 {
            store.data_mut().cancel_grace = Duration::from_millis(2);
        }
        store.epoch_deadline_callback(|mut ctx| {
            if ctx.data_mut().must_stop() {
                Ok(UpdateDeadline::Interrupt)
            } else {
                // Re-check on the next tick: the deadline is wall-clock and the signal is
                // the caller's; the epoch only tells us when to look.
                Ok(UpdateDeadline::Continue(1))
            }
        });
        if let Some(fuel) = fuel {
            store.set_fuel(fuel).map_err(|e| failure(&mut store, &e))?;
        }
        // Instantiation may run start functions (guest code): bound it too.
        store.data_mut().begin_call(init_timeout, None);
        store.set_epoch_deadline(1);
        let bindings = Bindings::instantiate(&compiled.pre, &mut store)
            .map_err(|e| failure(&mut store, &e))?;
        store.data_mut().call.end();
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Ok(Self {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            store,
            bindings,
            fuel,
            last_context: None,
            signal: None,
        })
    }

    /// Run `f` with declarations accepted through `window` (opened here, closed again after
    /// `f` whatever happened); what `f` returned, and the window with what was declared.
    pub(crate) fn with_registration<R>(
        &mut self,
        window: Registration,
        f: impl FnOnce(&mut Self) -> R,
    ) -> (R, Registration) {
        self.store.data_mut().registration = window;
        let result = f(self);
        let window = std::mem::take(&mut self.store.data_mut().registration);
        (result, window)
    }

    /// Emit the output held since instantiation (see `Output::hold`).
    pub(crate) fn release_output(&mut self) {
        self.store.data_mut().output.release();
    }

    /// Whether the instance can answer "unchanged" (contract 0.2.0): its answers are then
    /// worth remembering.
    pub(crate) fn answers_unchanged(&self) -> bool {
        self.bindings.version() >= WitVersion::V0_2_0
    }

    /// What the call that just ran asked about reusing its answer without a call
    /// (`control.keep-until-context-changes`, contract 0.2.0; `freshness.keep-for`, 0.3.0).
    pub(crate) fn keep_asked(&self) -> KeepAsked {
        self.store.data().call.keep
    }

    /// The `option<assemble-context>` argument of the next call: `none` when `ctx` is the
    /// context this instance was sent last (the guest keeps it, see `contributor.wit`), else
    /// the context, now remembered. Only an `err` result leaves an instance in use after a
    /// failed call, and the guest had the context by then; any other failure discards the
    /// instance, and a fresh one starts with nothing sent.
    pub(crate) fn context_arg(
        &mut self,
        ctx: &crate::prompt::AssembleContext,
    ) -> Option<AssembleContext> {
        // The signal travels with every call (see `call`); the guest sees only chain and
        // facts.
        self.signal = ctx.signal.clone();
        if self.last_context.as_ref() == Some(ctx) {
            return None;
        }
        self.last_context = Some(ctx.clone());
        Some(super::convert::context(ctx))
    }

    /// Run `f` (one export call) under `timeout`, fuel and the output budget. `size` measures
    /// the lifted result against `max_output_bytes`.
    pub(crate) fn call<T>(
        &mut self,
        timeout: Duration,
        f: impl FnOnce(&Bindings, &mut Store<StoreData>) -> wasmtime::Result<Result<T, PluginError>>,
        size: impl FnOnce(&T) -> usize,
    ) -> Result<T, CallFailure> {
        let signal = self.signal.take();
        self.store.data_mut().begin_call(timeout, signal);
        if let Some(fuel) = self.fuel {
            self.store
                .set_fuel(fuel)
                .map_err(|e| failure(&mut self.store, &e))?;
        }
        self.store.set_epoch_deadline(1);
        let result = f(&self.bindings, &mut self.store);
        let state = self.store.data_mut();
        state.call.end();
        state.output.flush();
        match result {
            Ok(Ok(value)) => {
                let state = self.store.data_mut();
                let bytes = size(&value).saturating_add(state.call.bytes);
                if bytes > state.limits.max_output_bytes {
                    return Err(CallFailure {
                        kind: ProviderErrorKind::Limit,
                        message: format!(
                            "output limit of {} bytes exceeded (the call returned {bytes} bytes)",
                            state.limits.max_output_bytes
                        ),
                    });
                }
                Ok(value)
            }
            Ok(Err(e)) => Err(plugin_error(e)),
            Err(e) => Err(failure(&mut self.store, &e)),
        }
    }
}

/// Classify an engine error raised by a call, using what the store observed.
fn failure(store: &mut Store<StoreData>, err: &wasmtime::Error) -> CallFailure {
    store.data_mut().output.flush();
    let state = store.data_mut();
    if state.call.cancelled {
        return CallFailure {
            kind: ProviderErrorKind::Cancelled,
            message: "cancelled by the caller".to_string(),
        };
    }
    if state.call.timed_out || matches!(err.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
        return CallFailure {
            kind: ProviderErrorKind::Timeout,
            message: format!("deadline of {} ms exceeded", state.call.timeout.as_millis()),
        };
    }
    if let Some(hit) = state.limiter.hit.clone() {
        return CallFailure {
            kind: ProviderErrorKind::Limit,
            message: hit,
        };
    }
    if let Some(msg) = state.call.over_budget.clone() {
        return CallFailure {
            kind: ProviderErrorKind::Limit,
            message: msg,
        };
    }
    let stderr = state.output.take_last_stderr();
    let with_stderr = |m: String| match &stderr {
        Some(line) => format!("{m} (stderr: {line})"),
        None => m,
    };
    if let Some(e) = err.downcast_ref::<wasmtime::component::ResourceTableError>() {
        return CallFailure {
            kind: ProviderErrorKind::Limit,
            message: format!(
                "resource handle limit of {} exceeded ({e})",
                state.limits.resource_handles
            ),
        };
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => CallFailure {
            kind: ProviderErrorKind::Limit,
            message: "fuel exhausted".into(),
        },
        Some(trap) => CallFailure {
            kind: ProviderErrorKind::Trap,
            message: with_stderr(format!("wasm trap: {}", trap_text(*trap))),
        },
        None => CallFailure {
            kind: ProviderErrorKind::Trap,
            message: with_stderr(format!("wasm trap: {}", root_message(err))),
        },
    }
}

/// Short trap names (`unreachable`, `stack overflow`, …) for one-line messages.
fn trap_text(trap: Trap) -> String {
    match trap {
        Trap::UnreachableCodeReached => "unreachable".into(),
        Trap::StackOverflow => "stack overflow".into(),
        Trap::MemoryOutOfBounds => "out-of-bounds memory access".into(),
        Trap::IntegerDivisionByZero => "integer division by zero".into(),
        other => other.to_string(),
    }
}

/// The cause of an engine error on one line, cause first. A trap raised inside a host
/// import carries the guest's stack as context (`error while executing at wasm backtrace:`
/// and a line per frame); that goes to the debug log, not into the message.
fn root_message(err: &wasmtime::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if text.contains("wasm backtrace:") {
            log::debug!(target: "prompt_host::plugin", "{}", escape(&text));
            continue;
        }
        parts.push(text);
    }
    parts.reverse();
    escape(&parts.join(": ")).into_owned()
}
