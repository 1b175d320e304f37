//! One instantiated plugin: its `Store` and export bindings, and the single place where a
//! call into Wasm runs — under a wall-clock deadline, fuel and the output budget — and where
//! a failure is classified (trap, timeout, limit, `err` result).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use wasmtime::{Store, Trap, UpdateDeadline};

use super::bindings::instruction_provider::InstructionProvider;
use super::bindings::plugin::prompt_host::plugin::types::{AssembleContext, PluginError, ToolSet};
use super::bindings::plugin::Plugin;
use super::limits::Limits;
use super::plugin::PluginCell;
use super::runtime::{Compiled, Pre, RuntimeInner};
use super::state::{HostState, Ident};
use super::AssemblyHandle;
use crate::prompt::{ProviderError, ProviderErrorKind};
use wasmtime::component::Resource;

/// The export bindings of one instance, by world.
pub(crate) enum Bindings {
    Plugin(Plugin),
    Instructions(InstructionProvider),
}

/// Call the same `contributor` export whatever the world (bindgen gives each world its own
/// export struct, with identical signatures).
macro_rules! contributor {
    ($self:expr, |$g:ident| $call:expr) => {
        match $self {
            Bindings::Plugin(p) => {
                let $g = p.prompt_host_plugin_contributor();
                $call
            }
            Bindings::Instructions(p) => {
                let $g = p.prompt_host_plugin_contributor();
                $call
            }
        }
    };
}

type Wr<T> = wasmtime::Result<Result<T, PluginError>>;

impl Bindings {
    pub(crate) fn init(&self, s: &mut Store<HostState>, config: &str) -> Wr<()> {
        contributor!(self, |g| g.call_init(s, config))
    }

    pub(crate) fn section_text(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<String> {
        contributor!(self, |g| g.call_section_text(s, name, ctx))
    }

    pub(crate) fn context_text(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<String> {
        contributor!(self, |g| g.call_context_text(s, name, ctx))
    }

    pub(crate) fn variable(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Option<String>> {
        contributor!(self, |g| g.call_variable(s, name, ctx))
    }

    pub(crate) fn tools(
        &self,
        s: &mut Store<HostState>,
        key: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<ToolSet> {
        contributor!(self, |g| g.call_tools(s, key, ctx))
    }

    pub(crate) fn on_assemble(
        &self,
        s: &mut Store<HostState>,
        key: &str,
        handle: Resource<AssemblyHandle>,
        ctx: Option<&AssembleContext>,
    ) -> Wr<()> {
        contributor!(self, |g| g.call_on_assemble(s, key, handle, ctx))
    }
}

/// A failed call, classified.
#[derive(Debug, Clone)]
pub(crate) struct CallFailure {
    pub(crate) kind: ProviderErrorKind,
    pub(crate) message: String,
}

impl CallFailure {
    /// Whether the instance must not be entered again (anything but an `err` result).
    pub(crate) fn poisons(&self) -> bool {
        !matches!(
            self.kind,
            ProviderErrorKind::InvalidInput | ProviderErrorKind::Failed
        )
    }

    /// As a provider error whose message names plugin, export and scope.
    pub(crate) fn provider_error(&self, ident: &Ident, export: &str) -> ProviderError {
        ProviderError::new(
            self.kind.clone(),
            format!(
                "plugin \"{}\" export \"{export}\" ({}): {}",
                ident.plugin,
                ident.scope_label(),
                self.message
            ),
        )
    }
}

/// The `err` case of a WIT result, classified.
pub(crate) fn plugin_error(e: PluginError) -> CallFailure {
    match e {
        PluginError::InvalidInput(m) => CallFailure {
            kind: ProviderErrorKind::InvalidInput,
            message: format!("invalid input: {m}"),
        },
        PluginError::Failed(m) => CallFailure {
            kind: ProviderErrorKind::Failed,
            message: format!("failed: {m}"),
        },
    }
}

/// Run `f`, which enters guest code, where WASI may block. wasmtime-wasi's synchronous
/// bindings run a guest's stdout/stderr writes (`blocking-write-and-flush`) with
/// `Handle::block_on` on the current Tokio runtime, which panics on a thread that drives
/// async tasks: a plugin printing during `init` would abort a host that loads plugins from
/// async code (the command line, `serve`'s `load_plugin`, an embedding). On a worker of a
/// multi-threaded runtime, `block_in_place` hands the worker's tasks to another thread first;
/// elsewhere (no runtime, a `spawn_blocking` thread, where assemblies run) `f` runs as is.
fn guest_entry<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// One live instance.
pub(crate) struct Instance {
    pub(crate) store: Store<HostState>,
    pub(crate) bindings: Bindings,
    fuel: Option<u64>,
    /// The context this instance was sent last (see `context_arg`).
    last_context: Option<crate::prompt::AssembleContext>,
}

impl Instance {
    /// Instantiate `compiled` in a fresh store (from its `InstancePre`: no compilation).
    pub(crate) fn new(
        runtime: &RuntimeInner,
        compiled: &Compiled,
        ident: Ident,
        limits: Arc<Limits>,
        cell: Weak<PluginCell>,
    ) -> Result<Self, CallFailure> {
        let fuel = runtime.fuel.then(|| limits.fuel.unwrap_or(u64::MAX));
        // Instantiation is mostly host work (memory setup, data segments); give it at least
        // a second even when the plugin's own init budget is tighter.
        let init_timeout = limits.init_timeout().max(Duration::from_secs(1));
        let mut store = Store::new(
            &runtime.engine,
            HostState::new(ident, limits, cell, runtime.log_sink.clone()),
        );
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_callback(|mut ctx| {
            let state = ctx.data_mut();
            match state.deadline {
                Some(deadline) if Instant::now() >= deadline => {
                    state.timed_out = true;
                    Ok(UpdateDeadline::Interrupt)
                }
                // Re-check on the next tick: the deadline is wall-clock, the epoch only
                // tells us when to look.
                _ => Ok(UpdateDeadline::Continue(1)),
            }
        });
        if let Some(fuel) = fuel {
            store.set_fuel(fuel).map_err(|e| failure(&mut store, &e))?;
        }
        // Instantiation may run start functions (guest code): bound it too.
        store.data_mut().deadline = Some(Instant::now() + init_timeout);
        store.data_mut().timeout = init_timeout;
        store.set_epoch_deadline(1);
        let bindings = guest_entry(|| match &compiled.pre {
            Pre::Plugin(pre) => pre.instantiate(&mut store).map(Bindings::Plugin),
            Pre::Instructions(pre) => pre.instantiate(&mut store).map(Bindings::Instructions),
        })
        .map_err(|e| failure(&mut store, &e))?;
        store.data_mut().deadline = None;
        Ok(Self {
            store,
            bindings,
            fuel,
            last_context: None,
        })
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
        f: impl FnOnce(&Bindings, &mut Store<HostState>) -> wasmtime::Result<Result<T, PluginError>>,
        size: impl FnOnce(&T) -> usize,
    ) -> Result<T, CallFailure> {
        {
            let state = self.store.data_mut();
            state.deadline = Some(Instant::now() + timeout);
            state.timeout = timeout;
            state.timed_out = false;
            state.call_bytes = 0;
            state.over_budget = None;
            state.limiter.hit = None;
        }
        if let Some(fuel) = self.fuel {
            self.store
                .set_fuel(fuel)
                .map_err(|e| failure(&mut self.store, &e))?;
        }
        self.store.set_epoch_deadline(1);
        let result = guest_entry(|| f(&self.bindings, &mut self.store));
        self.store.data_mut().deadline = None;
        self.store.data_mut().flush_output();
        match result {
            Ok(Ok(value)) => {
                let state = self.store.data_mut();
                let bytes = size(&value).saturating_add(state.call_bytes);
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
fn failure(store: &mut Store<HostState>, err: &wasmtime::Error) -> CallFailure {
    store.data_mut().flush_output();
    let state = store.data_mut();
    if state.timed_out || matches!(err.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
        return CallFailure {
            kind: ProviderErrorKind::Timeout,
            message: format!("deadline of {} ms exceeded", state.timeout.as_millis()),
        };
    }
    if let Some(hit) = state.limiter.hit.clone() {
        return CallFailure {
            kind: ProviderErrorKind::Limit,
            message: hit,
        };
    }
    if let Some(msg) = state.over_budget.clone() {
        return CallFailure {
            kind: ProviderErrorKind::Limit,
            message: msg,
        };
    }
    let stderr = state.take_last_stderr();
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

fn root_message(err: &wasmtime::Error) -> String {
    let mut msg = err.to_string();
    let root = err.root_cause().to_string();
    if root != msg {
        msg = format!("{msg}: {root}");
    }
    msg
}
