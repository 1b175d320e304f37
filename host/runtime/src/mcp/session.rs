//! One connection attempt to one MCP server: spawn it, `initialize`, drain `tools/list`, then
//! watch it until it dies or a re-list fails. [`super::connection`] owns the retry loop.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, Implementation, ListToolsRequest,
    PaginatedRequestParams, ProtocolVersion, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::{McpError, McpServerSpec, McpTool};

/// A server that keeps returning cursors is broken, not large; stop after this many pages.
const MAX_PAGES: usize = 1000;
/// How much of the server's stderr we keep for error messages (the tail).
const STDERR_TAIL_BYTES: usize = 2048;
/// How long a dying server gets to finish writing stderr / to exit before we report it.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The client side of the handshake: announces us and turns `tools/list_changed` into a
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
        // The `initialize` handshake (and its `instructions`) exists up to this version;
        // rmcp's LATEST replaced it with per-request metadata.
        config.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        config
    }
}

/// A live, initialized server process.
pub(super) struct Session {
    server: String,
    timeout: Duration,
    child: Child,
    stderr: StderrTail,
    running: RunningService<RoleClient, Notifier>,
    changed: mpsc::Receiver<()>,
    /// The `instructions` of the initialize result (`""` when absent).
    pub(super) instructions: String,
}

impl Session {
    /// Spawns the server and runs `initialize` within the spec's timeout.
    pub(super) async fn start(spec: &McpServerSpec) -> Result<Session, McpError> {
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
        let (changed_tx, changed) = mpsc::channel(1);
        let handler = Notifier {
            changed: changed_tx,
        };
        let handshake = rmcp::service::serve_client(handler, (stdout, stdin));
        let span = exchange_span("initialize", &spec.name);
        let handshake = tokio::time::timeout(spec.timeout, handshake).instrument(span.clone());
        let running = match handshake.await {
            Ok(Ok(running)) => running,
            Ok(Err(e)) => {
                // Usually the process died at startup; its exit status and stderr say why.
                return Err(match exited_within(&mut child, EXIT_GRACE).await {
                    Some(status) => exited(&spec.name, status.to_string(), &stderr).await,
                    None => McpError::Initialize {
                        server: spec.name.clone(),
                        message: e.to_string(),
                    },
                });
            }
            Err(_) => {
                return Err(McpError::InitializeTimeout {
                    server: spec.name.clone(),
                    timeout: spec.timeout,
                })
            }
        };
        let info = running.peer().peer_info();
        if let Some(info) = &info {
            span.record(
                "mcp.protocol.version",
                attribute_text(info.protocol_version.as_str()),
            );
        }
        let instructions = info
            .and_then(|info| info.instructions.clone())
            .unwrap_or_default();
        Ok(Session {
            server: spec.name.clone(),
            timeout: spec.timeout,
            child,
            stderr,
            running,
            changed,
            instructions,
        })
    }

    /// Drains the paginated `tools/list`, each page bounded by the timeout.
    pub(super) async fn list_tools(&mut self) -> Result<Vec<McpTool>, McpError> {
        list_all_tools(self.running.peer(), &self.server, self.timeout).await
    }

    /// Watches the server: re-lists on every `tools/list_changed` (one sync at a time) and
    /// hands each complete list to `on_tools`. Returns why the session ended.
    pub(super) async fn watch(&mut self, mut on_tools: impl FnMut(Vec<McpTool>)) -> McpError {
        let peer = self.running.peer().clone();
        loop {
            let ended = tokio::select! {
                status = self.child.wait() => Some(match status {
                    Ok(status) => status.to_string(),
                    Err(e) => format!("cannot wait for it: {e}"),
                }),
                // The process may live on after closing its end of the pipes.
                () = closed(&peer) => Some("it closed the connection".to_owned()),
                wake = self.changed.recv() => match wake {
                    Some(()) => None,
                    None => Some("the client stopped".to_owned()),
                },
            };
            if let Some(status) = ended {
                return exited(&self.server, status, &self.stderr).await;
            }
            match list_all_tools(&peer, &self.server, self.timeout).await {
                Ok(tools) => on_tools(tools),
                Err(e) => return self.explain(e).await,
            }
        }
    }

    /// Prefers "the server exited" over the request error it caused. A timeout is reported
    /// as is: the server is alive, and waiting for it to exit would only delay the report.
    pub(super) async fn explain(&mut self, error: McpError) -> McpError {
        if matches!(error, McpError::ListTimeout { .. }) {
            return error;
        }
        match exited_within(&mut self.child, EXIT_GRACE).await {
            Some(status) => exited(&self.server, status.to_string(), &self.stderr).await,
            None => error,
        }
    }

    /// Kills the server and reaps it (bounded), so no process outlives the session.
    pub(super) async fn kill(mut self) {
        crate::child::kill_group(&mut self.child);
        let _ = tokio::time::timeout(EXIT_GRACE, self.child.wait()).await;
        // `running` drops here and cancels rmcp's service task.
    }
}

/// How long dropping a session waits for its killed server to be reaped.
const REAP_LIMIT: Duration = Duration::from_millis(200);

impl Drop for Session {
    /// However the session ends (an aborted task, a dropped host), the server and whatever
    /// it started in its process group are killed.
    fn drop(&mut self) {
        crate::child::kill_group(&mut self.child);
        crate::child::reap_briefly(&mut self.child, REAP_LIMIT);
    }
}

async fn list_all_tools(
    peer: &Peer<RoleClient>,
    server: &str,
    timeout: Duration,
) -> Result<Vec<McpTool>, McpError> {
    let list_error = |message: String| McpError::List {
        server: server.to_owned(),
        message,
    };
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        // Sent directly rather than through `Peer::list_tools`, whose response cache would
        // answer a failed re-list with the stale list and hide the failure.
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
        let span = exchange_span("tools/list", server);
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
            Err(e) => return Err(list_error(e.to_string())),
        };
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
            None => return Ok(tools),
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

/// The span of one MCP request this client sends (`initialize`, or one `tools/list` page),
/// with the OpenTelemetry MCP semantic conventions' attributes: named by the method
/// (`otel.name`), a client span over a pipe (the server's stdio).
fn exchange_span(method: &'static str, server: &str) -> tracing::Span {
    tracing::info_span!(
        "prompt_host.mcp",
        otel.name = method,
        otel.kind = "client",
        mcp.method.name = method,
        mcp.protocol.version = tracing::field::Empty,
        network.transport = "pipe",
        prompt_host.mcp.server = server,
    )
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
    use super::attribute_text;

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
