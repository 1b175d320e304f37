//! One connection attempt to one MCP server: spawn it (stdio) or reach it (Streamable HTTP),
//! run its lifecycle (`server/discover` of the 2026-07-28 revision, `initialize` before it,
//! or the first falling back to the second), drain `tools/list`, then watch it until it dies
//! or a re-read fails. [`super::connection`] owns the retry loop.
//!
//! While it lives, a session re-reads what the server offers when the server says so: on
//! `notifications/tools/list_changed` (the legacy stream, or a `subscriptions/listen`
//! stream in the 2026-07-28 lifecycle) and when the time to live (`ttlMs`) of its discover or
//! list result runs out. A remote server's OAuth token is renewed before it expires by
//! ending the session quietly and starting the next one at once.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, ListToolsRequest,
    PaginatedRequestParams, ProtocolVersion, RequestMetaObject, ServerNotification, ServerResult,
    SubscriptionFilter,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{
    ClientCacheConfig, ClientHandler, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient,
    ServiceError,
};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::remote::{self, AccessToken};
use super::{LifecycleUsed, McpError, McpLifecycle, McpServerSpec, McpTool};

/// A server that keeps returning cursors is broken, not large; stop after this many pages.
const MAX_PAGES: usize = 1000;
/// How much of the server's stderr we keep for error messages (the tail).
const STDERR_TAIL_BYTES: usize = 2048;
/// How long a dying server gets to finish writing stderr / to exit before we report it.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// The shortest time to live honoured: a server saying `ttlMs: 1` is not re-read in a loop.
pub(super) const MIN_REFRESH: Duration = Duration::from_secs(1);
/// The longest: a day, as rmcp's own cache caps it.
const MAX_REFRESH: Duration = Duration::from_secs(24 * 60 * 60);

/// The client side of the lifecycle: announces us and turns `tools/list_changed` into a
/// wake-up on a one-slot channel, so a burst of notifications costs one re-list.
struct Notifier {
    changed: mpsc::Sender<()>,
}

impl ClientHandler for Notifier {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // Full means a re-list is already pending; it will see this change too.
        let _ = self.changed.try_send(());
    }

    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("prompt-host", env!("CARGO_PKG_VERSION")),
        );
        // What `initialize` asks for: the newest revision that has the handshake (rmcp's
        // LATEST replaced it with `server/discover`).
        config.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        config
    }
}

/// How the session reaches its server.
enum Link {
    /// A process over stdio.
    Process { child: Child, stderr: StderrTail },
    /// A remote server over Streamable HTTP; `renew_at` is when its OAuth token must be
    /// replaced.
    Remote { renew_at: Option<Instant> },
}

/// A live server with its lifecycle done.
pub(super) struct Session {
    server: String,
    timeout: Duration,
    link: Link,
    running: RunningService<RoleClient, Notifier>,
    changed: mpsc::Receiver<()>,
    /// The wake-up sender, for the `subscriptions/listen` task.
    changed_tx: mpsc::Sender<()>,
    /// The `instructions` the server gave (`""` when absent).
    pub(super) instructions: String,
    /// Which lifecycle was used.
    pub(super) lifecycle: LifecycleUsed,
    /// The protocol revision agreed.
    pub(super) protocol_version: String,
    /// When to re-read instructions and tools (the shortest time to live the server gave).
    refresh_at: Option<Instant>,
    /// The `subscriptions/listen` stream's reader (2026-07-28 lifecycle).
    listener: Option<JoinHandle<()>>,
}

/// Why [`Session::watch`] returned.
pub(super) enum Ended {
    /// The session failed; the connection reports it and backs off.
    Failed(McpError),
    /// The OAuth token is due: the next session starts at once, and nothing is reported.
    TokenDue,
}

impl Session {
    /// Reaches the server and runs its lifecycle within the spec's timeout.
    pub(super) async fn start(spec: &McpServerSpec) -> Result<Session, McpError> {
        let (changed_tx, changed) = mpsc::channel(1);
        let handler = Notifier {
            changed: changed_tx.clone(),
        };
        let mode = lifecycle_mode(spec.lifecycle);
        let span = lifecycle_span(&spec.name, spec.transport());
        let (running, link) = match &spec.remote {
            None => {
                let (mut child, stderr, pipes) = spawn(spec)?;
                let started =
                    tokio::time::timeout(spec.timeout, handler.serve_with_lifecycle(pipes, mode))
                        .instrument(span.clone())
                        .await;
                let running = match started {
                    Ok(Ok(running)) => running,
                    Ok(Err(e)) => {
                        // Usually the process died at startup; its exit status and stderr
                        // say why.
                        return Err(match exited_within(&mut child, EXIT_GRACE).await {
                            Some(status) => exited(&spec.name, status.to_string(), &stderr).await,
                            None => McpError::Initialize {
                                server: spec.name.clone(),
                                message: e.to_string(),
                            },
                        });
                    }
                    Err(_) => return Err(lifecycle_timeout(spec, &span)),
                };
                (running, Link::Process { child, stderr })
            }
            Some(remote_spec) => {
                let server = spec.name.clone();
                let url = remote_spec.shown_url();
                let failed = move |message: String| McpError::Remote {
                    server: server.clone(),
                    url: url.clone(),
                    message,
                };
                let http = remote::http_client(remote_spec).map_err(&failed)?;
                let token = match &remote_spec.oauth {
                    Some(grant) => Some(
                        remote::fetch_token(&http, grant, &remote_spec.url, spec.timeout)
                            .await
                            .map_err(&failed)?,
                    ),
                    None => None,
                };
                let config =
                    remote::transport_config(remote_spec, token.as_ref()).map_err(&failed)?;
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::with_client(http, config);
                let started = tokio::time::timeout(
                    spec.timeout,
                    handler.serve_with_lifecycle(transport, mode),
                )
                .instrument(span.clone())
                .await;
                let running = match started {
                    Ok(Ok(running)) => running,
                    Ok(Err(e)) => return Err(failed(remote_error(&e.to_string()))),
                    Err(_) => return Err(lifecycle_timeout(spec, &span)),
                };
                let renew_at = token.as_ref().and_then(|t: &AccessToken| t.renew_at);
                (running, Link::Remote { renew_at })
            }
        };
        // Failures must show: a cache serving the last answer when a re-read fails would
        // hide them, and the refresh below keeps its own time.
        running
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let info = running.peer().peer_info();
        let protocol_version = info
            .as_ref()
            .map(|i| i.protocol_version.as_str().to_owned())
            .unwrap_or_default();
        span.record("mcp.protocol.version", attribute_text(&protocol_version));
        let lifecycle = match info.as_ref().map(|i| i.protocol_version.has_initialize()) {
            Some(false) => LifecycleUsed::Discover,
            _ => LifecycleUsed::Initialize,
        };
        let method = match lifecycle {
            LifecycleUsed::Discover => "server/discover",
            LifecycleUsed::Initialize => "initialize",
        };
        span.record("otel.name", method);
        span.record("mcp.method.name", method);
        let instructions = info
            .and_then(|info| info.instructions.clone())
            .unwrap_or_default();
        let mut session = Session {
            server: spec.name.clone(),
            timeout: spec.timeout,
            link,
            running,
            changed,
            changed_tx,
            instructions,
            lifecycle,
            protocol_version,
            refresh_at: None,
            listener: None,
        };
        if lifecycle == LifecycleUsed::Discover {
            // rmcp keeps the startup discover's instructions but not its time to live: ask
            // once more for it, and listen for list changes (no other stream carries them
            // in this lifecycle).
            let discovered = session.discover().await?;
            session.instructions = discovered.0;
            session.schedule(discovered.1);
            session.listener = session.listen().await;
        }
        Ok(session)
    }

    /// `server/discover`: the instructions and their time to live.
    async fn discover(&self) -> Result<(String, Option<u64>), McpError> {
        let span = exchange_span("server/discover", &self.server, self.transport());
        let answer = tokio::time::timeout(
            self.timeout,
            self.running.peer().discover(RequestMetaObject::new()),
        )
        .instrument(span)
        .await;
        match answer {
            Ok(Ok(result)) => Ok((result.instructions.unwrap_or_default(), Some(result.ttl_ms))),
            Ok(Err(e)) => Err(McpError::Discover {
                server: self.server.clone(),
                message: remote_error(&e.to_string()),
            }),
            Err(_) => Err(McpError::DiscoverTimeout {
                server: self.server.clone(),
                timeout: self.timeout,
            }),
        }
    }

    /// Subscribe to `notifications/tools/list_changed`; `None` when the server does not
    /// take `subscriptions/listen` (its list is then re-read on its time to live only).
    async fn listen(&self) -> Option<JoinHandle<()>> {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let subscribed =
            tokio::time::timeout(self.timeout, self.running.peer().listen(filter)).await;
        let mut subscription = match subscribed {
            Ok(Ok(subscription)) => subscription,
            Ok(Err(e)) => {
                log::info!(
                    "MCP server \"{}\": no list-change subscription ({}); its tools are re-read when their time to live runs out",
                    self.server,
                    remote_error(&e.to_string())
                );
                return None;
            }
            Err(_) => return None,
        };
        let changed = self.changed_tx.clone();
        Some(tokio::spawn(async move {
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    let _ = changed.try_send(());
                }
            }
        }))
    }

    /// Re-read at the shortest of the times to live given (`None` and 0: not on a timer).
    fn schedule(&mut self, ttl_ms: Option<u64>) {
        let Some(ms) = ttl_ms.filter(|ms| *ms > 0) else {
            return;
        };
        let ttl = Duration::from_millis(ms).clamp(MIN_REFRESH, MAX_REFRESH);
        let at = Instant::now() + ttl;
        self.refresh_at = Some(self.refresh_at.map_or(at, |earlier| earlier.min(at)));
    }

    fn transport(&self) -> &'static str {
        match self.link {
            Link::Process { .. } => "stdio",
            Link::Remote { .. } => "http",
        }
    }

    /// Drains the paginated `tools/list`, each page bounded by the timeout; the pages' time
    /// to live schedules the next re-read.
    pub(super) async fn list_tools(&mut self) -> Result<Vec<McpTool>, McpError> {
        let transport = self.transport();
        let (tools, ttl) =
            list_all_tools(self.running.peer(), &self.server, transport, self.timeout).await?;
        self.schedule(ttl);
        Ok(tools)
    }

    /// Watches the server: re-reads on every list change (one at a time) and when a time to
    /// live runs out, and hands each complete reading — the instructions and the tools — to
    /// `on_read` (with `true` when a time to live asked for it: the consumer drops a reading
    /// that changed nothing). Returns why the session ended.
    pub(super) async fn watch(
        &mut self,
        mut on_read: impl FnMut(&str, Vec<McpTool>, bool),
    ) -> Ended {
        let peer = self.running.peer().clone();
        loop {
            let refresh_at = self.refresh_at;
            let renew_at = match self.link {
                Link::Remote { renew_at } => renew_at,
                Link::Process { .. } => None,
            };
            enum Wake {
                Changed,
                Refresh,
                TokenDue,
                Ended(String),
            }
            let wake = tokio::select! {
                status = wait_process(&mut self.link) => Wake::Ended(status),
                // The process may live on after closing its end of the pipes; a remote
                // server's transport ends when its worker gives up.
                () = closed(&peer) => Wake::Ended(match self.link {
                    Link::Process { .. } => "it closed the connection".to_owned(),
                    Link::Remote { .. } => "the connection ended".to_owned(),
                }),
                wake = self.changed.recv() => match wake {
                    Some(()) => Wake::Changed,
                    None => Wake::Ended("the client stopped".to_owned()),
                },
                () = sleep_until(refresh_at) => Wake::Refresh,
                () = sleep_until(renew_at) => Wake::TokenDue,
            };
            let timed = match wake {
                Wake::Ended(status) => return Ended::Failed(self.ended(status).await),
                Wake::TokenDue => return Ended::TokenDue,
                Wake::Refresh => true,
                Wake::Changed => false,
            };
            self.refresh_at = None;
            if timed && self.lifecycle == LifecycleUsed::Discover {
                match self.discover().await {
                    Ok((instructions, ttl)) => {
                        self.instructions = instructions;
                        self.schedule(ttl);
                    }
                    Err(e) => return Ended::Failed(self.explain(e).await),
                }
            }
            match list_all_tools(&peer, &self.server, self.transport(), self.timeout).await {
                Ok((tools, ttl)) => {
                    self.schedule(ttl);
                    on_read(&self.instructions, tools, timed);
                }
                Err(e) => return Ended::Failed(self.explain(e).await),
            }
        }
    }

    /// Why the session ended, as an error: a process's exit with its stderr tail, or the
    /// remote connection's end.
    async fn ended(&mut self, status: String) -> McpError {
        match &self.link {
            Link::Process { stderr, .. } => exited(&self.server, status, stderr).await,
            Link::Remote { .. } => McpError::Exited {
                server: self.server.clone(),
                status,
                stderr: String::new(),
            },
        }
    }

    /// Prefers "the server exited" over the request error it caused. A timeout is reported
    /// as is: the server is alive, and waiting for it to exit would only delay the report.
    pub(super) async fn explain(&mut self, error: McpError) -> McpError {
        if matches!(
            error,
            McpError::ListTimeout { .. } | McpError::DiscoverTimeout { .. }
        ) {
            return error;
        }
        let Link::Process { child, stderr } = &mut self.link else {
            return error;
        };
        match exited_within(child, EXIT_GRACE).await {
            Some(status) => exited(&self.server, status.to_string(), stderr).await,
            None => error,
        }
    }

    /// Stops the server (kills and reaps a process, bounded), so nothing outlives the session.
    pub(super) async fn kill(mut self) {
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        if let Link::Process { child, .. } = &mut self.link {
            crate::child::kill_group(child);
            let _ = tokio::time::timeout(EXIT_GRACE, child.wait()).await;
        }
        // `running` drops here and cancels rmcp's service task (and a remote transport's
        // worker).
    }
}

/// How long dropping a session waits for its killed server to be reaped.
const REAP_LIMIT: Duration = Duration::from_millis(200);

impl Drop for Session {
    /// However the session ends (an aborted task, a dropped host), the server and whatever
    /// it started in its process group are killed.
    fn drop(&mut self) {
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        if let Link::Process { child, .. } = &mut self.link {
            crate::child::kill_group(child);
            crate::child::reap_briefly(child, REAP_LIMIT);
        }
    }
}

/// Spawns the stdio server: the process, its stderr tail and its pipes.
fn spawn(
    spec: &McpServerSpec,
) -> Result<
    (
        Child,
        StderrTail,
        (tokio::process::ChildStdout, tokio::process::ChildStdin),
    ),
    McpError,
> {
    let mut command = Command::new(&spec.command);
    crate::child::contain(&mut command);
    if let Some(dir) = &spec.dir {
        command.current_dir(dir);
    }
    let mut child = command
        .args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Never inherited: our stdout may be a JSON-RPC channel of its own (`serve`).
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| McpError::Spawn {
            server: spec.name.clone(),
            command: spec.command.clone(),
            error: source,
        })?;
    let stderr = StderrTail::capture(child.stderr.take());
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(McpError::Initialize {
            server: spec.name.clone(),
            message: "the server's stdio pipes were not created".into(),
        });
    };
    Ok((child, stderr, (stdout, stdin)))
}

/// rmcp's lifecycle for a spec's choice: `Auto` prefers 2026-07-28 and falls back to
/// `initialize` with 2025-11-25, as the specification says.
fn lifecycle_mode(lifecycle: McpLifecycle) -> ClientLifecycleMode {
    match lifecycle {
        McpLifecycle::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
        McpLifecycle::Discover => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        McpLifecycle::Initialize => ClientLifecycleMode::Initialize,
    }
}

/// The first request of a lifecycle, as messages and spans name it.
fn lifecycle_request(lifecycle: McpLifecycle) -> &'static str {
    match lifecycle {
        McpLifecycle::Auto => "server/discover or initialize",
        McpLifecycle::Discover => "server/discover",
        McpLifecycle::Initialize => "initialize",
    }
}

fn lifecycle_timeout(spec: &McpServerSpec, span: &tracing::Span) -> McpError {
    span.record("otel.name", lifecycle_request(spec.lifecycle));
    McpError::InitializeTimeout {
        server: spec.name.clone(),
        request: lifecycle_request(spec.lifecycle),
        timeout: spec.timeout,
    }
}

/// A remote error's text without anything that could carry a secret: rmcp's transport
/// errors print the request's URL at most, and the URL's query is cut.
fn remote_error(text: &str) -> String {
    // rmcp names the transport's Rust type (`Transport [rmcp::transport::…] error: `), which
    // says nothing to an operator.
    let mut text = text.replace("Send message error ", "");
    while let Some(at) = text.find("Transport [") {
        let Some(end) = text[at..].find("] error: ") else {
            break;
        };
        text.replace_range(at..at + end + "] error: ".len(), "");
    }
    let mut out = String::with_capacity(text.len());
    for word in text.as_str().split_inclusive(char::is_whitespace) {
        let bare = word.trim_end();
        if bare.starts_with("http://") || bare.starts_with("https://") {
            let url = bare.trim_end_matches([')', ',', '.', ';']);
            out.push_str(&remote::shown_url(url));
            out.push_str(&word[url.len()..]);
        } else {
            out.push_str(word);
        }
    }
    out
}

/// The process's exit, for a stdio session; never for a remote one.
async fn wait_process(link: &mut Link) -> String {
    match link {
        Link::Process { child, .. } => match child.wait().await {
            Ok(status) => status.to_string(),
            Err(e) => format!("cannot wait for it: {e}"),
        },
        Link::Remote { .. } => std::future::pending().await,
    }
}

/// Sleeps until `at`; forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn list_all_tools(
    peer: &Peer<RoleClient>,
    server: &str,
    transport: &str,
    timeout: Duration,
) -> Result<(Vec<McpTool>, Option<u64>), McpError> {
    let list_error = |message: String| McpError::List {
        server: server.to_owned(),
        message,
    };
    let mut tools = Vec::new();
    let mut cursor = None;
    // The shortest time to live of the pages (the list is as fresh as its stalest page).
    let mut ttl: Option<u64> = None;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        // Sent directly rather than through `Peer::list_tools`, whose response cache would
        // answer a failed re-list with the stale list and hide the failure.
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let span = exchange_span("tools/list", server, transport);
        let answer = async {
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
                .await?;
            handle.await_response().await
        };
        let page = match answer.instrument(span).await {
            Ok(ServerResult::ListToolsResult(page)) => page,
            Ok(other) => return Err(list_error(format!("unexpected answer {other:?}"))),
            Err(ServiceError::Timeout { .. }) => {
                return Err(McpError::ListTimeout {
                    server: server.to_owned(),
                    timeout,
                })
            }
            Err(e) => return Err(list_error(remote_error(&e.to_string()))),
        };
        if let Some(page_ttl) = page.ttl_ms {
            ttl = Some(ttl.map_or(page_ttl, |t| t.min(page_ttl)));
        }
        for t in page.tools {
            let input_schema = Value::Object((*t.input_schema).clone());
            // An untrusted server's schema deeper than a session log can hold would fail
            // every step; that one tool is left out, loudly.
            use crate::session::depth::{too_deep, MAX_TOOL_PARAMETERS_DEPTH};
            if let Some(at) = too_deep(&input_schema, MAX_TOOL_PARAMETERS_DEPTH) {
                log::warn!(
                    "MCP server \"{server}\": tool \"{}\" left out: its inputSchema nests more than {MAX_TOOL_PARAMETERS_DEPTH} levels deep (at {at}), deeper than a session log can hold",
                    crate::wasm::escape(&t.name)
                );
                continue;
            }
            tools.push(McpTool {
                name: t.name.into_owned(),
                description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
                input_schema,
            });
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok((tools, ttl)),
        }
    }
    Err(list_error(format!(
        "still paginating after {MAX_PAGES} pages"
    )))
}

/// Resolves once rmcp's service loop has let go of the transport.
async fn closed(peer: &Peer<RoleClient>) {
    // rmcp has no awaitable for this; a slow poll is enough to notice a half-dead server.
    while !peer.is_transport_closed() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn exited_within(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    tokio::time::timeout(grace, child.wait()).await.ok()?.ok()
}

async fn exited(server: &str, status: String, stderr: &StderrTail) -> McpError {
    McpError::Exited {
        server: server.to_owned(),
        status,
        stderr: stderr.finish(EXIT_GRACE).await,
    }
}

/// Drains the server's stderr so it never blocks on a full pipe, keeping the last bytes.
struct StderrTail {
    tail: Arc<Mutex<Vec<u8>>>,
    task: Option<JoinHandle<()>>,
}

impl StderrTail {
    fn capture(stderr: Option<ChildStderr>) -> StderrTail {
        let tail = Arc::new(Mutex::new(Vec::new()));
        let task = stderr.map(|mut pipe| {
            let tail = Arc::clone(&tail);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                    let Ok(mut kept) = tail.lock() else { return };
                    kept.extend_from_slice(&buf[..n]);
                    let excess = kept.len().saturating_sub(STDERR_TAIL_BYTES);
                    kept.drain(..excess);
                }
            })
        });
        StderrTail { tail, task }
    }

    /// The tail so far, after giving the drain a moment to reach the end of the pipe.
    async fn finish(&self, grace: Duration) -> String {
        if let Some(task) = &self.task {
            let deadline = tokio::time::Instant::now() + grace;
            while !task.is_finished() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        match self.tail.lock() {
            Ok(kept) => String::from_utf8_lossy(&kept).into_owned(),
            Err(_) => String::new(),
        }
    }
}

impl Drop for StderrTail {
    fn drop(&mut self) {
        // A grandchild holding the pipe open must not keep this task alive.
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The span of one MCP request this client sends (the lifecycle's, `server/discover`, or one
/// `tools/list` page), with the OpenTelemetry MCP semantic conventions' attributes: named by
/// the method (`otel.name`), a client span over a pipe (stdio) or TCP (HTTP).
fn exchange_span(method: &'static str, server: &str, transport: &str) -> tracing::Span {
    let network = match transport {
        "http" => "tcp",
        "stdio" => "pipe",
        _ => "",
    };
    let span = tracing::info_span!(
        "prompt_host.mcp",
        otel.name = method,
        otel.kind = "client",
        mcp.method.name = method,
        mcp.protocol.version = tracing::field::Empty,
        network.transport = tracing::field::Empty,
        prompt_host.mcp.server = server,
    );
    if !network.is_empty() {
        span.record("network.transport", network);
    }
    span
}

/// The span of a lifecycle's first exchange: named once it is known which lifecycle was used
/// (`server/discover` or `initialize`), or by what was tried when none answered.
fn lifecycle_span(server: &str, transport: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "prompt_host.mcp",
        otel.name = tracing::field::Empty,
        otel.kind = "client",
        mcp.method.name = tracing::field::Empty,
        mcp.protocol.version = tracing::field::Empty,
        network.transport = if transport == "http" { "tcp" } else { "pipe" },
        prompt_host.mcp.server = server,
    );
    span
}

/// A server's text as a span attribute: a version is short and printable ASCII, so anything
/// else an untrusted server sends is not copied into every exporter's data.
fn attribute_text(text: &str) -> &str {
    let plain = !text.is_empty() && text.len() <= 32 && text.bytes().all(|b| b.is_ascii_graphic());
    if plain {
        text
    } else {
        "(not a version)"
    }
}

#[cfg(test)]
mod tests {
    use super::{attribute_text, remote_error};

    #[test]
    fn a_remote_error_loses_type_names_and_url_queries() {
        assert_eq!(
            remote_error("Send message error Transport [rmcp::transport::worker::WorkerTransport<X<Y>>] error: HTTP status 500 from https://h.example/mcp?key=s3cr3t, when send discover request"),
            "HTTP status 500 from https://h.example/mcp, when send discover request"
        );
    }

    #[test]
    fn a_server_s_version_reaches_a_span_only_when_it_looks_like_one() {
        assert_eq!(attribute_text("2025-06-18"), "2025-06-18");
        for hostile in [
            "x".repeat(33),
            "2025\n06".into(),
            "v\u{202e}1".into(),
            String::new(),
        ] {
            assert_eq!(attribute_text(&hostile), "(not a version)", "{hostile:?}");
        }
    }
}
