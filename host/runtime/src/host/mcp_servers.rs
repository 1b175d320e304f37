//! MCP servers the host keeps: [`Host::connect_mcp`], [`Host::mcp_status`],
//! [`Host::wait_mcp_ready`]. Each server runs through an [`McpBridge`] whose
//! instruction-provider plugin is loaded into the server's scope as `mcp:<server>`, so
//! [`Host::dispose_scope`] shuts the server down and removes what it contributed.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;

use super::{Host, HostError, KeptMcp};
use crate::mcp::{McpBridge, McpBridgeError, McpServerSpec, McpStatus, ReconnectPolicy};
use crate::policy::{PluginOptions, PluginSpec};
use crate::wasm::LoadedPlugin;

/// Identifies an MCP server the host keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct McpId(pub u64);

/// How to connect one MCP server: the server, where its contributions go, and which
/// instruction-provider plugin decides what they are.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpSpec {
    /// How to start the server.
    pub server: McpServerSpec,
    /// The scope its section and tools land in (`None` = global).
    pub scope: Option<String>,
    /// The instruction-provider component (e.g. `mcp-instructions.wasm`).
    pub provider: PathBuf,
    /// Handed to the provider's `init` as JSON (`{}` when absent).
    pub config: serde_json::Value,
    /// The provider plugin's limits and failure policy.
    pub options: PluginOptions,
    /// Delays between reconnection attempts.
    pub reconnect: ReconnectPolicy,
}

impl McpSpec {
    /// A global server with the provider's default config and the default policies.
    pub fn new(server: McpServerSpec, provider: impl Into<PathBuf>) -> Self {
        McpSpec {
            server,
            scope: None,
            provider: provider.into(),
            config: serde_json::json!({}),
            options: PluginOptions::default(),
            reconnect: ReconnectPolicy::default(),
        }
    }

    /// Put its contributions in `scope`.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Hand `config` to the provider's `init`.
    pub fn config(mut self, config: serde_json::Value) -> Self {
        self.config = config;
        self
    }

    /// Load the provider plugin with these limits and failure policy.
    pub fn options(mut self, options: PluginOptions) -> Self {
        self.options = options;
        self
    }

    /// Reconnect as `policy` says.
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }
}

/// The plugin name of a server's instruction provider.
pub fn provider_plugin_name(server: &str) -> String {
    format!("mcp:{server}")
}

impl Host {
    /// Connect an MCP server: load its instruction-provider plugin into `spec.scope` as
    /// `mcp:<server>`, spawn the server and publish every generation it reports through the
    /// plugin. Returns at once; the first generation arrives later (see
    /// [`Host::wait_mcp_ready`]). Must be called within a Tokio runtime, which runs the
    /// connection. The host keeps the server until [`Host::disconnect_mcp`] or
    /// [`Host::dispose_scope`] of its scope.
    ///
    /// Server names are unique across the host's live servers (they prefix tool names).
    pub fn connect_mcp(&self, spec: McpSpec) -> Result<McpId, HostError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| McpBridgeError::NoRuntime {
                server: spec.server.name.clone(),
                scope: spec.scope.clone(),
            })?;
        self.check_server_name(&spec.server.name, spec.scope.as_deref())?;
        let plugin_spec = PluginSpec {
            name: provider_plugin_name(&spec.server.name),
            scope: spec.scope.clone(),
            config: spec.config.clone(),
            options: spec.options.clone(),
            sha256: None,
        };
        let plugin = self.load_plugin(plugin_spec, &spec.provider)?;
        self.bridge_plugin(plugin, spec.server, spec.reconnect, &runtime)
    }

    /// Connect an MCP server through a provider plugin the caller already loaded (from
    /// bytes, with a pin, ...) into the server's scope. See [`Host::connect_mcp`].
    pub fn connect_mcp_with(
        &self,
        plugin: LoadedPlugin,
        server: McpServerSpec,
        reconnect: ReconnectPolicy,
    ) -> Result<McpId, HostError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| McpBridgeError::NoRuntime {
                server: server.name.clone(),
                scope: plugin.scope().map(str::to_owned),
            })?;
        self.check_server_name(&server.name, plugin.scope())?;
        self.bridge_plugin(plugin, server, reconnect, &runtime)
    }

    fn bridge_plugin(
        &self,
        plugin: LoadedPlugin,
        server: McpServerSpec,
        reconnect: ReconnectPolicy,
        runtime: &tokio::runtime::Handle,
    ) -> Result<McpId, HostError> {
        let bridge = McpBridge::start(plugin, server, reconnect, runtime)?;
        let id = McpId(
            self.next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let mut servers = self.lock_mcp();
        // Checked again under the lock: two concurrent connects of one name must not both win.
        if servers.values().any(|b| b.server() == bridge.server()) {
            let server = bridge.server().to_owned();
            drop(servers);
            drop(bridge);
            return Err(McpBridgeError::DuplicateName { server }.into());
        }
        servers.insert(id, bridge);
        Ok(id)
    }

    fn check_server_name(&self, server: &str, scope: Option<&str>) -> Result<(), HostError> {
        if !crate::mcp::valid_server_name(server) {
            return Err(McpBridgeError::InvalidName {
                server: server.to_owned(),
                scope: scope.map(str::to_owned),
            }
            .into());
        }
        if self.lock_mcp().values().any(|b| b.server() == server) {
            return Err(McpBridgeError::DuplicateName {
                server: server.to_owned(),
            }
            .into());
        }
        Ok(())
    }

    /// Stop a kept server and remove its contributions. False if unknown.
    pub fn disconnect_mcp(&self, id: McpId) -> bool {
        // Out of the map first, so the disposal (which notifies observers) runs unlocked.
        let removed = self.lock_mcp().remove(&id);
        removed.is_some()
    }

    /// The status of every kept server, in connection order.
    pub fn mcp_status(&self) -> Vec<KeptMcp> {
        self.lock_mcp()
            .iter()
            .map(|(id, bridge)| KeptMcp {
                id: *id,
                status: bridge.status(),
            })
            .collect()
    }

    /// The body of skill `skill` (its `SKILL.md`) of server `server` connected into `scope`
    /// (`None`: the global one), read from the server now and checked against the live
    /// generation's index: its size, its digest, then its frontmatter's name. Nothing is put
    /// in the prompt: the caller decides what to do with the text.
    pub async fn mcp_skill(
        &self,
        server: &str,
        scope: Option<&str>,
        skill: &str,
    ) -> Result<crate::mcp::SkillBody, HostError> {
        use crate::mcp::SkillError;
        let found = self
            .lock_mcp()
            .values()
            .find(|b| b.server() == server && b.scope() == scope)
            .map(|b| (b.status().skills, b.skill_reader()));
        let Some((index, Some(reader))) = found else {
            let elsewhere = self
                .lock_mcp()
                .values()
                .filter(|b| b.server() == server)
                .map(|b| b.scope().map(str::to_owned))
                .collect();
            return Err(SkillError::NoServer {
                server: server.to_owned(),
                scope: scope.map(str::to_owned),
                elsewhere,
            }
            .into());
        };
        let Some(entry) = index.iter().find(|s| s.name == skill) else {
            return Err(SkillError::Unknown {
                server: server.to_owned(),
                skill: prompt_host_peer::shown(skill),
                listed: index.len(),
            }
            .into());
        };
        Ok(reader.read(entry).await?)
    }

    /// A receiver of `id`'s status changes (to wait for a condition), if it is kept.
    pub fn watch_mcp(&self, id: McpId) -> Option<watch::Receiver<McpStatus>> {
        self.lock_mcp().get(&id).map(McpBridge::watch)
    }

    /// Wait until every kept server has published (or had refused) its first generation or
    /// reported its first failure, each for at most `limit` and never past the server's own
    /// bound (twice its timeout plus a margin, counted from its connection). A one-shot
    /// command calls this before assembling so the servers' instructions are in the prompt.
    /// Returns every status reached; a server still [`crate::mcp::McpState::Starting`]
    /// simply has nothing in the prompt yet.
    pub async fn wait_mcp_ready(&self, limit: Duration) -> Vec<KeptMcp> {
        let ids: Vec<McpId> = self.lock_mcp().keys().copied().collect();
        self.wait_ready(ids, limit).await
    }

    /// [`Host::wait_mcp_ready`] for the servers an assembly for `scope` sees: the global
    /// ones and those connected into `scope` or one of its ancestors.
    pub async fn wait_mcp_ready_for(&self, scope: Option<&str>, limit: Duration) -> Vec<KeptMcp> {
        let sees = self.seen_from(scope);
        let ids: Vec<McpId> = self
            .lock_mcp()
            .iter()
            .filter(|(_, b)| sees(b))
            .map(|(id, _)| *id)
            .collect();
        self.wait_ready(ids, limit).await
    }

    /// How the instructions of the servers an assembly for `scope` sees (the global ones
    /// and those of `scope` and its ancestors) were cut to their instruction budgets: one
    /// entry per server whose live generation was cut, in connection order.
    pub fn instructions_cuts_for(&self, scope: Option<&str>) -> Vec<crate::mcp::InstructionsCut> {
        // Every step asks: a host without servers answers without walking the scope chain
        // (walked before the servers' lock is taken, as `wait_mcp_ready_for` does).
        if self.lock_mcp().is_empty() {
            return Vec::new();
        }
        let sees = self.seen_from(scope);
        self.lock_mcp()
            .values()
            .filter(|b| sees(b))
            .filter_map(McpBridge::instructions_cut)
            .collect()
    }

    /// Whether an assembly for `scope` sees a server's contributions: it is global, or
    /// connected into `scope` or one of its ancestors.
    pub(super) fn seen_from(&self, scope: Option<&str>) -> impl Fn(&McpBridge) -> bool {
        let chain = scope
            .map(|s| self.registry.scope_chain(s))
            .unwrap_or_default();
        move |bridge: &McpBridge| {
            bridge
                .scope()
                .is_none_or(|s| chain.iter().any(|c| &**c == s))
        }
    }

    async fn wait_ready(&self, ids: Vec<McpId>, limit: Duration) -> Vec<KeptMcp> {
        let start = tokio::time::Instant::now();
        let mut reached = Vec::with_capacity(ids.len());
        for id in ids {
            // The bridge stays in the map; waiting works on a status receiver and a deadline
            // taken from it, so nothing is locked across the await.
            let Some((mut watch, deadline)) = self.lock_mcp().get(&id).map(|b| {
                let deadline = b.ready_deadline(start, limit);
                (b.watch(), deadline)
            }) else {
                continue;
            };
            let _ = tokio::time::timeout_at(deadline, watch.wait_for(McpStatus::settled)).await;
            let status = watch.borrow().clone();
            reached.push(KeptMcp { id, status });
        }
        reached
    }

    /// Drop the servers whose scope is `key` (part of [`Host::dispose_scope`]).
    pub(super) fn dispose_mcp_scope(&self, key: &str) {
        let removed: Vec<McpBridge> = {
            let mut servers = self.lock_mcp();
            let ids: Vec<McpId> = servers
                .iter()
                .filter(|(_, b)| b.scope() == Some(key))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| servers.remove(id)).collect()
        };
        drop(removed);
    }

    pub(super) fn lock_mcp(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<McpId, McpBridge>> {
        self.mcp
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
