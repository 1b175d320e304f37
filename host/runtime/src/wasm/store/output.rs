//! What a plugin writes outside the prompt — stdout, stderr, `log` lines — kept per instance
//! under a byte budget and flushed into the host's log (and the runtime's sink) after each
//! call, escaped.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

use super::super::ident::{announce, Ident, LogSink, PluginLog};
use super::super::names::escape;

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
    pub(crate) buf: Arc<Mutex<OutputBuf>>,
    pub(crate) written: Arc<AtomicBool>,
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

/// One instance's output: its two buffers (stdout and `log` share one), the flag that says
/// something was written since the last flush, and where lines go.
pub(crate) struct Output {
    pub(crate) ident: Ident,
    /// stdout + `log` output.
    pub(crate) stdout: Arc<Mutex<OutputBuf>>,
    /// stderr output.
    pub(crate) stderr: Arc<Mutex<OutputBuf>>,
    /// Raised when stdout/stderr got bytes or log output was dropped since the last flush.
    pub(crate) written: Arc<AtomicBool>,
    /// Where plugin output also goes.
    pub(crate) sink: Option<LogSink>,
    /// While held (an `init` run ahead of its turn, see [`Output::hold`]): the `log` lines
    /// written so far, in order; stdout and stderr stay in their buffers.
    held: Option<Vec<(&'static str, log::Level, String)>>,
}

impl Output {
    /// Empty buffers of `cap` bytes each, for the plugin `ident`.
    pub(crate) fn new(ident: Ident, cap: usize, sink: Option<LogSink>) -> Self {
        let buf = || {
            Arc::new(Mutex::new(OutputBuf {
                cap,
                ..OutputBuf::default()
            }))
        };
        Self {
            ident,
            stdout: buf(),
            stderr: buf(),
            written: Arc::new(AtomicBool::new(false)),
            sink,
            held: None,
        }
    }

    /// Keep everything the plugin writes from now on until [`Output::release`]: a plugin
    /// whose `init` runs beside others' must be heard in its turn, and not at all if its
    /// turn never comes.
    pub(crate) fn hold(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// Emit what was held, in the order it would have been (`log` lines as written, then
    /// stdout and stderr as after the call), and stop holding.
    pub(crate) fn release(&mut self) {
        for (stream, level, message) in self.held.take().unwrap_or_default() {
            self.emit(stream, level, &message);
        }
        self.flush();
    }

    /// The WASI stdout and stderr streams feeding these buffers.
    pub(crate) fn captures(&self) -> (Capture, Capture) {
        let capture = |buf: &Arc<Mutex<OutputBuf>>| Capture {
            buf: buf.clone(),
            written: self.written.clone(),
        };
        (capture(&self.stdout), capture(&self.stderr))
    }

    /// Write buffered stdout/stderr into the host log, one line per output line.
    pub(crate) fn flush(&mut self) {
        if self.held.is_some() {
            // Nothing comes out before `release`, but a trap's message names the last
            // stderr line as it does after a flush.
            if let Ok(mut err) = self.stderr.lock() {
                let text = String::from_utf8_lossy(&err.pending).into_owned();
                if let Some(last) = last_line(&text) {
                    err.last_stderr = last;
                }
            }
            return;
        }
        if !self.written.swap(false, Ordering::AcqRel) {
            return;
        }
        let buffers = [
            ("stdout", self.stdout.clone()),
            ("stderr", self.stderr.clone()),
        ];
        for (name, buf) in buffers {
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
                if let Some(last) = last_line(&text) {
                    out.last_stderr = last;
                }
            }
        }
    }

    /// The host's own notice about this plugin (a whole sentence), to the log and the sink.
    pub(crate) fn emit_notice(&self, stream: &'static str, message: &str) {
        announce(self.sink.as_ref(), &self.ident, stream, message);
    }

    /// One line of plugin output, escaped (see `untrusted`): to the `log` crate at `level`
    /// and to the runtime's sink, if any.
    pub(crate) fn emit(&mut self, stream: &'static str, level: log::Level, message: &str) {
        if let Some(held) = &mut self.held {
            held.push((stream, level, message.to_string()));
            return;
        }
        let message = escape(message);
        log::log!(
            target: "prompt_host::plugin",
            level,
            "plugin \"{}\" ({}) {stream}: {message}",
            self.ident.plugin,
            self.ident.scope_label()
        );
        if let Some(sink) = &self.sink {
            sink(&PluginLog::new(&self.ident, stream, message.into_owned()));
        }
    }

    /// The last stderr line since the call started, if any (panic messages).
    pub(crate) fn take_last_stderr(&mut self) -> Option<String> {
        let mut err = self.stderr.lock().ok()?;
        let s = std::mem::take(&mut err.last_stderr);
        (!s.is_empty()).then_some(s)
    }
}

/// The last line of stderr `text` worth quoting in a trap's message, escaped: a Rust panic
/// ends with a "note: run with RUST_BACKTRACE" hint, which is skipped.
fn last_line(text: &str) -> Option<String> {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("note:"))
        .map(|l| escape(l).into_owned())
}
