//! The embedding API: one [`Host`] owns a registry, a Wasm runtime and the plugins loaded
//! from configuration or at run time, and runs assemble → render → step.
//!
//! ```no_run
//! # async fn demo() -> Result<(), prompt_host::HostError> {
//! use prompt_host::{Host, PluginSpec, RuntimeConfig, PromptConfig, Facts};
//! let host = Host::new(PromptConfig::default(), RuntimeConfig::default())?;
//! host.bind_scope("preset:coder", None)?;
//! host.bind_scope("agent:1", Some("preset:coder"))?;
//! let plugin = host.load_plugin(
//!     PluginSpec::new("persona").scope("agent:1"),
//!     std::path::Path::new("persona.wasm"),
//! )?;
//! let rendered = host.render(Some("agent:1"), Facts::new().with("model", "m1")).await?;
//! println!("{}", rendered.prompt);
//! drop(plugin); // disposes every contribution of the plugin
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::config::HostConfig;
use crate::policy::{OnError, PluginSpec};
use crate::projection::{run_step_checked, StepInput, StepOutcome, StepRefused};
use crate::prompt::CancelToken;
use crate::prompt::{
    join_context_sections, render_context_sections_within, render_prompt_within, AssembleContext,
    Assembly, EntryKind, Fiber, ObserverId, PromptConfig, Registry, RenderError, BUILT_IN_OWNER,
};
use crate::session::{AssistantReply, ModelRequest, Session, ToolResult};
use crate::wasm::{LoadedPlugin, PluginCode, PluginSource, RuntimeConfig, WasmRuntime};

mod compaction;
mod error;
mod facts;
mod gen_ai_provider;
mod kept;
#[cfg(feature = "mcp")]
mod mcp_entries;
#[cfg(feature = "mcp")]
mod mcp_servers;
#[cfg(feature = "mcp")]
mod mcp_start;
#[cfg(feature = "oci")]
mod oci_source;
mod scopes;
mod side_by_side;
mod spans;
mod steps;
#[cfg(feature = "tokens")]
mod token_counts;
#[cfg(not(feature = "mcp"))]
mod without_mcp;
#[cfg(not(feature = "tokens"))]
mod without_tokens;

pub use error::{Blame, HostError};
pub use facts::Facts;
#[cfg(feature = "mcp")]
pub use kept::KeptMcp;
pub use kept::{KeptPlugin, ToolOwner};
#[cfg(feature = "mcp")]
pub use mcp_servers::{provider_plugin_name, McpId, McpSpec};
pub use scopes::UnknownScope;

/// Identifies a plugin the host keeps alive (loaded from config or attached).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PluginId(pub u64);

pub use crate::prompt::Rendered;

/// Per-step flags of [`Host::step`].
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct StepOptions {
    /// The provider API the request is prepared for, its model and generation options
    /// (`chat-completions` with the `model` fact when `None`).
    pub route: Option<crate::session::route::RouteSpec>,
    /// Ask for in-history system updates when the route does not say
    /// (`RouteSpec::system_updates` wins).
    pub in_history: bool,
    /// This step starts a new request series.
    pub starts_series: bool,
    /// The user's input for this step.
    pub user_texts: Vec<String>,
}

/// A prompt host: registry + Wasm runtime + the plugins it keeps.
pub struct Host {
    registry: Arc<Registry>,
    runtime: WasmRuntime,
    plugins: Mutex<BTreeMap<PluginId, LoadedPlugin>>,
    /// MCP servers, each feeding its instruction-provider plugin (see `mcp_servers`).
    #[cfg(feature = "mcp")]
    mcp: Mutex<BTreeMap<McpId, crate::mcp::McpBridge>>,
    next_id: AtomicU64,
    /// The declared scope keys: every other key is refused.
    scopes: scopes::Scopes,
    /// The host's own global variables (`model`, `cwd`, `provider`); never disposed.
    _host_variables: Fiber,
    /// The tokenizers: `[prompt] tokenizer` and those named per call.
    #[cfg(feature = "tokens")]
    tokenizers: token_counts::Tokenizers,
    /// Whether the rendered prompt and context are span attributes (off unless asked:
    /// [`Host::record_prompt_in_spans`]).
    prompt_in_spans: AtomicBool,
    /// Where `oci://` plugins loaded at run time come from.
    #[cfg(feature = "oci")]
    oci_source: Mutex<oci_source::OciSource>,
    /// The store a bare session name is an id in (`[sessions] store`).
    session_store: Option<crate::session::StoreName>,
    /// `[sessions] max_request_tokens`: the most tokens a step's request may count.
    max_request_tokens: Option<usize>,
}

/// The global variables the host registers, each reading the caller fact of the same name
/// (no value when the caller gave none), as the agent loop of the TypeScript DeepSeek Harness
/// does.
pub const HOST_VARIABLES: [&str; 3] = ["provider", "model", "cwd"];

impl Host {
    /// A host with no plugins.
    pub fn new(prompt: PromptConfig, runtime: RuntimeConfig) -> Result<Self, HostError> {
        #[cfg(feature = "tokens")]
        let tokenizers = token_counts::Tokenizers::configured(&prompt)?;
        #[cfg(not(feature = "tokens"))]
        without_tokens::refuse_token_settings(&prompt)?;
        let registry = Registry::new(prompt).map_err(HostError::Prompt)?;
        #[cfg(feature = "oci")]
        let oci_source = oci_source::OciSource::for_runtime(&runtime);
        let runtime = WasmRuntime::new(runtime).map_err(HostError::Wasm)?;
        let fiber = registry.fiber(BUILT_IN_OWNER, None);
        for name in HOST_VARIABLES {
            let provider = move |ctx: &AssembleContext| Ok(ctx.fact(name).map(str::to_string));
            fiber
                .variable(name, Arc::new(provider))
                .map_err(HostError::Register)?;
        }
        Ok(Self {
            registry,
            runtime,
            plugins: Mutex::new(BTreeMap::new()),
            #[cfg(feature = "mcp")]
            mcp: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(1),
            scopes: scopes::Scopes::default(),
            _host_variables: fiber,
            #[cfg(feature = "tokens")]
            tokenizers,
            prompt_in_spans: AtomicBool::new(false),
            #[cfg(feature = "oci")]
            oci_source: Mutex::new(oci_source),
            session_store: None,
            max_request_tokens: None,
        })
    }

    /// With `store` as the store a bare session name is an id in (what host.toml's
    /// `[sessions] store` sets for [`Host::from_config`]).
    pub fn with_session_store(mut self, store: Option<crate::session::StoreName>) -> Self {
        self.session_store = store;
        self
    }

    /// With `[sessions] max_request_tokens`: a step whose request would count more tokens
    /// (with `[prompt] tokenizer`, as the route sends it) fails with
    /// [`HostError::OverRequestBudget`] and writes nothing. Needs a tokenizer: without
    /// one, such a step fails with [`HostError::BudgetNeedsTokenizer`].
    pub fn with_max_request_tokens(mut self, limit: Option<usize>) -> Self {
        self.max_request_tokens = limit;
        self
    }

    /// `[sessions] max_request_tokens`, if set.
    pub fn max_request_tokens(&self) -> Option<usize> {
        self.max_request_tokens
    }

    /// The store a bare session name is an id in (host.toml's `[sessions] store`), if any.
    pub fn session_store(&self) -> Option<&crate::session::StoreName> {
        self.session_store.as_ref()
    }

    /// The full name of the session `name` names in this deployment: an id within the
    /// configured store, or, without one, the name itself
    /// ([`crate::session::resolve_session`]). Open the session by the name this returns.
    pub fn session_name(
        &self,
        name: &std::path::Path,
    ) -> Result<std::path::PathBuf, crate::session::NameError> {
        crate::session::resolve_session(self.session_store(), name)
    }

    /// Record the rendered system prompt and runtime context in the `prompt_host.render`
    /// span (`gen_ai.system_instructions`, `prompt_host.context.text`) from now on. Off by
    /// default: prompts can hold what a trace backend should not (docs/observability.md);
    /// the command line turns it on with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.
    pub fn record_prompt_in_spans(&self, on: bool) {
        self.prompt_in_spans.store(on, Ordering::Relaxed);
    }

    /// A host built from a validated host.toml: scopes bound, plugins loaded in file order,
    /// then every `[[mcp]]` server connected through its instruction-provider plugin
    /// (`provider`, else `[host] mcp_provider`). The compile cache is `[host] cache_dir`
    /// when set, else `runtime.cache_dir`; `[host.pooling]`, when present, replaces
    /// `runtime.pooling`. A wasm file several plugins share is read and compiled once.
    /// An `oci://` plugin must have been fetched first ([`HostConfig::prepare_oci`], which
    /// calls [`crate::oci::prepare`]); one that was not is refused.
    ///
    /// On a machine with several cores the files are fetched, and the plugins instantiated
    /// with their `init` run, side by side; each plugin's declarations are committed in file
    /// order, and its log lines come out in its turn, so the registry and the log are what
    /// loading them one by one gives. A plugin whose run ahead failed or had a declaration
    /// refused is loaded again in its turn, and that load decides.
    ///
    /// With `[[mcp]]` entries this must run within a Tokio runtime (the connections live on
    /// it); outside one it fails naming the first server. It does not wait for the servers:
    /// the first assemblies do, each server within its `start_wait_ms`
    /// ([`Host::wait_mcp_start`]).
    pub fn from_config(config: &HostConfig, mut runtime: RuntimeConfig) -> Result<Self, HostError> {
        if let Some(dir) = &config.host.cache_dir {
            runtime.cache_dir = Some(dir.clone());
        }
        if let Some(pooling) = &config.host.pooling {
            runtime.pooling = Some(pooling.pooling());
        }
        runtime.max_wasm_bytes = config.host.max_wasm_bytes();
        #[cfg(feature = "oci")]
        let oci_source = oci_source::OciSource::configured(config, &runtime)?;
        let mut host = Self::new(config.prompt.clone(), runtime)?;
        host.session_store = config.sessions.store.clone();
        host.max_request_tokens = config.sessions.max_request_tokens;
        #[cfg(feature = "oci")]
        host.set_oci_source(oci_source);
        // Every key first: a parent may be declared after its children.
        for scope in &config.scopes {
            host.scopes.declare(&scope.name);
        }
        // Only the parent links remain: `bind_scope` would refuse these keys as bound already.
        // The configuration was validated (parents declared, no cycle), so a refusal here is
        // the registry's own.
        for scope in &config.scopes {
            if let Some(parent) = &scope.parent {
                host.registry
                    .bind_scope_parent(&scope.name, parent)
                    .map_err(|source| HostError::Scope {
                        scope: scope.name.clone(),
                        error: source,
                    })?;
            }
        }
        let specs: Vec<PluginSpec> = config
            .plugins
            .iter()
            .map(|plugin| PluginSpec {
                name: plugin.name.clone(),
                scope: plugin.scope.clone(),
                // Typed and checked when the file was loaded.
                config: serde_json::to_value(&plugin.config).unwrap_or_default(),
                options: plugin.options.clone(),
                sha256: plugin.sha256.clone(),
            })
            .collect();
        let (mut code_by_file, mut ahead) =
            side_by_side::fetch_and_run_ahead(&host, &config.plugins, &specs);
        for (index, (plugin, spec)) in config.plugins.iter().zip(specs).enumerate() {
            // The plugin's `init` run ahead of its turn stands if it went as a load now
            // would; else it is loaded now (see `side_by_side.rs`).
            let committed = ahead[index]
                .take()
                .and_then(|run| run.commit(&host.registry));
            let loaded = match committed {
                Some(loaded) => loaded.map_err(HostError::Wasm),
                None => {
                    // From here on, one by one: the later plugins' runs ahead hold what
                    // this plugin might need (a slot of the pooling allocator's), and are
                    // dropped before it loads.
                    ahead.iter_mut().skip(index + 1).for_each(|run| *run = None);
                    // The file's code, or why it has none: the first plugin using the file
                    // gets the error it met; a later one meets it again, under its own name.
                    let code = match code_by_file.get(plugin.wasm.as_path()) {
                        Some(Ok(code)) => Ok(code.clone()),
                        _ => match code_by_file.remove(plugin.wasm.as_path()) {
                            Some(result) => result,
                            None => host.compile_plugin(&plugin.name, plugin.wasm.as_path()),
                        },
                    };
                    code.and_then(|code| host.load_plugin(spec, &code))
                }
            };
            match loaded {
                Ok(loaded) => {
                    host.attach(loaded);
                }
                // A plugin that may fail without failing its assemblies may also fail to
                // start without stopping the deployment.
                Err(error) if plugin.on_error == OnError::Skip => {
                    host.runtime.announce(
                        &plugin.name,
                        plugin.scope.as_deref(),
                        "skipped",
                        &format!(
                            "{error}; plugin \"{}\" ({}) left out of the deployment (on_error = \"skip\")",
                            plugin.name,
                            crate::wasm::scope_label(plugin.scope.as_deref())
                        ),
                    );
                }
                Err(error) => return Err(error),
            }
        }
        #[cfg(feature = "mcp")]
        for index in 0..config.mcp.len() {
            host.connect_mcp(mcp_entries::mcp_spec(config, index, host.tokenizer())?)?;
        }
        Ok(host)
    }

    /// The registry (for native registrations and introspection).
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The Wasm runtime (cache statistics, `check`).
    pub fn runtime(&self) -> &WasmRuntime {
        &self.runtime
    }

    /// Declare scope `key`, with `parent` (a declared scope) or as a root (`None`). A scope is
    /// bound once: binding a declared key again is refused, whatever the parent asked for
    /// (the same one included), as are cycles. Only declared scopes can be assembled,
    /// rendered, stepped or loaded into.
    ///
    /// The checks run in this order: an empty key, an undeclared parent, a cycle, then a
    /// key bound already (so a link that would close a cycle is reported as one).
    pub fn bind_scope(&self, key: &str, parent: Option<&str>) -> Result<(), HostError> {
        if key.is_empty() {
            return Err(HostError::InvalidScope {
                scope: key.to_string(),
                message: "a scope key must not be empty".into(),
            });
        }
        self.scopes.declare_if(key, |known| {
            if let Some(parent) = parent {
                scopes::check_in(known, parent).map_err(|unknown| HostError::InvalidScope {
                    scope: key.to_string(),
                    message: format!("its parent: {unknown}"),
                })?;
                if self
                    .registry
                    .scope_chain(parent)
                    .iter()
                    .any(|k| &**k == key)
                {
                    return Err(HostError::Scope {
                        scope: key.to_string(),
                        error: crate::prompt::ScopeError::Cycle {
                            key: key.to_string(),
                            parent: parent.to_string(),
                        },
                    });
                }
            }
            // A parent bound through the registry directly counts as a binding too.
            let bound_to = self.registry.scope_chain(key).get(1).map(|p| p.to_string());
            if known.contains(key) || bound_to.is_some() {
                return Err(HostError::Rebound {
                    scope: key.to_string(),
                    parent: bound_to,
                });
            }
            if let Some(parent) = parent {
                self.registry
                    .bind_scope_parent(key, parent)
                    .map_err(|source| HostError::Scope {
                        scope: key.to_string(),
                        error: source,
                    })?;
            }
            Ok(())
        })
    }

    /// Every declared scope key, sorted.
    pub fn scopes(&self) -> Vec<String> {
        self.scopes.list()
    }

    /// `Ok` for the global scope and declared keys; otherwise the error names the known
    /// scopes and the closest one.
    pub fn check_scope(&self, scope: Option<&str>) -> Result<(), HostError> {
        self.scopes
            .check(scope)
            .map_err(|unknown| HostError::UnknownScope(Box::new(unknown)))
    }

    /// Load a plugin into `spec.scope` from a file, bytes or code compiled before (see
    /// [`PluginSource`]). The returned handle owns its contributions: dropping it disposes
    /// them. Use [`Host::attach`] to let the host keep it.
    pub fn load_plugin<'a>(
        &self,
        spec: PluginSpec,
        source: impl Into<PluginSource<'a>>,
    ) -> Result<LoadedPlugin, HostError> {
        self.check_scope(spec.scope.as_deref())?;
        self.runtime
            .load(&self.registry, &spec, source.into())
            .map_err(HostError::Wasm)
    }

    /// The compiled code of a plugin, for a host that loads the same plugin into many
    /// scopes (one per agent): [`Host::load_plugin`] with [`PluginSource::Code`] then only
    /// instantiates it, where a file is checked on every load (its recorded identity, or a
    /// read and a hash when it changed). `name` is used in errors.
    pub fn compile_plugin<'a>(
        &self,
        name: &str,
        source: impl Into<PluginSource<'a>>,
    ) -> Result<PluginCode, HostError> {
        self.runtime
            .compile(name, source.into(), None)
            .map_err(HostError::Wasm)
    }

    /// Keep a loaded plugin alive inside the host until [`Host::dispose_plugin`] or
    /// [`Host::dispose_scope`].
    pub fn attach(&self, plugin: LoadedPlugin) -> PluginId {
        let id = PluginId(self.next_id.fetch_add(1, Ordering::Relaxed));
        self.lock_plugins().insert(id, plugin);
        id
    }

    /// The plugins the host keeps, in id order, with what each was granted.
    pub fn plugins(&self) -> Vec<KeptPlugin> {
        self.lock_plugins()
            .iter()
            .map(|(id, p)| KeptPlugin {
                id: *id,
                name: p.name().to_string(),
                scope: p.scope().map(str::to_string),
                grants: p.grants().clone(),
                load: p.load_timing(),
            })
            .collect()
    }

    /// Reload kept plugin `id` from the component at `path` (a rebuilt plugin): the new
    /// instance runs `init` with the same name, scope, config and options, and its
    /// declarations replace the old ones in one registry step, between two assemblies. If
    /// reading, compiling, `init` or a declaration fails, the old plugin stays and the error
    /// says why. Returns what the new instance declared.
    pub fn reload_plugin(
        &self,
        id: PluginId,
        path: &Path,
    ) -> Result<Vec<crate::wasm::Declaration>, HostError> {
        self.reload_plugin_pinned(id, path, None)
    }

    /// [`Host::reload_plugin`] from a component whose sha256 (hex) must be `pin`: the bytes
    /// compiled are hashed and checked first (an `oci://` component from
    /// [`Host::fetch_oci`]).
    pub fn reload_plugin_pinned(
        &self,
        id: PluginId,
        path: &Path,
        pin: Option<&str>,
    ) -> Result<Vec<crate::wasm::Declaration>, HostError> {
        let Some(old) = self.lock_plugins().remove(&id) else {
            return Err(HostError::UnknownPlugin { id: id.0 });
        };
        let reloaded = self
            .runtime
            .compile(old.name(), path, pin)
            .map_err(HostError::Wasm)
            .and_then(|code| old.reload(&code).map_err(HostError::Wasm));
        match reloaded {
            Ok(new) => {
                let declared = new.declarations().to_vec();
                self.lock_plugins().insert(id, new);
                // `old` owns no entry any more: they were replaced.
                drop(old);
                Ok(declared)
            }
            Err(e) => {
                self.lock_plugins().insert(id, old);
                Err(e)
            }
        }
    }

    /// Dispose a kept plugin: every contribution is removed. False if unknown.
    pub fn dispose_plugin(&self, id: PluginId) -> bool {
        // Take it out first so its disposal (which notifies observers) runs unlocked.
        let removed = self.lock_plugins().remove(&id);
        match removed {
            Some(plugin) => {
                plugin.dispose();
                true
            }
            None => false,
        }
    }

    /// Dispose scope `key`: every registration made through it, the kept plugins loaded
    /// into it, and the MCP servers connected into it (their processes are killed).
    pub fn dispose_scope(&self, key: &str) {
        self.dispose_mcp_scope(key);
        let removed: Vec<LoadedPlugin> = {
            let mut plugins = self.lock_plugins();
            let ids: Vec<PluginId> = plugins
                .iter()
                .filter(|(_, p)| p.scope() == Some(key))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| plugins.remove(id)).collect()
        };
        drop(removed);
        self.registry.dispose_scope(key);
    }

    /// A native registration group in `scope` (`None` = global), owned by `owner`. Its
    /// entries reach assemblies of declared scopes only (see [`Host::bind_scope`]).
    pub fn native(&self, owner: &str, scope: Option<&str>) -> Fiber {
        self.registry.fiber(owner, scope)
    }

    /// Be told after every registration and removal.
    pub fn subscribe(&self, f: Arc<dyn Fn() + Send + Sync>) -> ObserverId {
        self.registry.subscribe(f)
    }

    /// Which kept plugin declared each fixed tool name.
    pub fn tool_owners(&self) -> std::collections::HashMap<String, ToolOwner> {
        let mut owners = std::collections::HashMap::new();
        for plugin in self.lock_plugins().values() {
            for declaration in plugin.declarations() {
                if let crate::wasm::Declaration::Tools { names, .. } = declaration {
                    for name in names {
                        owners.insert(
                            name.clone(),
                            ToolOwner {
                                plugin: plugin.name().to_string(),
                                layer: scope_label(plugin.scope()),
                            },
                        );
                    }
                }
            }
        }
        owners
    }

    fn lock_plugins(&self) -> MutexGuard<'_, BTreeMap<PluginId, LoadedPlugin>> {
        self.plugins
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn scope_label(scope: Option<&str>) -> String {
    scope.unwrap_or("global").to_string()
}

impl StepOptions {
    /// A step with the user's input `texts`, other flags off.
    pub fn user(texts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::default().user_texts(texts.into_iter().map(Into::into).collect())
    }

    /// Sets [`StepOptions::route`].
    pub fn route(mut self, route: crate::session::route::RouteSpec) -> Self {
        self.route = Some(route);
        self
    }

    /// Sets [`StepOptions::in_history`].
    pub fn in_history(mut self, value: bool) -> Self {
        self.in_history = value;
        self
    }

    /// Sets [`StepOptions::starts_series`].
    pub fn starts_series(mut self, value: bool) -> Self {
        self.starts_series = value;
        self
    }

    /// Sets [`StepOptions::user_texts`].
    pub fn user_texts(mut self, value: Vec<String>) -> Self {
        self.user_texts = value;
        self
    }
}
