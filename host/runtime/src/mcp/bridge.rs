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
//! server that hangs or crashes never blocks it.
//!
//! Dropping the bridge stops the connection (the server process is killed) and removes
//! every contribution of the plugin.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::status::{label, valid_server_name, McpBridgeError, McpState, McpStatus};
use super::{
    cut_instructions, InstructionBudget, InstructionsCut, McpConnection, McpEvent, McpServerSpec,
    McpSnapshot, ReconnectPolicy,
};
use crate::wasm::{LoadedPlugin, ServerInstructions, ServerTool};

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
            Publisher {
                plugin: plugin.clone(),
                closed: closed.clone(),
                budget: spec.instruction_budget.clone(),
                instructions: spec.instructions,
                last_cut: Arc::default(),
            },
            status_tx,
        ));
        let ready_by = Instant::now() + spec.timeout.saturating_mul(2) + READY_MARGIN;
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

/// What the instruction provider's `publish` receives for one generation; tool schemas
/// travel as JSON text.
pub fn server_instructions(snapshot: &McpSnapshot) -> ServerInstructions {
    let tools = snapshot
        .tools
        .iter()
        .map(|tool| {
            ServerTool::new(
                tool.name.clone(),
                tool.description.clone(),
                tool.input_schema.to_string(),
            )
        })
        .collect();
    ServerInstructions::new(
        snapshot.server.clone(),
        snapshot.instructions.clone(),
        tools,
    )
}

/// What publishing needs: the plugin, whether the bridge was closed, and the server's
/// instruction budget.
#[derive(Clone)]
struct Publisher {
    plugin: Arc<LoadedPlugin>,
    closed: Arc<AtomicBool>,
    budget: Option<InstructionBudget>,
    /// Whether the server's instructions are handed on (`false`: its tools only).
    instructions: bool,
    /// The last instructions cut and what they were cut to. A server's instructions come
    /// with `initialize` and rarely change, while a server can make new generations as
    /// often as it likes (`tools/list_changed`): each is not cut (counted) again.
    last_cut: Arc<Mutex<Option<LastCut>>>,
}

/// Instructions as the server sent them, and as the budget cut them.
struct LastCut {
    sent: String,
    kept: String,
    cut: Option<InstructionsCut>,
}

impl Publisher {
    /// `instructions` of `server`'s `generation` within the budget: the last cut again when
    /// they are the same text.
    fn cut(
        &self,
        budget: &InstructionBudget,
        server: &str,
        generation: u64,
        instructions: String,
    ) -> Result<(String, Option<InstructionsCut>), String> {
        let mut last = self.last_cut.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(last) = last.as_ref().filter(|l| l.sent == instructions) {
            let cut = last
                .cut
                .clone()
                .map(|cut| InstructionsCut { generation, ..cut });
            return Ok((last.kept.clone(), cut));
        }
        let (kept, cut) = cut_instructions(server, generation, &instructions, budget)
            .map_err(|e| format!("its instructions could not be counted: {e}"))?;
        *last = Some(LastCut {
            sent: instructions,
            kept: kept.clone(),
            cut: cut.clone(),
        });
        Ok((kept, cut))
    }
}

/// The bridge's task: handle the connection's events one at a time, in order.
async fn publish_events(
    mut events: mpsc::UnboundedReceiver<McpEvent>,
    publisher: Publisher,
    status: watch::Sender<McpStatus>,
) {
    while let Some(event) = events.recv().await {
        match event {
            McpEvent::Generation(snapshot) => {
                let generation = snapshot.generation;
                let lifecycle = snapshot.lifecycle;
                let protocol_version = snapshot.protocol_version.clone();
                let outcome = publish(&publisher, snapshot).await;
                status.send_modify(|s| {
                    s.state = McpState::Up;
                    s.generations += 1;
                    s.lifecycle = Some(lifecycle);
                    s.protocol_version = Some(protocol_version);
                    match outcome {
                        Ok((cut, handed)) => {
                            s.published += 1;
                            s.live_generation = Some(generation);
                            s.instructions_cut = cut;
                            s.instructions = handed;
                        }
                        Err(error) => {
                            s.rejected += 1;
                            s.last_error = Some(error);
                        }
                    }
                });
            }
            McpEvent::Failed { error, .. } => {
                let status_label = status.borrow().label();
                log::warn!("{status_label}: {error}; keeping the last published generation");
                status.send_modify(|s| {
                    s.state = McpState::Down;
                    s.failures += 1;
                    s.last_error = Some(error);
                });
            }
        }
    }
}

/// Publish one generation on a blocking thread (counting its instructions against the
/// budget, and the plugin call, may take a while). The error names the server, the scope,
/// the generation and the plugin; success says how the instructions were cut, if they were.
async fn publish(
    publisher: &Publisher,
    mut snapshot: McpSnapshot,
) -> Result<(Option<InstructionsCut>, String), String> {
    let where_ = label(&snapshot.server, publisher.plugin.scope());
    let generation = snapshot.generation;
    let publisher = publisher.clone();
    let joined = tokio::task::spawn_blocking(move || {
        if !publisher.instructions {
            // Switched off by the operator: the tools still go through.
            snapshot.instructions.clear();
        }
        let cut = match &publisher.budget {
            Some(budget) => {
                let sent = std::mem::take(&mut snapshot.instructions);
                let (text, cut) = publisher.cut(budget, &snapshot.server, generation, sent)?;
                snapshot.instructions = text;
                cut
            }
            None => None,
        };
        let record = server_instructions(&snapshot);
        let plugin = &publisher.plugin;
        let result = crate::blocking::allow_blocking(|| plugin.publish(&record));
        if publisher.closed.load(Ordering::SeqCst) {
            // The bridge was closed while this ran: take back what was just committed.
            plugin.dispose();
        }
        result
            .map(|declared| (declared.len(), cut, record.instructions.clone()))
            .map_err(|e| e.to_string())
    })
    .await;
    match joined {
        Ok(Ok((declared, cut, handed))) => {
            log::info!("{where_}: generation {generation} published ({declared} declarations)");
            if let Some(cut) = &cut {
                log::warn!("{where_}: generation {generation}: {}", cut.note());
            }
            Ok((cut, handed))
        }
        Ok(Err(error)) => {
            let message = format!(
                "{where_}: generation {generation} refused, the previous one stays: {error}"
            );
            log::warn!("{message}");
            Err(message)
        }
        Err(join) => {
            let message =
                format!("{where_}: generation {generation}: publish did not finish: {join}");
            log::warn!("{message}");
            Err(message)
        }
    }
}
