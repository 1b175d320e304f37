//! JSON-RPC 2.0 over lines: the embedding API for agents written in any language. One
//! request (or batch) per line in; one response per line out, plus notifications the client
//! subscribed to. docs/protocol.md specifies every method; [`protocol`] has the type of every
//! message, from which `protocol/prompt-host.schema.json` is generated.
//!
//! Requests are served concurrently, so a slow assembly does not hold up the others and a
//! request can be cancelled while it runs (`$/cancelRequest {id}`, the Language Server
//! Protocol's convention; the request then fails with code -32800). Requests that name a
//! `session` run one at a time, in the order they arrived, on that session; the others run
//! as soon as they arrive, so a client that sends a request depending on another waits for
//! the first's response. A notification (no `id`) gets no response. Malformed input gets a
//! JSON-RPC error and the server keeps serving.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use prompt_host::host::Host;

mod boundary;
mod cache;
mod direct;
mod envelope;
mod error;
mod lines;
mod methods;
mod notify;
mod output;
mod params;
pub mod protocol;
mod shelf;

pub use direct::TURN_POLL;
pub use error::{code, RpcError};
pub use lines::{Line, DEFAULT_MAX_REQUEST_BYTES};
pub use methods::{Answer, StepAnswer};
pub use notify::Notifier;
pub use output::DEFAULT_MAX_OUTPUT_BYTES;
pub use protocol::step_result::StepResultView;

use envelope::{Call, Id, Input, Refused};
use methods::SessionState;
use output::Output;

pub use protocol::{METHODS, PROTOCOL_VERSION};

/// Default of `serve --max-inflight`: requests taken in and not yet answered.
pub const DEFAULT_MAX_INFLIGHT: usize = 64;

/// Default of `serve --max-sessions`: sessions held at once.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;

/// Default of `serve --session-cache-bytes`: what the idle sessions a server keeps may hold,
/// as [`ServeLimits::session_cache_bytes`] measures it.
pub const DEFAULT_SESSION_CACHE_BYTES: usize = 4 << 20;

/// How much a server takes in and keeps: each bound is what stops a client (or a stuck
/// one) from growing the server's memory without end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ServeLimits {
    /// The longest request line, in bytes; a longer one is skipped unread and answered with
    /// an error.
    pub max_request_bytes: usize,
    /// Requests (a batch counts once) taken in and not yet answered; the next line is read
    /// when one is answered (`$/cancelRequest` lines are handled as soon as they are read).
    pub max_inflight: usize,
    /// Bytes of answers waiting to be written before the server stops reading requests;
    /// notifications are dropped while the output is over it.
    pub max_output_bytes: usize,
    /// Sessions held at once (a log file's holds a file descriptor): at the limit, a
    /// request for another one closes the least recently used idle session, and is refused
    /// only when every session held has a request running or waiting.
    pub max_sessions: usize,
    /// What the idle sessions a server keeps between requests may hold, measured as the
    /// bytes of the lines of their logs' events plus their last rendering and a SQLite
    /// session's connection (resident memory is about six times it). Past it, the least
    /// recently used idle sessions are closed; the next request on one opens it again (and
    /// `retry` on it is refused: nothing to retry).
    pub session_cache_bytes: usize,
}

impl ServeLimits {
    /// With the longest request line set to `bytes`.
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// With at most `n` requests taken in and not yet answered.
    pub fn max_inflight(mut self, n: usize) -> Self {
        self.max_inflight = n;
        self
    }

    /// With at most `bytes` of answers waiting to be written.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// With at most `n` session logs open.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n;
        self
    }

    /// With the idle sessions kept holding at most `bytes` ([`Self::session_cache_bytes`]).
    pub fn session_cache_bytes(mut self, bytes: usize) -> Self {
        self.session_cache_bytes = bytes;
        self
    }
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_inflight: DEFAULT_MAX_INFLIGHT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_cache_bytes: DEFAULT_SESSION_CACHE_BYTES,
        }
    }
}

type Job = (Call, Responder);

/// Where a session request's answer goes.
enum Responder {
    /// A line's answer (`None` for a notification).
    Line(mpsc::UnboundedSender<Option<String>>),
    /// An in-process client's call ([`Server::call`]), which runs on the caller's thread
    /// with the session's state lent to it.
    Lend(std::sync::mpsc::Sender<direct::Lent>),
}

/// The queue of one session log: its worker runs the session's requests in order.
struct SessionQueue {
    jobs: mpsc::UnboundedSender<Job>,
    /// Tells this queue from a later one for the same path.
    serial: u64,
    /// Set when the session's last request left it holding nothing (`close_session`),
    /// before that request's answer goes out: its worker is ending, and the log it held is
    /// closed, so it no longer counts against `--max-sessions` (a client that opens another
    /// log on that answer is not refused while the worker winds down).
    idle: Arc<std::sync::atomic::AtomicBool>,
    /// The session's state while its worker waits, for an in-process caller to take.
    shelf: Arc<shelf::Shelf>,
    /// What its state held after its last request ([`SessionState::held_bytes`]).
    held: AtomicUsize,
    /// The server's request count when a request last came for it: the least recently
    /// used idle session is the first closed ([`cache`]).
    used: AtomicU64,
}

/// What a session's worker is started with.
struct Worker {
    path: PathBuf,
    serial: u64,
    idle: Arc<std::sync::atomic::AtomicBool>,
    shelf: Arc<shelf::Shelf>,
}

/// The server state: the host, the session logs it holds open, the requests in flight.
pub struct Server {
    host: Arc<Host>,
    notifier: Arc<Notifier>,
    limits: ServeLimits,
    /// One queue (and worker) per session log path, while the log is open or requests for
    /// it wait.
    sessions: Mutex<HashMap<PathBuf, SessionQueue>>,
    next_serial: AtomicU64,
    /// Requests queued on sessions so far: the clock of [`SessionQueue::used`].
    clock: AtomicU64,
    /// Requests in flight by id (see [`Id::key`]), for `$/cancelRequest`.
    inflight: Mutex<HashMap<String, prompt_host::prompt::CancelToken>>,
    /// Whether the notification observers were started (by the first `subscribe`).
    pub(crate) watchers_started: std::sync::atomic::AtomicBool,
    /// Lines queued for the output so far (answers and notifications, in the order they are
    /// written): an in-process client's call is answered after the lines before it.
    lines_queued: Arc<AtomicU64>,
}

impl Server {
    /// Serve `host` with the default limits; notifications go nowhere until
    /// [`Server::serve`] attaches an output.
    pub fn new(host: Host) -> Arc<Self> {
        Self::with_notifier(host, Notifier::new())
    }

    /// Serve `host` with `notifier`, whose [`Notifier::sink`] the host's runtime was built
    /// with (so plugin log lines can become notifications).
    pub fn with_notifier(host: Host, notifier: Arc<Notifier>) -> Arc<Self> {
        Self::with_limits(host, notifier, ServeLimits::default())
    }

    /// [`Server::with_notifier`] with other limits.
    pub fn with_limits(host: Host, notifier: Arc<Notifier>, limits: ServeLimits) -> Arc<Self> {
        Arc::new(Self {
            host: Arc::new(host),
            notifier,
            limits,
            sessions: Mutex::new(HashMap::new()),
            next_serial: AtomicU64::new(1),
            clock: AtomicU64::new(0),
            inflight: Mutex::new(HashMap::new()),
            watchers_started: std::sync::atomic::AtomicBool::new(false),
            lines_queued: Arc::default(),
        })
    }

    /// The host served.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The limits this server keeps.
    pub fn limits(&self) -> &ServeLimits {
        &self.limits
    }

    /// Session logs the server holds a queue for (open, or with requests waiting).
    pub fn open_sessions(&self) -> usize {
        self.lock_sessions().len()
    }

    /// Handle one input line to completion; `None` when nothing is to be written
    /// (notifications, blank lines). Lines handled this way are not counted against
    /// [`ServeLimits::max_inflight`].
    pub async fn handle_line(self: &Arc<Self>, line: &str) -> Option<String> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.dispatch(line, move |response| {
            let _ = tx.send(response);
        });
        rx.recv().await.flatten()
    }

    /// Read requests from `input` until it closes, serving them concurrently, and write
    /// responses and notifications to `output`, one per line. Stops when `output` is closed.
    /// What waits is bounded by [`ServeLimits`].
    pub async fn serve<R, W>(self: &Arc<Self>, mut input: R, mut output: W) -> std::io::Result<()>
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let limits = self.limits;
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let (out, written) = Output::new(tx, limits.max_output_bytes, self.lines_queued.clone());
        let out = Arc::new(out);
        self.notifier.attach(out.clone());
        let mut writer = tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                let result = async {
                    output.write_all(line.as_bytes()).await?;
                    output.write_all(b"\n").await?;
                    output.flush().await
                }
                .await;
                written.written(line.len() + 1);
                if result.is_err() {
                    // Nobody reads the answers any more.
                    return;
                }
            }
        });
        let slots = Arc::new(Semaphore::new(limits.max_inflight.max(1)));
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            // Backpressure: answers nobody reads stop the reading of requests.
            tokio::select! {
                () = out.room() => {}
                _ = &mut writer => break,
            }
            let line = tokio::select! {
                line = lines::read_line(&mut input, &mut buffer, limits.max_request_bytes) => line?,
                // The output closed: stop reading.
                _ = &mut writer => break,
            };
            match line {
                Line::End => break,
                Line::TooLong(bytes) => {
                    out.respond(oversized_request(bytes, limits.max_request_bytes));
                }
                Line::Complete => {
                    let line = String::from_utf8_lossy(&buffer).into_owned();
                    let needs_slot = !line.trim().is_empty() && !is_cancel_only(&line);
                    let permit = if needs_slot {
                        tokio::select! {
                            permit = slots.clone().acquire_owned() => permit.ok(),
                            _ = &mut writer => break,
                        }
                    } else {
                        None
                    };
                    let out = out.clone();
                    self.dispatch(&line, move |response| {
                        if let Some(response) = response {
                            out.respond(response);
                        }
                        drop::<Option<OwnedSemaphorePermit>>(permit);
                    });
                }
            }
            lines::release_large(&mut buffer);
        }
        // Let the requests in flight answer, then close the output.
        self.notifier.detach();
        self.close_sessions();
        drop(out);
        if !writer.is_finished() {
            let _ = writer.await;
        }
        Ok(())
    }

    /// Parse a line and start its requests; `done` gets the line's answer (a batch's as one
    /// array), or `None` when nothing is to be written. A single request runs on a task of
    /// its own (or on its session's queue); a batch runs its requests in order and answers
    /// once. `$/cancelRequest` is handled at once.
    fn dispatch(self: &Arc<Self>, line: &str, done: impl FnOnce(Option<String>) + Send + 'static) {
        if line.trim().is_empty() {
            return done(None);
        }
        match envelope::parse_line(line) {
            Input::Invalid(e) => done(Some(envelope::error(None, &e))),
            Input::Single(call) => {
                let (tx, mut rx) = mpsc::unbounded_channel();
                self.start(call, tx);
                tokio::spawn(async move { done(rx.recv().await.flatten()) });
            }
            Input::Batch(calls) => {
                let me = Arc::clone(self);
                tokio::spawn(async move {
                    let mut responses = Vec::new();
                    for call in calls {
                        let (tx, mut rx) = mpsc::unbounded_channel();
                        me.start(call, tx);
                        if let Some(Some(response)) = rx.recv().await {
                            responses.push(response);
                        }
                    }
                    done((!responses.is_empty()).then(|| envelope::batch(&responses)));
                });
            }
        }
    }

    /// Run `call` on a task (or queue it on its session); its response (or `None` for a
    /// notification) is sent on `done`.
    fn start(
        self: &Arc<Self>,
        call: Result<Call, Refused>,
        done: mpsc::UnboundedSender<Option<String>>,
    ) {
        let mut call = match call {
            Ok(call) => call,
            Err(refused) => {
                let _ = done.send(Some(envelope::error(refused.id.as_ref(), &refused.error)));
                return;
            }
        };
        if call.method == "$/cancelRequest" {
            self.cancel_named(&call);
            let response = call.id.as_ref().map(|id| envelope::result_text(id, "{}"));
            let _ = done.send(response);
            return;
        }
        // Registered before the request starts, so a cancel right behind it finds it.
        if let Some(id) = &call.id {
            self.lock_inflight().insert(id.key(), call.signal.clone());
        }
        match session_of(&mut call, self.host()) {
            Some(Err(e)) => {
                let _ = done.send(self.answer(call.id, Err(e)));
            }
            Some(Ok(path)) => {
                if let Some(answer) = self.close_unheld(&path, &call) {
                    let _ = done.send(self.answer(call.id, answer));
                    return;
                }
                if let Err(refused) = self.queue(path, (call, Responder::Line(done))) {
                    let ((call, responder), e) = *refused;
                    let response = self.answer(call.id, Err(e));
                    if let Responder::Line(done) = responder {
                        let _ = done.send(response);
                    }
                }
            }
            None => {
                let me = Arc::clone(self);
                tokio::spawn(async move {
                    let response = me.run(call, None).await;
                    let _ = done.send(response);
                });
            }
        }
    }

    /// For `$/cancelRequest`: cancel the request in flight that `call` names, if any.
    fn cancel_named(&self, call: &Call) {
        if let Some(target) = &call.cancels {
            if let Some(token) = self.lock_inflight().get(target) {
                token.cancel();
            }
        }
    }

    /// Run one call to its response (`None` for a notification).
    async fn run(
        self: &Arc<Self>,
        call: Call,
        session: Option<&mut SessionState>,
    ) -> Option<String> {
        let mut call = call;
        let id = call.id.take();
        let signal = call.signal.clone();
        let outcome = if signal.is_cancelled() {
            Err(cancelled())
        } else if !call.params.is_object() {
            Err(RpcError::params("expected an object"))
        } else {
            let mut scratch = SessionState::default();
            let state = session.unwrap_or(&mut scratch);
            match self.dispatch_guarded(state, call).await {
                Ok(answer) => answer.into_json(state),
                Err(e) => Err(e),
            }
        };
        self.answer(id, outcome)
    }

    /// Run `call`'s method behind the request-level boundary ([`boundary`]): a panic inside
    /// it is this request's `internal` error, and a session's state it may have left half
    /// changed is dropped (the next request reads the log again).
    async fn dispatch_guarded(
        self: &Arc<Self>,
        state: &mut SessionState,
        call: Call,
    ) -> Result<Answer, RpcError> {
        let session = session_param(&call);
        let Call {
            method,
            params,
            signal,
            ..
        } = call;
        let ran = boundary::CatchUnwind::new(async {
            prompt_host::fault::inject(&method);
            methods::dispatch(self, state, &method, params, &signal).await
        })
        .await;
        ran.unwrap_or_else(|panic| {
            if session.is_some() {
                *state = SessionState::default();
            }
            Err(boundary::internal_error(
                &method,
                session.as_deref(),
                &*panic,
            ))
        })
    }

    /// The response to the request `id` (none for a notification), which leaves the
    /// requests in flight.
    fn answer(
        &self,
        id: Option<Id>,
        outcome: Result<Box<serde_json::value::RawValue>, RpcError>,
    ) -> Option<String> {
        let id = id?;
        self.lock_inflight().remove(&id.key());
        Some(match outcome {
            Ok(result) => envelope::result(&id, &result),
            Err(e) => envelope::error(Some(&id), &e),
        })
    }

    /// The answer to `close_session` for a session this server does not hold (no queue for
    /// its path): there is nothing to close, so it is answered here, without starting a
    /// worker and a blocking thread for it. A client closing many sessions it never opened
    /// would otherwise start as many. `None` for any other call, or a session held.
    fn close_unheld(
        &self,
        path: &std::path::Path,
        call: &Call,
    ) -> Option<Result<Box<serde_json::value::RawValue>, RpcError>> {
        if call.method != "close_session" || self.lock_sessions().contains_key(path) {
            return None;
        }
        let checked = params::parse::<params::SessionRef>(call.params.clone());
        Some(checked.and_then(|_| methods::raw(&json!({ "closed": false }))))
    }

    /// Queue `job` on the session at `path`, starting its queue (and worker) on first use.
    /// The job is sent while the map is locked, so a worker that finds its queue empty and
    /// removes it cannot lose a job sent meanwhile.
    fn queue(self: &Arc<Self>, path: PathBuf, job: Job) -> Result<(), Box<(Job, RpcError)>> {
        let mut sessions = self.lock_sessions();
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let job = match sessions.get(&path) {
            Some(queue) => {
                queue.used.store(now, Ordering::Relaxed);
                queue.idle.store(false, Ordering::Release);
                queue.shelf.job_queued();
                match queue.jobs.send(job) {
                    Ok(()) => return Ok(()),
                    // Its worker ended (it panicked): start another.
                    Err(unsent) => unsent.0,
                }
            }
            None => job,
        };
        sessions.remove(&path);
        let mut open = sessions
            .values()
            .filter(|q| !q.idle.load(Ordering::Acquire))
            .count();
        // At the limit, the least recently used idle session makes room.
        if open >= self.limits.max_sessions
            && cache::close_least_recently_used(&mut sessions, &path).is_some()
        {
            open -= 1;
        }
        if open >= self.limits.max_sessions {
            let mut e = RpcError::failed(
                "too-many-sessions",
                format!(
                    "session log {}: {open} session logs are open, the most this server holds (serve --max-sessions), and each has a request running or waiting; retry when one is answered",
                    prompt_host::session::display_name(&path),
                ),
            );
            e.data = Some(
                json!({"kind": "too-many-sessions", "session": prompt_host::session::display_name(&path), "limit": self.limits.max_sessions}),
            );
            return Err(Box::new((job, e)));
        }
        let (tx, rx) = mpsc::unbounded_channel::<Job>();
        let serial = self.next_serial.fetch_add(1, Ordering::Relaxed);
        let shelf = shelf::Shelf::new();
        shelf.job_queued();
        let _ = tx.send(job);
        let idle = Arc::new(std::sync::atomic::AtomicBool::new(false));
        sessions.insert(
            path.clone(),
            SessionQueue {
                jobs: tx,
                serial,
                idle: Arc::clone(&idle),
                shelf: Arc::clone(&shelf),
                held: AtomicUsize::new(0),
                used: AtomicU64::new(now),
            },
        );
        drop(sessions);
        let me = Arc::clone(self);
        let worker = Worker {
            path,
            serial,
            idle,
            shelf,
        };
        tokio::spawn(async move { me.session_worker(worker, rx).await });
        Ok(())
    }

    /// Run a session's requests one at a time, each on a blocking thread (appending syncs
    /// the log to disk, and checking a long reply is work: neither may hold up the async
    /// workers that answer everyone else). Ends when the session holds nothing open and no
    /// request waits, removing its queue.
    async fn session_worker(
        self: Arc<Self>,
        worker: Worker,
        mut jobs: mpsc::UnboundedReceiver<Job>,
    ) {
        let Worker {
            path,
            serial,
            idle,
            shelf,
        } = worker;
        let mut state = SessionState::default();
        loop {
            // While waiting, the state lies on the shelf, where an in-process caller with no
            // job queued ahead of it takes it without waking this task.
            shelf.put(state);
            let job = jobs.recv().await;
            let Some(taken) = shelf.take_back().await else {
                // A caller panicked with it: a later request starts afresh.
                self.forget_queue(&path, serial);
                return;
            };
            state = taken;
            let Some((call, responder)) = job else {
                return;
            };
            shelf.job_received();
            let done = match responder {
                Responder::Line(done) => done,
                Responder::Lend(lend) => {
                    let (give_back, returned) = tokio::sync::oneshot::channel();
                    let lent = direct::Lent {
                        call,
                        state,
                        give_back,
                        idle: Arc::clone(&idle),
                    };
                    state = match lend.send(lent) {
                        // The caller is gone: the state is ours again.
                        Err(unsent) => unsent.0.state,
                        Ok(()) => match returned.await {
                            Ok(state) => state,
                            // The caller panicked with it: a later request starts afresh.
                            Err(_) => {
                                self.forget_queue(&path, serial);
                                return;
                            }
                        },
                    };
                    state.free_after_answer();
                    if self.finish_turn(&path, serial, &state, &jobs) {
                        return;
                    }
                    continue;
                }
            };
            let me = Arc::clone(&self);
            let idle = Arc::clone(&idle);
            let handle = tokio::runtime::Handle::current();
            // Answered from the blocking thread, and what the request leaves is freed after
            // its answer is on its way: neither waits for a hop back to this task.
            let ran = tokio::task::spawn_blocking(move || {
                prompt_host::blocking::allow_blocking(|| {
                    let response = handle.block_on(me.run(call, Some(&mut state)));
                    idle.store(state.is_idle(), Ordering::Release);
                    let _ = done.send(response);
                    state.free_after_answer();
                    state
                })
            })
            .await;
            let Ok(returned) = ran else {
                // The request panicked: its state is gone; a later request starts afresh.
                self.forget_queue(&path, serial);
                return;
            };
            state = returned;
            if self.finish_turn(&path, serial, &state, &jobs) {
                return;
            }
        }
    }

    /// After a request on the session at `path`: whether its worker ends now (the session
    /// holds nothing open and no request waits), its queue removed.
    fn finish_turn(
        &self,
        path: &std::path::Path,
        serial: u64,
        state: &SessionState,
        jobs: &mpsc::UnboundedReceiver<Job>,
    ) -> bool {
        if !state.is_idle() {
            self.keep_within_cache(path, serial, state.held_bytes());
            return false;
        }
        let mut sessions = self.lock_sessions();
        if !jobs.is_empty() {
            return false;
        }
        if sessions.get(path).is_some_and(|q| q.serial == serial) {
            sessions.remove(path);
        }
        true
    }

    /// Forget the queue of the session at `path` if it is still the one numbered `serial`.
    fn forget_queue(&self, path: &std::path::Path, serial: u64) {
        let mut sessions = self.lock_sessions();
        if sessions.get(path).is_some_and(|q| q.serial == serial) {
            sessions.remove(path);
        }
    }

    /// Forget the queue of the session at `path` (numbered `serial`) if its state lies on
    /// its shelf holding nothing and no job waits: its worker then ends, as it does after a
    /// line's last request.
    fn retire_if_idle(&self, path: &std::path::Path, serial: u64) {
        let mut sessions = self.lock_sessions();
        if sessions
            .get(path)
            .is_some_and(|q| q.serial == serial && q.shelf.holds_nothing())
        {
            sessions.remove(path);
        }
    }

    /// Forget every session queue: their workers end, closing the logs.
    fn close_sessions(&self) {
        self.lock_sessions().clear();
    }

    fn lock_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, SessionQueue>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_inflight(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, prompt_host::prompt::CancelToken>> {
        self.inflight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn notifier(&self) -> &Arc<Notifier> {
        &self.notifier
    }

    pub(crate) fn host_arc(&self) -> &Arc<Host> {
        &self.host
    }
}

/// Whether `line` is a lone `$/cancelRequest` (handled without waiting for a slot). A cheap
/// look: a line that only seems to be one is parsed like any other.
fn is_cancel_only(line: &str) -> bool {
    line.contains("$/cancelRequest")
        && matches!(
            envelope::parse_line(line),
            Input::Single(Ok(Call { ref method, .. })) if method == "$/cancelRequest"
        )
}

/// The session a call of a session's method names (`params.session`), as given.
fn session_param(call: &Call) -> Option<PathBuf> {
    match call.method.as_str() {
        "step" | "retry" | "append_assistant" | "append_tool_result" | "request" | "compact"
        | "close_session" => call
            .params
            .get("session")
            .and_then(Value::as_str)
            .map(PathBuf::from),
        _ => None,
    }
}

/// The session a call runs on, when it names one (`params.session`): the name resolved
/// within the deployment's configured store ([`prompt_host::Host::session_name`]), written
/// back into the params so the method opens what the queue is keyed by. A name the store
/// refuses (an id with a control character, over 512 bytes, …) is the call's error.
fn session_of(call: &mut Call, host: &prompt_host::Host) -> Option<Result<PathBuf, RpcError>> {
    let name = session_param(call)?;
    let name = name.to_str()?;
    let resolved = match host.session_name(std::path::Path::new(name)) {
        Ok(resolved) => resolved,
        Err(e) => {
            let mut error = RpcError::failed("session", e.to_string());
            error.data =
                Some(json!({"kind": "session", "session": prompt_host::session::redact(name)}));
            return Some(Err(error));
        }
    };
    if host.session_store().is_some() {
        if let (Some(params), Some(text)) = (call.params.as_object_mut(), resolved.to_str()) {
            params.insert("session".into(), Value::String(text.to_owned()));
        }
    }
    Some(Ok(resolved))
}

fn cancelled() -> RpcError {
    RpcError {
        code: code::CANCELLED,
        message: "request cancelled".into(),
        data: Some(json!({"kind": "cancelled"})),
    }
}

/// The answer to a request line of `bytes` bytes that was longer than `max` and skipped
/// unread (its id is unknown, hence `null`).
pub fn oversized_request(bytes: usize, max: usize) -> String {
    let mut e = RpcError::new(
        code::INVALID_REQUEST,
        format!(
            "invalid request: the request line has {bytes} bytes, more than the limit of {max} (serve --max-request-bytes)"
        ),
    );
    e.data = Some(json!({"kind": "request-too-large", "bytes": bytes, "limit": max}));
    envelope::error(None, &e)
}
