//! [`McpBridge`]: one MCP server feeding one sandboxed instruction-provider plugin. The host
//! talks to the server; the plugin decides what of it reaches the prompt.
//!
//! The bridge owns an [`McpConnection`] and a [`LoadedPlugin`] of world
//! `instruction-provider` loaded into the server's scope. Every generation the connection
//! reports is converted to the WIT `mcp-server` record and handed to the plugin's `publish`
//! on a blocking thread, one generation at a time, in order: what the plugin declares
//! replaces the previous generation when `publish` succeeds, and a refused generation or a
//! connection failure leaves the previous one in place. Nothing here runs on the assembly
//! path: an assembly reads the registry, which a publish changes in one short commit, so a
//! server that hangs or crashes never blocks it (beyond the bounded wait for a first
//! generation while the host starts, [`StartWait`]).
//!
//! Dropping the bridge stops the connection (the server process is killed) and removes
//! every contribution of the plugin.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::publish::{publish_events, Publisher};
use super::{server_label as label, valid_server_name, McpBridgeError, McpStatus};
use super::{InstructionsCut, McpConnection, McpEvent, McpServerSpec, ReconnectPolicy, StartWait};
use crate::wasm::LoadedPlugin;

/// Beyond the server's timeout, how long the first generation may take to be published
/// (the rest of `tools/list`, process start-up on a loaded machine, and the plugin call).
const READY_MARGIN: Duration = Duration::from_secs(2);

/// A running bridge between one MCP server and its instruction-provider plugin.
pub struct McpBridge {
    server: String,
    scope: Option<String>,
    plugin: Arc<LoadedPlugin>,
    connection: Option<McpConnection>,
    publisher: Option<JoinHandle<()>>,
    status: watch::Receiver<McpStatus>,
    closed: Arc<AtomicBool>,
    /// By when the first generation or failure is expected (see [`McpBridge::wait_ready`]).
    ready_by: Instant,
    /// What an assembly waits for before it goes on without the server.
    start_wait: Arc<StartWait>,
}

impl McpBridge {
    /// Start bridging `spec` into `plugin` (already loaded into the server's scope), on
    /// `runtime`. The plugin must implement world `instruction-provider`.
    pub fn start(
        plugin: LoadedPlugin,
        spec: McpServerSpec,
        reconnect: ReconnectPolicy,
        runtime: &Handle,
    ) -> Result<McpBridge, McpBridgeError> {
        let scope = plugin.scope().map(str::to_owned);
        if !valid_server_name(&spec.name) {
            return Err(McpBridgeError::InvalidName {
                server: spec.name,
                scope,
            });
        }
        if !plugin.is_instruction_provider() {
            return Err(McpBridgeError::NotAProvider {
                server: spec.name,
                scope,
                plugin: plugin.name().to_owned(),
            });
        }
        let server = spec.name.clone();
        let plugin = Arc::new(plugin);
        let closed = Arc::new(AtomicBool::new(false));
        let (status_tx, status) = watch::channel(McpStatus::starting(
            &server,
            scope.as_deref(),
            plugin.name(),
            spec.transport(),
            spec.instructions,
        ));
        // The connection's callback must not block: it only queues the event.
        let (events_tx, events) = mpsc::unbounded_channel();
        let on_update = Arc::new(move |event: McpEvent| {
            let _ = events_tx.send(event);
        });
        let publisher = runtime.spawn(publish_events(
            events,
            Publisher::new(plugin.clone(), closed.clone(), &spec),
            status_tx,
        ));
        let started = Instant::now();
        let ready_by = started + spec.timeout.saturating_mul(2) + READY_MARGIN;
        let start_wait = Arc::new(StartWait::new(&spec, started, ready_by));
        let connection = {
            let _entered = runtime.enter();
            McpConnection::spawn_with_policy(spec, reconnect, on_update)
        };
        log::info!(
            "{}: connecting; provider plugin \"{}\"",
            label(&server, scope.as_deref()),
            plugin.name()
        );
        Ok(McpBridge {
            server,
            scope,
            plugin,
            connection: Some(connection),
            publisher: Some(publisher),
            status,
            closed,
            ready_by,
            start_wait,
        })
    }

    /// Like [`McpBridge::start`] on the current Tokio runtime; refused outside one.
    pub fn start_here(
        plugin: LoadedPlugin,
        spec: McpServerSpec,
        reconnect: ReconnectPolicy,
    ) -> Result<McpBridge, McpBridgeError> {
        let runtime = Handle::try_current().map_err(|_| McpBridgeError::NoRuntime {
            server: spec.name.clone(),
            scope: plugin.scope().map(str::to_owned),
        })?;
        McpBridge::start(plugin, spec, reconnect, &runtime)
    }

    /// The server name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The scope its contributions land in (`None` = global).
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The instruction-provider plugin.
    pub fn plugin(&self) -> &LoadedPlugin {
        &self.plugin
    }

    /// The current status.
    pub fn status(&self) -> McpStatus {
        self.status.borrow().clone()
    }

    /// How the live generation's instructions were cut ([`McpStatus::instructions_cut`]),
    /// without copying the rest of the status: every step asks.
    pub fn instructions_cut(&self) -> Option<InstructionsCut> {
        self.status.borrow().instructions_cut.clone()
    }

    /// What reads a skill's body from the server's live session (`None` once shut down).
    pub fn skill_reader(&self) -> Option<crate::mcp::SkillReader> {
        self.connection.as_ref().map(McpConnection::skill_reader)
    }

    /// What an assembly that sees the server waits for first.
    pub fn start_wait(&self) -> &Arc<StartWait> {
        &self.start_wait
    }

    /// A receiver that sees every status change (for waiting on a condition).
    pub fn watch(&self) -> watch::Receiver<McpStatus> {
        self.status.clone()
    }

    /// Wait until the first generation has been published (or refused) or the first
    /// failure reported, for at most `limit` and never past the server's own bound (twice
    /// its timeout plus a margin, from the start). Returns the status reached.
    pub async fn wait_ready(&self, limit: Duration) -> McpStatus {
        let deadline = self.ready_deadline(Instant::now(), limit);
        let mut status = self.status.clone();
        let _ = tokio::time::timeout_at(deadline, status.wait_for(McpStatus::settled)).await;
        let reached = status.borrow().clone();
        reached
    }

    /// `from + limit`, capped by the server's own readiness bound.
    pub fn ready_deadline(&self, from: Instant, limit: Duration) -> Instant {
        from.checked_add(limit)
            .map_or(self.ready_by, |d| d.min(self.ready_by))
    }

    /// Stop the server, waiting (bounded) until it has been reaped, and remove every
    /// contribution. Dropping the bridge does the same without waiting for the process.
    pub async fn shutdown(mut self) {
        self.close();
        if let Some(connection) = self.connection.take() {
            connection.shutdown().await;
        }
    }

    fn close(&mut self) {
        // Order matters: a publish still running on its blocking thread checks `closed`
        // after committing and disposes what it committed.
        self.closed.store(true, Ordering::SeqCst);
        if let Some(publisher) = self.publisher.take() {
            publisher.abort();
        }
        self.plugin.dispose();
    }
}

impl Drop for McpBridge {
    fn drop(&mut self) {
        self.close();
        // Dropping the connection aborts its task; the server was spawned with kill_on_drop.
        drop(self.connection.take());
        log::info!(
            "{}: disconnected",
            label(&self.server, self.scope.as_deref())
        );
    }
}

impl std::fmt::Debug for McpBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpBridge")
            .field("server", &self.server)
            .field("scope", &self.scope)
            .field("plugin", &self.plugin.name())
            .finish()
    }
}
