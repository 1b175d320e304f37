//! One connection attempt to one MCP server: spawn it (stdio) or reach it (Streamable HTTP),
//! run its lifecycle (`server/discover` of the 2026-07-28 revision, `initialize` before it,
//! or the first falling back to the second), drain `tools/list`, then watch it until it dies
//! or a re-read fails. [`super::connection`] owns the retry loop.
//!
//! While it lives, a session re-reads what the server offers when the server says so: on
//! `notifications/tools/list_changed` or `notifications/resources/list_changed` (a skill's
//! files are resources; the legacy stream, or a `subscriptions/listen`
//! stream in the 2026-07-28 lifecycle) and when the time to live (`ttlMs`) of its discover or
//! list result runs out. A remote server's OAuth token is renewed before it expires by
//! ending the session quietly and starting the next one at once.
//!
//! A server is a peer the host does not trust: every wait on it is bounded by the spec's
//! timeout, its answers by [`super::remote::MAX_ANSWER_BYTES`] (remote) and what it says
//! reaches a message only through [`peer_text`].

mod list;
mod peer_text;
mod process;
mod spans;
mod stderr_tail;

use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, RequestMetaObject,
    ServerNotification, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{
    ClientCacheConfig, ClientHandler, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient,
};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::remote::{self, AccessToken};
use super::skills::McpSkill;
use super::{LifecycleUsed, McpError, McpLifecycle, McpServerSpec, McpTool};
use list::{list_all_skills, list_all_tools};
pub(crate) use peer_text::remote_error;
use peer_text::{lifecycle_error, shown_version};
use process::{exited, exited_within, spawn};
use spans::{attribute_text, exchange_span, lifecycle_span};
use stderr_tail::StderrTail;

/// How long a dying server gets to finish writing stderr / to exit before we report it.
pub(super) const EXIT_GRACE: Duration = Duration::from_millis(500);
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

    /// A skill's files are resources: a changed resource list may be a changed skills index.
    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
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
                                message: remote_error(&e.to_string()),
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
                remote::check_endpoint(&remote_spec.url, "the server's endpoint")
                    .map_err(&failed)?;
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
                    Ok(Err(e)) => return Err(failed(remote_error(&lifecycle_error(&e)))),
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
        let agreed = info
            .as_ref()
            .map(|i| i.protocol_version.as_str())
            .unwrap_or_default();
        span.record("mcp.protocol.version", attribute_text(agreed));
        let protocol_version = shown_version(agreed);
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
        let filter = SubscriptionFilter::builder()
            .tools_list_changed()
            .resources_list_changed()
            .build();
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
                        | ServerNotification::ResourceListChangedNotification(_)
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

    /// Drains the paginated `tools/list`, then `skills/list` when the server offers skills,
    /// each page bounded by the timeout; the pages' time to live schedules the next re-read.
    pub(super) async fn list(&mut self) -> Result<(Vec<McpTool>, Vec<McpSkill>), McpError> {
        let transport = self.transport();
        let peer = self.running.peer().clone();
        let (tools, ttl) = list_all_tools(&peer, &self.server, transport, self.timeout).await?;
        self.schedule(ttl);
        let (skills, ttl) = list_all_skills(&peer, &self.server, transport, self.timeout).await?;
        self.schedule(ttl);
        Ok((tools, skills))
    }

    /// The live peer and the bound on each request to it (for reading a skill's body).
    pub(super) fn peer(&self) -> (Peer<RoleClient>, Duration) {
        (self.running.peer().clone(), self.timeout)
    }

    /// Watches the server: re-reads on every list change (one at a time) and when a time to
    /// live runs out, and hands each complete reading — the instructions, tools and skills — to
    /// `on_read` (with `true` when a time to live asked for it: the consumer drops a reading
    /// that changed nothing). Returns why the session ended.
    pub(super) async fn watch(
        &mut self,
        mut on_read: impl FnMut(&str, Vec<McpTool>, Vec<McpSkill>, bool),
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
            match self.list().await {
                Ok((tools, skills)) => on_read(&self.instructions, tools, skills, timed),
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
            McpError::ListTimeout { .. }
                | McpError::DiscoverTimeout { .. }
                | McpError::SkillsListTimeout { .. }
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
            prompt_host_core::child::kill_group(child);
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
            prompt_host_core::child::kill_group(child);
            prompt_host_core::child::reap_briefly(child, REAP_LIMIT);
        }
    }
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

/// Resolves once rmcp's service loop has let go of the transport.
async fn closed(peer: &Peer<RoleClient>) {
    // rmcp has no awaitable for this; a slow poll is enough to notice a half-dead server.
    while !peer.is_transport_closed() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
