//! The data of one plugin `Store`: the empty WASI context, the resource table, limits and
//! deadline bookkeeping, the registration window and the listener frame.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::limits::{Limiter, Limits};
use super::plugin::PluginCell;
use super::registry_host::Registration;
use crate::prompt::{Assembly, Next, ProviderError};

/// Who a store belongs to, for messages and log lines.
#[derive(Debug, Clone)]
pub(crate) struct Ident {
    /// Plugin name (the fiber owner).
    pub(crate) plugin: Arc<str>,
    /// Scope key, `None` = global.
    pub(crate) scope: Option<Arc<str>>,
}

impl Ident {
    /// `scope agent:1` or `global`.
    pub(crate) fn scope_label(&self) -> String {
        super::error::scope_label(self.scope.as_deref())
    }
}

/// Output a plugin writes (stdout, stderr, `log`), kept up to a byte budget per instance.
#[derive(Debug, Default)]
pub(crate) struct OutputBuf {
    pub(crate) pending: Vec<u8>,
    pub(crate) kept: usize,
    pub(crate) cap: usize,
    pub(crate) dropped: usize,
    /// The last non-empty stderr text, kept for trap messages (a Rust panic prints there).
    pub(crate) last_stderr: String,
    /// `dropped` when it was last reported.
    pub(crate) reported_dropped: usize,
}

impl OutputBuf {
    /// Accept `bytes`, keeping what fits in the budget; report everything as written so a
    /// guest's `println!` never fails (std panics on a failed stdout write).
    pub(crate) fn accept(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.kept);
        let take = room.min(bytes.len());
        self.pending.extend_from_slice(&bytes[..take]);
        self.kept += take;
        self.dropped += bytes.len() - take;
    }
}

/// A WASI stdout/stderr that feeds an [`OutputBuf`] and raises the store's "output
/// written" flag, so the flush after each call costs one atomic load when nothing was.
#[derive(Clone)]
pub(crate) struct Capture {
    buf: Arc<Mutex<OutputBuf>>,
    written: Arc<AtomicBool>,
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if let Ok(mut out) = self.buf.lock() {
            out.accept(buf);
        }
        self.written.store(true, Ordering::Release);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

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
pub struct HostState {
    wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) ident: Ident,
    pub(crate) limits: Arc<Limits>,
    /// The wall-clock deadline of the running call.
    pub(crate) deadline: Option<Instant>,
    /// The running call's time budget (for messages).
    pub(crate) timeout: std::time::Duration,
    /// Set by the epoch callback when the deadline passed.
    pub(crate) timed_out: bool,
    /// The running call's assembly signal: the caller may cancel it.
    pub(crate) signal: Option<crate::prompt::CancelToken>,
    /// Set when the call was interrupted because the signal was cancelled.
    pub(crate) cancelled: bool,
    /// When this call first saw its signal cancelled, and how long a plugin that can see
    /// the cancellation (contract 0.2.0, `control.cancelled`) gets to stop on its own.
    pub(crate) cancel_seen: Option<Instant>,
    pub(crate) cancel_grace: std::time::Duration,
    /// Bytes the running call handed to the host through imports.
    pub(crate) call_bytes: usize,
    /// Set when an import refused data over the output budget.
    pub(crate) over_budget: Option<String>,
    /// Whether (and where) declarations are accepted right now.
    pub(crate) registration: Registration,
    /// The running `on-assemble` call, if any.
    pub(crate) frame: Option<ListenerFrame>,
    /// stdout + `log` output.
    pub(crate) stdout: Arc<Mutex<OutputBuf>>,
    /// stderr output.
    pub(crate) stderr: Arc<Mutex<OutputBuf>>,
    /// The running call asked the host to keep its answer until the context changes
    /// (contract 0.2.0, `control.keep-until-context-changes`); reset at every call.
    pub(crate) keep_answer: bool,
    /// Raised when stdout/stderr got bytes or log output was dropped since the last flush.
    pub(crate) output_written: Arc<AtomicBool>,
    /// The WASI monotonic clock of this store (shared with the capped sleep).
    pub(crate) clock: super::clock::StoreClock,
    /// Where plugin output also goes.
    pub(crate) sink: Option<super::runtime::LogSink>,
    /// The plugin this store belongs to, for building dynamic providers during `init`.
    pub(crate) cell: Weak<PluginCell>,
    /// What the plugin was granted, opened at load (`files.rs` hands out the directories).
    pub(crate) granted: Option<Arc<super::grants::Granted>>,
}

impl HostState {
    pub(crate) fn new(
        ident: Ident,
        limits: Arc<Limits>,
        cell: Weak<PluginCell>,
        sink: Option<super::runtime::LogSink>,
    ) -> Self {
        let granted = cell.upgrade();
        let stdout = Arc::new(Mutex::new(OutputBuf {
            cap: limits.max_log_bytes,
            ..OutputBuf::default()
        }));
        let stderr = Arc::new(Mutex::new(OutputBuf {
            cap: limits.max_log_bytes,
            ..OutputBuf::default()
        }));
        let output_written = Arc::new(AtomicBool::new(false));
        // Empty WASI: no preopens, env, args; stdin closed (the builder's default); no
        // sockets of any kind and no name lookup. Clocks and random stay (std needs them).
        let clock = super::clock::StoreClock::new();
        let mut builder = WasiCtxBuilder::new();
        builder
            .monotonic_clock(clock.clone())
            .stdout(Capture {
                buf: stdout.clone(),
                written: output_written.clone(),
            })
            .stderr(Capture {
                buf: stderr.clone(),
                written: output_written.clone(),
            })
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }));
        // What the operator granted this plugin, and nothing else: the variables here, the
        // directories through `files.rs` (opened when the plugin was loaded).
        let granted = granted.map(|cell| cell.granted.clone());
        for (name, value) in granted.iter().flat_map(|g| &g.env) {
            builder.env(name, value);
        }
        let wasi = builder.build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(limits.resource_handles);
        Self {
            wasi,
            table,
            clock,
            limiter: Limiter::new(&limits),
            ident,
            limits,
            deadline: None,
            timeout: std::time::Duration::ZERO,
            timed_out: false,
            signal: None,
            cancelled: false,
            cancel_seen: None,
            cancel_grace: std::time::Duration::ZERO,
            call_bytes: 0,
            over_budget: None,
            registration: Registration::Closed,
            frame: None,
            stdout,
            stderr,
            output_written,
            keep_answer: false,
            sink,
            cell,
            granted,
        }
    }

    /// Whether the running call must stop now: its deadline passed (sets `timed_out`) or its
    /// signal was cancelled (sets `cancelled`). Checked at every epoch tick and in host work
    /// done on the guest's behalf.
    pub(crate) fn must_stop(&mut self) -> bool {
        if self.signal.as_ref().is_some_and(|s| s.is_cancelled()) {
            // A plugin that can see the cancellation gets a short grace to stop cleanly.
            let seen = *self.cancel_seen.get_or_insert_with(Instant::now);
            if seen.elapsed() >= self.cancel_grace {
                self.cancelled = true;
                return true;
            }
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out = true;
            return true;
        }
        false
    }

    /// Count `n` guest-supplied bytes against the call's output budget. On overflow the
    /// import traps (the caller returns the error), and the call is reported as a `Limit`.
    pub(crate) fn charge(&mut self, n: usize, what: &str) -> wasmtime::Result<()> {
        self.call_bytes = self.call_bytes.saturating_add(n);
        if self.call_bytes > self.limits.max_output_bytes {
            let msg = format!(
                "output limit of {} bytes exceeded ({what})",
                self.limits.max_output_bytes
            );
            self.over_budget = Some(msg.clone());
            return Err(wasmtime::Error::msg(msg));
        }
        Ok(())
    }

    /// Write buffered stdout/stderr into the host log, one line per output line.
    pub(crate) fn flush_output(&mut self) {
        if !self.output_written.swap(false, Ordering::AcqRel) {
            return;
        }
        for (name, buf) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let Ok(mut out) = buf.lock() else { continue };
            if out.dropped > out.reported_dropped {
                let message = format!(
                    "plugin \"{}\" ({}): {} bytes of its {name} and log output dropped so far \
                     (more than max_log_bytes = {} per instance)",
                    self.ident.plugin,
                    self.ident.scope_label(),
                    out.dropped,
                    out.cap
                );
                out.reported_dropped = out.dropped;
                self.emit_notice("dropped", &message);
            }
            if out.pending.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(&out.pending).into_owned();
            out.pending.clear();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                self.emit(name, log::Level::Info, line);
            }
            if name == "stderr" {
                let mut lines = text.lines().rev().map(str::trim);
                // A Rust panic ends with a "note: run with RUST_BACKTRACE" hint; skip it.
                if let Some(last) = lines.find(|l| !l.is_empty() && !l.starts_with("note:")) {
                    out.last_stderr = super::untrusted::escape(last.trim()).into_owned();
                }
            }
        }
    }

    /// The host's own notice about this plugin (a whole sentence), to the log and the sink.
    pub(crate) fn emit_notice(&self, stream: &'static str, message: &str) {
        log::warn!(target: "prompt_host::plugin", "{message}");
        if let Some(sink) = &self.sink {
            sink(&super::runtime::PluginLog {
                plugin: self.ident.plugin.to_string(),
                scope: self.ident.scope.as_deref().map(str::to_string),
                stream,
                message: message.to_string(),
            });
        }
    }

    /// One line of plugin output, escaped (see `untrusted`): to the `log` crate at `level`
    /// and to the runtime's sink, if any.
    pub(crate) fn emit(&self, stream: &'static str, level: log::Level, message: &str) {
        let message = super::untrusted::escape(message);
        log::log!(
            target: "prompt_host::plugin",
            level,
            "plugin \"{}\" ({}) {stream}: {message}",
            self.ident.plugin,
            self.ident.scope_label()
        );
        if let Some(sink) = &self.sink {
            sink(&super::runtime::PluginLog {
                plugin: self.ident.plugin.to_string(),
                scope: self.ident.scope.as_deref().map(str::to_string),
                stream,
                message: message.into_owned(),
            });
        }
    }

    /// The last stderr line since the call started, if any (panic messages).
    pub(crate) fn take_last_stderr(&mut self) -> Option<String> {
        let mut err = self.stderr.lock().ok()?;
        let s = std::mem::take(&mut err.last_stderr);
        (!s.is_empty()).then_some(s)
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
