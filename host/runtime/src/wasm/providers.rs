//! The core's provider traits, implemented by calls into a plugin instance, and the
//! `on-assemble` call a listener makes. Only dynamic entries get one of these; fixed texts,
//! tool sets and variable values are host data. The supervisor is the plugin's
//! [`EntryFactory`]: the registry imports ask it for these providers.

use std::sync::{Arc, Mutex};

use wasmtime::component::Resource;

use super::answers::LastAnswer;
use super::contract::{Answer, AssemblyHandle};
use super::convert;
use super::declare::{EntryFactory, TextKind};
use super::failure::CallFailure;
use super::store::ListenerFrame;
use super::supervisor::Supervisor;
use crate::prompt::{
    AssembleContext, AssembleListener, Assembly, Next, ProviderError, ProviderErrorKind,
    TextProvider, ToolProvider, ToolSet, VariableProvider,
};

impl EntryFactory for Supervisor {
    fn text(self: Arc<Self>, kind: TextKind, name: &str) -> Arc<dyn TextProvider> {
        Arc::new(WasmText::new(self, kind, name))
    }

    fn variable(self: Arc<Self>, name: &str) -> Arc<dyn VariableProvider> {
        Arc::new(WasmVariable::new(self, name))
    }

    fn tools(self: Arc<Self>, key: &str) -> Arc<dyn ToolProvider> {
        Arc::new(WasmTools::new(self, key))
    }

    fn listener(self: Arc<Self>, key: &str) -> Arc<dyn AssembleListener> {
        Arc::new(WasmListener::new(self, key))
    }
}

/// A dynamic section or context text.
pub(crate) struct WasmText {
    cell: Arc<Supervisor>,
    kind: TextKind,
    name: String,
    /// `section-text "name"`, for failure bookkeeping (formatted once, not per call).
    entry: String,
    /// The last text, for a 0.2.0 "unchanged".
    last: LastAnswer<String>,
}

impl WasmText {
    pub(crate) fn new(cell: Arc<Supervisor>, kind: TextKind, name: &str) -> Self {
        Self {
            cell,
            kind,
            name: name.to_string(),
            entry: format!("{} \"{name}\"", kind.export()),
            last: LastAnswer::default(),
        }
    }
}

impl TextProvider for WasmText {
    fn text(&self, ctx: &AssembleContext) -> Result<String, ProviderError> {
        let timeout = self.cell.limits.call_timeout();
        self.cell.guarded(&self.entry, || {
            if let Some(text) = self.last.kept(self.cell.live_instance(), ctx) {
                return Ok(text);
            }
            self.cell.with_instance(self.kind.export(), |inst| {
                let wctx = inst.context_arg(ctx);
                let answer = inst.call(
                    timeout,
                    |b, s| match self.kind {
                        TextKind::Section => b.section_text(s, &self.name, wctx.as_ref()),
                        TextKind::Context => b.context_text(s, &self.name, wctx.as_ref()),
                    },
                    |a| a.bytes(String::len),
                )?;
                let keep = inst.keep_asked();
                self.last
                    .resolve(inst.id, answer, inst.answers_unchanged(), keep, ctx)
            })
        })
    }
}

/// A dynamic variable.
pub(crate) struct WasmVariable {
    cell: Arc<Supervisor>,
    name: String,
    /// `variable "name"`, for failure bookkeeping.
    entry: String,
    /// The last value, for a 0.2.0 "unchanged".
    last: LastAnswer<Option<String>>,
}

impl WasmVariable {
    pub(crate) fn new(cell: Arc<Supervisor>, name: &str) -> Self {
        Self {
            cell,
            name: name.to_string(),
            entry: format!("variable \"{name}\""),
            last: LastAnswer::default(),
        }
    }
}

impl VariableProvider for WasmVariable {
    fn value(&self, ctx: &AssembleContext) -> Result<Option<String>, ProviderError> {
        let timeout = self.cell.limits.call_timeout();
        self.cell.guarded(&self.entry, || {
            if let Some(value) = self.last.kept(self.cell.live_instance(), ctx) {
                return Ok(value);
            }
            self.cell.with_instance("variable", |inst| {
                let wctx = inst.context_arg(ctx);
                let answer = inst.call(
                    timeout,
                    |b, s| b.variable(s, &self.name, wctx.as_ref()),
                    |a| a.bytes(|v| v.as_ref().map_or(0, String::len)),
                )?;
                let keep = inst.keep_asked();
                self.last
                    .resolve(inst.id, answer, inst.answers_unchanged(), keep, ctx)
            })
        })
    }
}

/// A dynamic tool provider.
pub(crate) struct WasmTools {
    cell: Arc<Supervisor>,
    key: String,
    /// `tools "key"`, for failure bookkeeping.
    entry: String,
    /// Last step's parsed parameters, reused while the provider returns the same text.
    parsed: Mutex<convert::ParsedParameters>,
    /// The last converted set, for a 0.2.0 "unchanged".
    last: LastAnswer<ToolSet>,
}

impl WasmTools {
    pub(crate) fn new(cell: Arc<Supervisor>, key: &str) -> Self {
        Self {
            cell,
            key: key.to_string(),
            entry: format!("tools \"{key}\""),
            parsed: Mutex::default(),
            last: LastAnswer::default(),
        }
    }
}

impl ToolProvider for WasmTools {
    fn tools(&self, ctx: &AssembleContext) -> Result<ToolSet, ProviderError> {
        let timeout = self.cell.limits.call_timeout();
        self.cell.guarded(&self.entry, || {
            if let Some(set) = self.last.kept(self.cell.live_instance(), ctx) {
                return Ok(set);
            }
            let (instance, answer, remember, keep) = self.cell.with_instance("tools", |inst| {
                let wctx = inst.context_arg(ctx);
                let answer = inst.call(
                    timeout,
                    |b, s| b.tools(s, &self.key, wctx.as_ref()),
                    |a| a.bytes(convert::tool_set_bytes),
                )?;
                Ok((inst.id, answer, inst.answers_unchanged(), inst.keep_asked()))
            })?;
            let fail = |message: String| {
                CallFailure::new(ProviderErrorKind::InvalidInput, message)
                    .provider_error(&self.cell.ident, "tools")
            };
            let set = match answer {
                Answer::Unchanged => {
                    return self
                        .last
                        .resolve(instance, Answer::Unchanged, remember, keep, ctx)
                        .map_err(|f| f.provider_error(&self.cell.ident, "tools"))
                }
                Answer::Value(set) => set,
            };
            let converted = match self.parsed.lock() {
                Ok(mut parsed) => parsed.tool_set(set),
                // A poisoned cache is only a lost optimisation.
                Err(_) => convert::tool_set(set),
            }
            .map_err(fail)?;
            if remember {
                self.last.remember(instance, converted.clone(), keep, ctx);
            }
            Ok(converted)
        })
    }

    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
}

/// A plugin's assembly listener. See `imports/assembly.rs` for the handle it receives.
pub(crate) struct WasmListener {
    cell: Arc<Supervisor>,
    key: String,
    /// `on-assemble "key"`, for failure bookkeeping.
    entry: String,
}

impl WasmListener {
    pub(crate) fn new(cell: Arc<Supervisor>, key: &str) -> Self {
        Self {
            cell,
            key: key.to_string(),
            entry: format!("on-assemble \"{key}\""),
        }
    }
}

impl AssembleListener for WasmListener {
    fn on_assemble(
        &self,
        assembly: &mut Assembly,
        ctx: &AssembleContext,
        next: &mut Next,
    ) -> Result<(), ProviderError> {
        let skip = self.cell.skips();
        if skip && self.cell.is_quarantined() {
            // Quarantined: pass through.
            return next.run(assembly);
        }
        // Under `skip`, keep what we need to drop this plugin's changes if it fails.
        let before = skip.then(|| assembly.clone());
        let result = run_listener(&self.cell, &self.key, assembly, ctx, next);
        let entry = &self.entry;
        match result {
            Ok(()) => {
                self.cell.note_success(entry);
                Ok(())
            }
            Err(ListenerFailure::Inner(e)) => Err(e),
            Err(ListenerFailure::Own { error, after_next }) => {
                let cancelled = error.kind == ProviderErrorKind::Cancelled;
                let Some(before) = before.filter(|_| !cancelled) else {
                    return Err(error);
                };
                self.cell.note_skipped(entry, &error);
                if next.was_called() {
                    // The inner chain ran: keep its result (this plugin's edits before
                    // `next` are part of it and cannot be separated).
                    if let Some(after) = after_next {
                        *assembly = *after;
                    }
                    Ok(())
                } else {
                    *assembly = before;
                    next.run(assembly)
                }
            }
        }
    }

    fn key(&self) -> Option<&str> {
        Some(&self.key)
    }
}

/// How a listener call failed.
pub(crate) enum ListenerFailure {
    /// An inner listener (another plugin) failed inside `next`: its error, unchanged.
    Inner(ProviderError),
    /// This plugin failed.
    Own {
        error: ProviderError,
        after_next: Option<Box<Assembly>>,
    },
}

/// Run one `on-assemble` call of `cell`'s listener `key` on `assembly`: the assembly and
/// the continuation move into the store data for the call (see `imports/assembly.rs`) and
/// back, whatever happens.
fn run_listener(
    cell: &Supervisor,
    key: &str,
    assembly: &mut Assembly,
    ctx: &AssembleContext,
    next: &mut Next,
) -> Result<(), ListenerFailure> {
    let timeout = cell.limits.call_timeout();
    let snapshot_after_next = cell.skips();
    let mut frame_in = Some(ListenerFrame {
        assembly: std::mem::take(assembly),
        next: std::mem::replace(next, Next::done()),
        inner_error: None,
        after_next: None,
        snapshot_after_next,
    });
    let mut frame_out = None;
    let result = cell.with_instance("on-assemble", |inst| {
        let state = inst.store.data_mut();
        state.frame = frame_in.take();
        let handle = state.table.push(AssemblyHandle::new()).map_err(|e| {
            CallFailure::new(ProviderErrorKind::Limit, format!("resource table: {e}"))
        })?;
        let borrowed = Resource::<AssemblyHandle>::new_borrow(handle.rep());
        let wctx = inst.context_arg(ctx);
        let result = inst.call(
            timeout,
            |b, s| b.on_assemble(s, key, borrowed, wctx.as_ref()),
            |_| 0,
        );
        let state = inst.store.data_mut();
        let _ = state.table.delete(handle);
        frame_out = state.frame.take();
        result
    });
    // Hand the assembly and the continuation back to the core, whatever happened.
    let (inner_error, after_next) = match frame_out.or(frame_in) {
        Some(frame) => {
            *assembly = frame.assembly;
            *next = frame.next;
            (frame.inner_error, frame.after_next)
        }
        None => (None, None),
    };
    if let Some(e) = inner_error {
        return Err(ListenerFailure::Inner(e));
    }
    result.map_err(|error| ListenerFailure::Own { error, after_next })
}
