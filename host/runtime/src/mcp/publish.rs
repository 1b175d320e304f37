//! The bridge's task: each event of an MCP connection, one at a time and in order, handed
//! to the instruction-provider plugin (a generation, converted to the WIT `mcp-server`
//! record and cut to the server's instruction budget) or recorded (a failure), and the
//! bridge's status updated after each.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, watch};

use super::{
    cut_instructions, InstructionBudget, InstructionsCut, McpEvent, McpServerSpec, McpSnapshot,
};
use super::{server_label as label, McpState, McpStatus};
use crate::wasm::{LoadedPlugin, ServerInstructions, ServerSkill, ServerTool};

/// What the instruction provider's `publish` receives for one generation; tool schemas
/// travel as JSON text, and the skills index goes only to a provider that exports `skills`.
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
    let skills = snapshot
        .skills
        .iter()
        .map(|skill| {
            ServerSkill::new(
                skill.uri.clone(),
                skill.name.clone(),
                skill.description.clone(),
                skill.digest(),
                u32::try_from(skill.file_count()).unwrap_or(u32::MAX),
                skill.total_size(),
            )
        })
        .collect();
    ServerInstructions::new(
        snapshot.server.clone(),
        snapshot.instructions.clone(),
        tools,
    )
    .with_skills(skills)
}

/// What publishing needs: the plugin, whether the bridge was closed, and the server's
/// instruction budget.
#[derive(Clone)]
pub(super) struct Publisher {
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
    /// Publishing `spec`'s generations into `plugin` until `closed`.
    pub(super) fn new(
        plugin: Arc<LoadedPlugin>,
        closed: Arc<AtomicBool>,
        spec: &McpServerSpec,
    ) -> Self {
        Publisher {
            plugin,
            closed,
            budget: spec.instruction_budget.clone(),
            instructions: spec.instructions,
            last_cut: Arc::default(),
        }
    }

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
pub(super) async fn publish_events(
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
                let skills = snapshot.skills.clone();
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
                            s.skills = skills;
                        }
                        Err(error) => {
                            s.rejected += 1;
                            s.last_error = Some(error);
                        }
                    }
                });
            }
            McpEvent::Failed { error, .. } => {
                tell_failure(&status.borrow(), &error);
                status.send_modify(|s| {
                    s.state = McpState::Down;
                    s.failures += 1;
                    s.last_error = Some(error);
                });
            }
        }
    }
}

/// Log a connection failure. One that leaves a published generation in the prompt is a
/// warning; before the first one, the assemblies that wait for the server say what they
/// do without it (`StartWait`), and the failure is information. The same failure again,
/// on every reconnection attempt, is said once.
fn tell_failure(before: &McpStatus, error: &str) {
    let label = before.label();
    let again = before.state == McpState::Down && before.last_error.as_deref() == Some(error);
    match before.live_generation {
        _ if again => log::debug!("{label}: {error} (again; retrying)"),
        Some(generation) => {
            log::warn!("{label}: {error}; its generation {generation} stays, retrying")
        }
        None => log::info!("{label}: {error}; nothing published yet, retrying"),
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
