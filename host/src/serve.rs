//! JSON-RPC 2.0 over lines: the embedding API for agents written in any language. One
//! request (or batch) per line in; one response per line out, plus notifications the client
//! subscribed to. PROTOCOL.md specifies every method, and `protocol/prompt-host.schema.json`
//! every message.
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
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::host::Host;
use crate::prompt::CancelToken;

mod error;
mod lines;
mod methods;
mod notify;
mod params;

pub use error::{code, RpcError};
pub use lines::{Line, DEFAULT_MAX_REQUEST_BYTES};
pub use notify::Notifier;

use methods::SessionState;

/// Every method, as `describe` and a `method not found` error list them.
pub const METHODS: &[&str] = &[
    "describe",
    "bind_scope",
    "dispose_scope",
    "scopes",
    "load_plugin",
    "reload_plugin",
    "dispose_plugin",
    "plugins",
    "assemble",
    "render",
    "step",
    "retry",
    "append_assistant",
    "append_tool_result",
    "request",
    "close_session",
    "mcp_status",
    "subscribe",
    "$/cancelRequest",
];

/// The version of this protocol (PROTOCOL.md).
pub const PROTOCOL_VERSION: &str = "1.0";

/// A request ready to run: its id (absent for a notification), method and params.
struct Call {
    id: Option<Value>,
    method: String,
    params: Value,
    signal: CancelToken,
}

type Job = (Call, mpsc::UnboundedSender<Option<Value>>);

/// The server state: the host, the session logs it holds open, the requests in flight.
pub struct Server {
    host: Arc<Host>,
    notifier: Arc<Notifier>,
    /// One queue (and worker) per session log path.
    sessions: Mutex<HashMap<PathBuf, mpsc::UnboundedSender<Job>>>,
    /// Requests in flight by id (as JSON text), for `$/cancelRequest`.
    inflight: Mutex<HashMap<String, CancelToken>>,
    /// Whether the notification observers were started (by the first `subscribe`).
    pub(crate) watchers_started: std::sync::atomic::AtomicBool,
}

impl Server {
    /// Serve `host`; notifications go nowhere until [`Server::serve`] attaches an output.
    pub fn new(host: Host) -> Arc<Self> {
        Self::with_notifier(host, Notifier::new())
    }

    /// Serve `host` with `notifier`, whose [`Notifier::sink`] the host's runtime was built
    /// with (so plugin log lines can become notifications).
    pub fn with_notifier(host: Host, notifier: Arc<Notifier>) -> Arc<Self> {
        Arc::new(Self {
            host: Arc::new(host),
            notifier,
            sessions: Mutex::new(HashMap::new()),
            inflight: Mutex::new(HashMap::new()),
            watchers_started: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The host served.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Handle one input line to completion; `None` when nothing is to be written
    /// (notifications, blank lines). The caller awaits each line's answer, so lines are
    /// served one after another.
    pub async fn handle_line(self: &Arc<Self>, line: &str) -> Option<String> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.dispatch_line(line, &tx);
        drop(tx);
        rx.recv().await
    }

    /// Read requests from `input` until it closes, serving them concurrently, and write
    /// responses and notifications to `output`, one per line. Stops when `output` is closed.
    pub async fn serve<R, W>(
        self: &Arc<Self>,
        mut input: R,
        mut output: W,
        max_request_bytes: usize,
    ) -> std::io::Result<()>
    where
        R: AsyncBufRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        self.notifier.attach(tx.clone());
        let mut writer = tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                let written = async {
                    output.write_all(line.as_bytes()).await?;
                    output.write_all(b"\n").await?;
                    output.flush().await
                }
                .await;
                if written.is_err() {
                    // Nobody reads the answers any more.
                    return;
                }
            }
        });
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            let line = tokio::select! {
                line = lines::read_line(&mut input, &mut buffer, max_request_bytes) => line?,
                // The output closed: stop reading.
                _ = &mut writer => break,
            };
            match line {
                Line::End => break,
                Line::TooLong(bytes) => {
                    let _ = tx.send(oversized_request(bytes, max_request_bytes));
                }
                Line::Complete => {
                    let line = String::from_utf8_lossy(&buffer);
                    self.dispatch_line(&line, &tx);
                }
            }
            lines::release_large(&mut buffer);
        }
        // Let the requests in flight answer, then close the output.
        self.notifier.detach();
        drop(tx);
        self.close_sessions();
        if !writer.is_finished() {
            let _ = writer.await;
        }
        Ok(())
    }

    /// Parse a line and start its requests; their responses (one JSON text per line, a
    /// batch as one array) go to `out`. A single request runs on a task of its own (or on
    /// its session's queue); a batch runs its requests in order and answers once.
    fn dispatch_line(self: &Arc<Self>, line: &str, out: &mpsc::UnboundedSender<String>) {
        if line.trim().is_empty() {
            return;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                let _ = out.send(error_response(
                    Value::Null,
                    RpcError::new(code::PARSE, format!("parse error: {e}")),
                ));
                return;
            }
        };
        let out = out.clone();
        match value {
            Value::Array(items) if items.is_empty() => {
                let _ = out.send(error_response(
                    Value::Null,
                    RpcError::new(code::INVALID_REQUEST, "invalid request: empty batch"),
                ));
            }
            Value::Array(items) => {
                let me = Arc::clone(self);
                tokio::spawn(async move {
                    let mut responses = Vec::new();
                    for item in items {
                        let (tx, mut rx) = mpsc::unbounded_channel();
                        me.start_value(item, tx);
                        if let Some(Some(response)) = rx.recv().await {
                            responses.push(response);
                        }
                    }
                    if !responses.is_empty() {
                        let _ = out.send(Value::Array(responses).to_string());
                    }
                });
            }
            single => {
                let (tx, mut rx) = mpsc::unbounded_channel();
                self.start_value(single, tx);
                tokio::spawn(async move {
                    if let Some(Some(response)) = rx.recv().await {
                        let _ = out.send(response.to_string());
                    }
                });
            }
        }
    }

    /// Validate `request`, then run it on a task (or queue it on its session); the response
    /// (or `None` for a notification) is sent on `done`.
    fn start_value(self: &Arc<Self>, request: Value, done: mpsc::UnboundedSender<Option<Value>>) {
        let call = match parse_call(request) {
            Ok(call) => call,
            Err(refused) => {
                let (id, e) = *refused;
                let _ = done.send(Some(error_value(id, e)));
                return;
            }
        };
        if call.method == "$/cancelRequest" {
            self.cancel(&call);
            let response = call
                .id
                .map(|id| json!({"jsonrpc": "2.0", "id": id, "result": {}}));
            let _ = done.send(response);
            return;
        }
        // Registered before the request starts, so a cancel right behind it finds it.
        if let Some(id) = &call.id {
            self.lock_inflight()
                .insert(id.to_string(), call.signal.clone());
        }
        match session_of(&call) {
            Some(path) => {
                let queue = self.session_queue(path);
                let _ = queue.send((call, done));
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

    /// Run one call to its response (`None` for a notification).
    async fn run(
        self: &Arc<Self>,
        call: Call,
        session: Option<&mut SessionState>,
    ) -> Option<Value> {
        let signal = call.signal.clone();
        let outcome = if signal.is_cancelled() {
            Err(cancelled())
        } else if !call.params.is_object() {
            Err(RpcError::params("expected an object"))
        } else {
            let mut scratch = SessionState::default();
            let state = session.unwrap_or(&mut scratch);
            methods::dispatch(self, state, &call.method, call.params, &signal).await
        };
        let id = call.id?;
        self.lock_inflight().remove(&id.to_string());
        Some(match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => error_value(id, e),
        })
    }

    /// The queue of the session at `path`, started on first use: its worker runs the
    /// session's requests one at a time and owns the open log.
    fn session_queue(self: &Arc<Self>, path: PathBuf) -> mpsc::UnboundedSender<Job> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(queue) = sessions.get(&path) {
            if !queue.is_closed() {
                return queue.clone();
            }
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Job>();
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let mut state = SessionState::default();
            while let Some((call, done)) = rx.recv().await {
                let response = me.run(call, Some(&mut state)).await;
                let _ = done.send(response);
            }
        });
        sessions.insert(path, tx.clone());
        tx
    }

    /// Forget every session queue: their workers end, closing the logs.
    fn close_sessions(&self) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// `$/cancelRequest {id}`: cancel that request if it is in flight.
    fn cancel(&self, call: &Call) {
        if let Some(id) = call.params.get("id") {
            if let Some(token) = self.lock_inflight().get(&id.to_string()) {
                token.cancel();
            }
        }
    }

    fn lock_inflight(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancelToken>> {
        self.inflight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn notifier(&self) -> &Arc<Notifier> {
        &self.notifier
    }

    pub(crate) fn host_arc(&self) -> &Arc<Host> {
        &self.host
    }
}

/// The session a call runs on, when it names one (`params.session`).
fn session_of(call: &Call) -> Option<PathBuf> {
    match call.method.as_str() {
        "step" | "retry" | "append_assistant" | "append_tool_result" | "request"
        | "close_session" => call
            .params
            .get("session")
            .and_then(Value::as_str)
            .map(PathBuf::from),
        _ => None,
    }
}

/// Check the JSON-RPC envelope; the error carries the id to answer with.
fn parse_call(request: Value) -> Result<Call, Box<(Value, RpcError)>> {
    let Value::Object(mut map) = request else {
        return Err(Box::new((
            Value::Null,
            RpcError::new(code::INVALID_REQUEST, "invalid request: expected an object"),
        )));
    };
    let id = map.remove("id");
    // A null id is refused: JSON-RPC 2.0 answers with a null id only when the request's id
    // could not be read, so a response to `"id": null` could not be told from that, and a
    // success response's id must be a string or a number.
    let valid_id = matches!(id, None | Some(Value::String(_) | Value::Number(_)));
    if map.get("jsonrpc") != Some(&json!("2.0")) || !valid_id {
        let answer_id = if valid_id {
            id.unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        return Err(Box::new((
            answer_id,
            RpcError::new(
                code::INVALID_REQUEST,
                "invalid request: expected \"jsonrpc\": \"2.0\" and a string or number id (or no id, for a notification; null is not an id)",
            ),
        )));
    }
    let method = match map.remove("method") {
        Some(Value::String(m)) => m,
        _ => {
            return Err(Box::new((
                id.unwrap_or(Value::Null),
                RpcError::new(
                    code::INVALID_REQUEST,
                    "invalid request: \"method\" must be a string",
                ),
            )))
        }
    };
    Ok(Call {
        id,
        method,
        params: map
            .remove("params")
            .unwrap_or_else(|| Value::Object(Default::default())),
        signal: CancelToken::new(),
    })
}

fn cancelled() -> RpcError {
    RpcError {
        code: code::CANCELLED,
        message: "request cancelled".into(),
        data: Some(json!({"kind": "cancelled"})),
    }
}

fn error_value(id: Value, e: RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": e.to_value()})
}

fn error_response(id: Value, e: RpcError) -> String {
    error_value(id, e).to_string()
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
    error_response(Value::Null, e)
}
