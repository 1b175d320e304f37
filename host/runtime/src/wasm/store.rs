//! The data of one plugin `Store`, in parts that each keep to themselves: the WASI context
//! and resource table, the limiter, one call's state ([`call`]), the output buffers
//! ([`output`]), the declaration window, the listener frame, and what the plugin was
//! granted. Host imports (`imports/`) and the sandbox's WASI replacements (`sandbox/`) work
//! on it; it names neither.

pub(crate) mod call;
mod limiter;
pub(crate) mod output;

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::declare::{EntryFactory, Registration};
use super::ident::{Ident, LogSink};
use super::sandbox::clock::StoreClock;
use super::sandbox::grants::Granted;
use super::sandbox::SandboxState;
use crate::policy::Limits;
use crate::prompt::{Assembly, Next, ProviderError};
use call::CallState;
pub(crate) use limiter::Limiter;
use output::Output;

/// The state of one `on-assemble` call: the assembly moved out of the core, and the
/// continuation.
pub(crate) struct ListenerFrame {
    /// The assembly the handle designates (taken out while `next` runs).
    pub(crate) assembly: Assembly,
    /// The rest of the chain.
    pub(crate) next: Next,
    /// The inner chain's failure, kept so a listener cannot swallow it.
    pub(crate) inner_error: Option<ProviderError>,
    /// A copy of the assembly right after `next` returned (only under `on_error = "skip"`,
    /// to fall back to the inner chain's result if this plugin then fails).
    pub(crate) after_next: Option<Box<Assembly>>,
    /// Whether to take `after_next`.
    pub(crate) snapshot_after_next: bool,
}

/// The data of one plugin store.
pub(crate) struct StoreData {
    wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) limits: Arc<Limits>,
    /// The running call (reset whole by [`StoreData::begin_call`]).
    pub(crate) call: CallState,
    /// How long a cancelled call may run on before it is interrupted (contract 0.2.0 plugins
    /// can see the cancellation and stop on their own).
    pub(crate) cancel_grace: Duration,
    /// Whether (and where) declarations are accepted right now.
    pub(crate) registration: Registration,
    /// The running `on-assemble` call, if any.
    pub(crate) frame: Option<ListenerFrame>,
    /// stdout, stderr and `log` output.
    pub(crate) output: Output,
    /// The WASI monotonic clock of this store (shared with the capped sleep).
    pub(crate) clock: StoreClock,
    /// What the plugin was granted, opened at load (the sandbox hands out the directories).
    pub(crate) granted: Option<Arc<Granted>>,
    /// Builds the providers of the dynamic entries `init` declares.
    pub(crate) factory: Weak<dyn EntryFactory>,
    /// `wasi:http`'s context, and the hooks that send the plugin's requests.
    #[cfg(feature = "http")]
    http: wasmtime_wasi_http::WasiHttpCtx,
    #[cfg(feature = "http")]
    egress: super::egress::EgressHooks,
}

impl StoreData {
    /// The data of a new store of the plugin `ident`: an empty WASI context but for what the
    /// plugin was `granted`.
    pub(crate) fn new(
        ident: Ident,
        limits: Arc<Limits>,
        granted: Option<Arc<Granted>>,
        factory: Weak<dyn EntryFactory>,
        sink: Option<LogSink>,
    ) -> Self {
        #[cfg(feature = "http")]
        let plugin = ident.plugin.clone();
        let output = Output::new(ident, limits.max_log_bytes, sink);
        let clock = StoreClock::new();
        let (stdout, stderr) = output.captures();
        let wasi = super::sandbox::context(clock.clone(), stdout, stderr, granted.as_deref());
        #[cfg(feature = "http")]
        let egress = super::egress::EgressHooks {
            egress: granted.as_ref().and_then(|g| g.egress.clone()),
            plugin,
            deadline: None,
        };
        let mut table = ResourceTable::new();
        table.set_max_capacity(limits.resource_handles);
        Self {
            wasi,
            table,
            limiter: Limiter::new(&limits),
            limits,
            call: CallState::default(),
            cancel_grace: Duration::ZERO,
            registration: Registration::Closed,
            frame: None,
            output,
            clock,
            granted,
            factory,
            #[cfg(feature = "http")]
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            #[cfg(feature = "http")]
            egress,
        }
    }

    /// Begin a call under `timeout` with the caller's `signal`: the one place per-call state
    /// is reset.
    pub(crate) fn begin_call(
        &mut self,
        timeout: Duration,
        signal: Option<crate::prompt::CancelToken>,
    ) {
        self.call = CallState::begin(timeout, signal);
        self.limiter.hit = None;
    }

    /// Whether the running call must stop now (see [`CallState::must_stop`]).
    pub(crate) fn must_stop(&mut self) -> bool {
        self.call.must_stop(self.cancel_grace)
    }

    /// Count `n` guest-supplied bytes against the call's output budget. On overflow the
    /// import traps (the caller returns the error), and the call is reported as a `Limit`.
    pub(crate) fn charge(&mut self, n: usize, what: &str) -> wasmtime::Result<()> {
        self.call.bytes = self.call.bytes.saturating_add(n);
        if self.call.bytes > self.limits.max_output_bytes {
            let msg = format!(
                "output limit of {} bytes exceeded ({what})",
                self.limits.max_output_bytes
            );
            self.call.over_budget = Some(msg.clone());
            return Err(wasmtime::Error::msg(msg));
        }
        Ok(())
    }
}

#[cfg(feature = "http")]
impl wasmtime_wasi_http::WasiHttpView for StoreData {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        // Every request is bounded by the call running when it is sent.
        self.egress.deadline = self.call.deadline;
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.egress,
        }
    }
}

impl WasiView for StoreData {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl SandboxState for StoreData {
    fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    fn granted(&self) -> Option<&Arc<Granted>> {
        self.granted.as_ref()
    }

    fn charge(&mut self, n: usize, what: &str) -> wasmtime::Result<()> {
        StoreData::charge(self, n, what)
    }

    fn deadline(&self) -> Option<Instant> {
        self.call.deadline
    }

    fn signal(&self) -> Option<crate::prompt::CancelToken> {
        self.call.signal.clone()
    }

    fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    fn must_stop(&mut self) -> bool {
        StoreData::must_stop(self)
    }

    fn memory_limit(&self) -> usize {
        self.limits.memory_bytes
    }

    fn refuse(&mut self, message: String) -> wasmtime::Error {
        self.call.over_budget = Some(message.clone());
        wasmtime::Error::msg(message)
    }
}
