//! [`InProcessServer`]: `prompt-host serve` inside the Python process.
//!
//! The server runs on a thread of its own with its own tokio runtime, reading request lines
//! from a bounded channel and writing answer lines to another, exactly as the command runs
//! over stdio. The Python side (`prompt_host.inprocess`) wraps it in the shape of a child
//! process (stdin, stdout, stderr, wait, kill), so the clients' code is the same for both.
//! Beside the lines, `InProcessServer.call` runs a request on the caller's own thread and
//! answers it with Python objects (see `call.rs`); the Python side uses it for calls that
//! have neither a cancel token nor a timeout.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyBrokenPipeError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tokio::io::BufReader;
use tokio::sync::{mpsc, oneshot};

use prompt_host::wasm::PluginLog;
use prompt_host::RuntimeConfig;
use prompt_host_cli::serve::{build_server, ChunkReader, ServeLimits};
use prompt_host_serve::Server;

use crate::call::Slot;
use crate::lines::{LineWriter, LINES_AHEAD};

/// Request chunks taken ahead of the server: a client that writes faster than requests are
/// read waits, as it would on a full pipe.
const CHUNKS_AHEAD: usize = 4;

/// The exit status of a server that was killed: what a child process killed by SIGKILL
/// reports to Python (`-signal.SIGKILL`).
const KILLED: i32 = -9;

/// How long a server that stopped serving gives its tasks to end before its runtime is
/// dropped with them still running.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Between two looks for a signal (Ctrl-C) while Python waits on the server.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// The exit status, once the server stopped.
#[derive(Default)]
struct Exit {
    status: Mutex<Option<i32>>,
    changed: Condvar,
}

impl Exit {
    fn set(&self, status: i32) {
        let mut slot = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(status);
        }
        self.changed.notify_all();
    }

    fn get(&self) -> Option<i32> {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wait at most `limit` for the status.
    fn wait(&self, limit: Duration) -> Option<i32> {
        let slot = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        let (slot, _) = self
            .changed
            .wait_timeout_while(slot, limit, |status| status.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        *slot
    }
}

/// The stderr lines a server writes (plugin log lines at the default level, and the error
/// that stopped it), for the client's `stderr_tail` and `on_stderr`. Closed when the server
/// stops, which ends the client's stderr reader.
type StderrSender = Arc<Mutex<Option<std::sync::mpsc::Sender<String>>>>;

fn say(stderr: &StderrSender, line: String) {
    if let Some(tx) = stderr
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        let _ = tx.send(line);
    }
}

/// `prompt-host serve` running in this process. `config`: a host.toml (else an empty
/// default host); `max_request_bytes`: the longest request line; `cache_dir`: the compile
/// cache (else `PROMPT_HOST_CACHE_DIR`, else the user's cache directory).
///
/// A host.toml that cannot be loaded stops the server with status 1 and the error on its
/// stderr, as the command does.
#[pyclass(frozen, module = "prompt_host._native")]
pub struct InProcessServer {
    /// Request bytes to the server; `None` once the input is closed.
    input: Mutex<Option<mpsc::Sender<std::io::Result<Vec<u8>>>>>,
    output: Mutex<mpsc::Receiver<Vec<u8>>>,
    stderr: Mutex<std::sync::mpsc::Receiver<String>>,
    exit: Arc<Exit>,
    kill: Mutex<Option<oneshot::Sender<()>>>,
    /// Set by [`InProcessServer::kill`]: however serving ended meanwhile (the client may have
    /// closed the input just before), the end is a kill.
    killed: Arc<AtomicBool>,
    /// The server for [`InProcessServer::call`], once built, and the runtime it runs on.
    pub(crate) slot: Arc<Slot>,
    pub(crate) handle: tokio::runtime::Handle,
    /// The process that made it: its threads exist only there, so a forked child that
    /// calls it is refused rather than left waiting for ever.
    created_in: u32,
}

impl InProcessServer {
    /// Refuse a use from a process forked from the one that made the server.
    fn check_process(&self) -> PyResult<()> {
        let now = std::process::id();
        if now == self.created_in {
            return Ok(());
        }
        Err(PyRuntimeError::new_err(format!(
            "this in-process prompt-host was created in process {} and cannot be used in process {now}, forked from it (its threads are not in this process); create a new one in this process",
            self.created_in
        )))
    }
}

#[pymethods]
impl InProcessServer {
    #[new]
    #[pyo3(signature = (config=None, max_request_bytes=None, cache_dir=None))]
    fn new(
        config: Option<PathBuf>,
        max_request_bytes: Option<usize>,
        cache_dir: Option<PathBuf>,
    ) -> PyResult<Self> {
        // Installed by the first server, not on import: the command line
        // (`run_command_line`) sets its own logger for stderr.
        crate::host_log::install();
        let (input, chunks) = mpsc::channel(CHUNKS_AHEAD);
        let (lines, output) = mpsc::channel(LINES_AHEAD);
        let (stderr_tx, stderr) = std::sync::mpsc::channel();
        let stderr_sender: StderrSender = Arc::new(Mutex::new(Some(stderr_tx)));
        let exit = Arc::new(Exit::default());
        let (kill, killed) = oneshot::channel();
        let killed_flag = Arc::new(AtomicBool::new(false));
        let thread_killed = Arc::clone(&killed_flag);

        let mut limits = ServeLimits::default();
        if let Some(bytes) = max_request_bytes {
            limits = limits.max_request_bytes(bytes.max(1));
        }
        // RuntimeConfig's default is the user's cache directory, which the argument and the
        // variable replace; neither leaves it, rather than no cache at all.
        let mut runtime = RuntimeConfig::default();
        if let Some(dir) =
            cache_dir.or_else(|| std::env::var_os("PROMPT_HOST_CACHE_DIR").map(PathBuf::from))
        {
            runtime.cache_dir = Some(dir);
        }
        let sink_stderr = Arc::clone(&stderr_sender);
        runtime.log_sink = Some(Arc::new(move |line: &PluginLog| {
            if let Some(text) = prompt_host_cli::plugin_log_text(line) {
                say(&sink_stderr, text);
            }
        }));

        let tokio = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("prompt-host")
            .build()
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the async runtime: {e}")))?;
        let handle = tokio.handle().clone();
        let slot = Arc::new(Slot::default());
        let thread_slot = Arc::clone(&slot);
        let thread_stderr = Arc::clone(&stderr_sender);
        let thread_exit = Arc::clone(&exit);
        std::thread::Builder::new()
            .name("prompt-host-serve".into())
            .spawn(move || {
                let status = serve_on(
                    tokio,
                    Start {
                        config,
                        runtime,
                        limits,
                    },
                    ChunkReader::new(chunks),
                    LineWriter::new(lines),
                    (killed, &thread_killed),
                    &thread_slot,
                    &thread_stderr,
                );
                thread_exit.set(status);
                // The end of stderr comes after the status, so a client that reads stderr to
                // its end finds the status set.
                thread_stderr
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
            })
            .map_err(|e| {
                PyRuntimeError::new_err(format!("cannot start the in-process server: {e}"))
            })?;

        Ok(Self {
            input: Mutex::new(Some(input)),
            output: Mutex::new(output),
            stderr: Mutex::new(stderr),
            exit,
            kill: Mutex::new(Some(kill)),
            killed: killed_flag,
            slot,
            handle,
            created_in: std::process::id(),
        })
    }

    /// Run one request (a JSON-RPC request object's text) to its answer, in this thread with
    /// the GIL released: `(kind, payload, lines)` — kind 0 a result as objects, 1 a result as
    /// JSON text, 2 an error object as JSON text; `lines` the output lines queued before the
    /// answer, to be delivered first — or `None` when the server is not running. Ctrl-C
    /// cancels it.
    fn call<'py>(
        &self,
        py: Python<'py>,
        line: String,
    ) -> PyResult<Option<(u8, Bound<'py, PyAny>, u64)>> {
        self.check_process()?;
        crate::call::call(py, &self.slot, &self.handle, line)
    }

    /// Hand request bytes to the server (whole lines or parts of them); waits, with the
    /// GIL released, while the server is that far behind. `BrokenPipeError` once the server
    /// stopped or the input was closed.
    fn write(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        self.check_process()?;
        let sender = self
            .input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(sender) = sender else {
            return Err(PyBrokenPipeError::new_err("the server's input is closed"));
        };
        py.detach(move || sender.blocking_send(Ok(data)))
            .map_err(|_| PyBrokenPipeError::new_err("the in-process server stopped"))
    }

    /// Close the server's input: it answers what is in flight, then stops (status 0).
    fn close_input(&self) {
        self.input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// The next line the server wrote (an answer or a notification, without its newline),
    /// waiting with the GIL released; `None` once the server stopped and every line was
    /// read.
    fn read_line<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        let line = py.detach(|| {
            self.output
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .blocking_recv()
        })?;
        Some(PyBytes::new(py, &line))
    }

    /// The next stderr line, waiting with the GIL released; `None` once the server stopped.
    fn read_stderr_line(&self, py: Python<'_>) -> Option<String> {
        py.detach(|| {
            self.stderr
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .recv()
                .ok()
        })
    }

    /// The exit status if the server stopped: 0 when its input closed, 1 when it could not
    /// start or failed, -9 when killed.
    fn poll(&self) -> Option<i32> {
        self.exit.get()
    }

    /// Wait for the server to stop, at most `timeout` seconds (for ever when `None`); the
    /// status, or `None` on timeout. Ctrl-C interrupts the wait.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<i32>> {
        self.check_process()?;
        let deadline = timeout.map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
        loop {
            let slice = match deadline {
                Some(deadline) => deadline
                    .saturating_duration_since(Instant::now())
                    .min(SIGNAL_POLL),
                None => SIGNAL_POLL,
            };
            if let Some(status) = py.detach(|| self.exit.wait(slice)) {
                return Ok(Some(status));
            }
            py.check_signals()?;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
        }
    }

    /// Stop the server at once, as SIGKILL stops a process: requests in flight get no
    /// answer, and the status is -9.
    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(kill) = self
            .kill
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = kill.send(());
        }
        self.close_input();
    }
}

impl Drop for InProcessServer {
    /// A server nobody can reach any more stops: its input closes (it answers what is in
    /// flight to nobody) and its stderr with it.
    fn drop(&mut self) {
        self.close_input();
    }
}

/// What the server is built from.
struct Start {
    config: Option<PathBuf>,
    runtime: RuntimeConfig,
    limits: ServeLimits,
}

/// Build the server on `tokio` and serve until the input closes, the client stops reading,
/// or `killed`; the exit status. The server is in `slot` while it serves.
#[allow(clippy::too_many_arguments)]
fn serve_on(
    tokio: tokio::runtime::Runtime,
    start: Start,
    input: ChunkReader,
    output: LineWriter,
    (killed, kill_requested): (oneshot::Receiver<()>, &AtomicBool),
    slot: &Slot,
    stderr: &StderrSender,
) -> i32 {
    let outcome = tokio.block_on(async move {
        let server: Arc<Server> =
            match build_server(start.config.as_deref(), start.runtime, start.limits) {
                Ok(server) => server,
                Err(e) => return Some(Err(e)),
            };
        slot.ready(Arc::clone(&server));
        tokio::select! {
            served = server.serve(BufReader::new(input), output) => Some(served.map_err(anyhow::Error::from)),
            _ = killed => None,
        }
    });
    let outcome = if kill_requested.load(Ordering::SeqCst) {
        None
    } else {
        outcome
    };
    // The calls running on callers' threads end before the runtime does (cancelled first
    // when killed).
    slot.stop(outcome.is_none(), SHUTDOWN_GRACE);
    match outcome {
        Some(Ok(())) => {
            tokio.shutdown_timeout(SHUTDOWN_GRACE);
            0
        }
        Some(Err(e)) => {
            say(stderr, format!("error: {}", prompt_host_cli::chain(&e)));
            tokio.shutdown_timeout(SHUTDOWN_GRACE);
            1
        }
        None => {
            tokio.shutdown_background();
            KILLED
        }
    }
}
