//! The reference deployment of the benchmarks (docs/benchmarks.md), built once as data and
//! installed either through Wasm plugins or through native closures, so the two paths
//! assemble exactly the same prompt and the sandbox's price is a ratio.
//!
//! Content: identity + persona; four tool-guidance plugins with 10 sections in the 100–199
//! band (200–800 bytes, 3 dynamic); two context plugins with 3 runtime contexts (1 dynamic);
//! two variable plugins with 6 variables (2 dynamic, all referenced from sections); two tool
//! providers with 30 tools (JSON-schema parameters of 0.3–2 KB; one fixed set, one dynamic);
//! two listeners (a pass-through that only calls `next()` and a redactor rewriting section
//! text). Twelve plugins: nine global or in the parent scope `preset:coder`, three in each
//! agent scope (`agent:N`, child of `preset:coder`).
//!
//! Wasm path: every plugin is the `declare` guest with a config expressing its content,
//! except the redactor (the `redactor` guest). Native path: the same content registered
//! with `Fiber`s, dynamic entries as closures computing what the guest computes.

use std::sync::Arc;

use prompt_host::policy::{Limits, PluginOptions, PluginSpec};
use prompt_host::prompt::{
    AssembleContext, Assembly, Fiber, ListenerOptions, Next, PromptConfig, ProviderError, Registry,
    SectionDef, TextSource, ToolSchema, ToolSet, ToolSource,
};
use prompt_host::wasm::{LoadedPlugin, PluginCode, WasmRuntime};
use serde_json::{json, Value};

/// The parent scope of every agent scope.
pub const PARENT: &str = "preset:coder";
/// The word the redactor replaces (it occurs in one section).
pub const REDACTED_WORD: &str = "hunter2";
const REDACTION_MARK: &str = "[redacted]";

/// The scope key of agent `i`.
pub fn agent(i: usize) -> String {
    format!("agent:{i}")
}

/// Where a plugin is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The global layer.
    Global,
    /// The parent scope `preset:coder`.
    Parent,
    /// Each agent scope.
    Agent,
}

/// A section or a runtime context.
#[derive(Debug, Clone)]
pub struct Text {
    /// Name.
    pub name: String,
    /// Order.
    pub order: f64,
    /// Fixed text, or for a dynamic entry the template expanded per call (`${scope}`,
    /// `${scope_chain}`, `${fact:NAME}`).
    pub text: String,
    /// Computed per assembly.
    pub dynamic: bool,
}

/// A variable.
#[derive(Debug, Clone)]
pub struct Var {
    /// Name.
    pub name: String,
    /// Fixed value, or the template of a dynamic one.
    pub value: String,
    /// Computed per assembly.
    pub dynamic: bool,
}

/// A tool provider.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The schemas it returns.
    pub schemas: Vec<ToolSchema>,
    /// Called per assembly (else a fixed set stored by the host).
    pub dynamic: bool,
}

/// A listener.
#[derive(Debug, Clone)]
pub enum Listener {
    /// Calls `next()` and nothing else.
    PassThrough,
    /// Calls `next()`, then replaces [`REDACTED_WORD`] in every section.
    Redactor,
}

/// One plugin's content.
#[derive(Debug, Clone)]
pub struct PluginDef {
    /// Plugin name (fiber owner).
    pub name: String,
    /// Where it is loaded.
    pub place: Place,
    /// Sections.
    pub sections: Vec<Text>,
    /// Runtime contexts.
    pub contexts: Vec<Text>,
    /// Variables.
    pub variables: Vec<Var>,
    /// Tool provider.
    pub tools: Option<Tools>,
    /// Listener.
    pub listener: Option<Listener>,
    /// Contract 0.2.0: ask the host to keep every dynamic answer until the context changes
    /// (the `declare` guest's `keep_until_context_changes`).
    pub keep: bool,
}

impl PluginDef {
    fn new(name: &str, place: Place) -> Self {
        Self {
            name: name.to_string(),
            place,
            sections: Vec::new(),
            contexts: Vec::new(),
            variables: Vec::new(),
            tools: None,
            listener: None,
            keep: false,
        }
    }

    /// The scope key to load into, for agent `agent_scope` when the plugin is per agent.
    pub fn scope<'a>(&self, agent_scope: &'a str) -> Option<&'a str> {
        match self.place {
            Place::Global => None,
            Place::Parent => Some(PARENT),
            Place::Agent => Some(agent_scope),
        }
    }

    /// The `declare` guest config expressing this content (not for the redactor).
    pub fn declare_config(&self) -> Value {
        let text = |t: &Text| {
            let source = if t.dynamic {
                json!({ "dynamic": t.text })
            } else {
                json!(t.text)
            };
            json!({ "name": t.name, "order": t.order, "text": source })
        };
        let mut config = serde_json::Map::new();
        if !self.sections.is_empty() {
            config.insert(
                "sections".into(),
                self.sections.iter().map(text).collect::<Vec<_>>().into(),
            );
        }
        if !self.contexts.is_empty() {
            config.insert(
                "contexts".into(),
                self.contexts.iter().map(text).collect::<Vec<_>>().into(),
            );
        }
        if !self.variables.is_empty() {
            let vars: Vec<Value> = self
                .variables
                .iter()
                .map(|v| {
                    if v.dynamic {
                        json!({ "name": v.name, "dynamic": v.value })
                    } else {
                        json!({ "name": v.name, "value": v.value })
                    }
                })
                .collect();
            config.insert("variables".into(), vars.into());
        }
        if let Some(tools) = &self.tools {
            // Parameters as JSON text: passed verbatim, so both paths parse the same bytes.
            let schemas: Vec<Value> = tools
                .schemas
                .iter()
                .map(|s| {
                    json!({
                        "name": s.name,
                        "description": s.description,
                        "parameters": s.parameters.to_string(),
                    })
                })
                .collect();
            config.insert(
                "tools".into(),
                json!([{ "schemas": schemas, "dynamic": tools.dynamic, "key": "tools" }]),
            );
        }
        if self.keep {
            config.insert("keep_until_context_changes".into(), true.into());
        }
        if let Some(Listener::PassThrough) = &self.listener {
            config.insert(
                "listener".into(),
                json!({ "key": "pass-through", "steps": [{ "next": true }] }),
            );
        }
        Value::Object(config)
    }

    /// The guest's `init` config.
    pub fn wasm_config(&self) -> Value {
        match self.listener {
            Some(Listener::Redactor) => json!({ "words": [REDACTED_WORD], "prepend": true }),
            _ => self.declare_config(),
        }
    }

    /// The spec to load this plugin with into `scope`.
    pub fn wasm_spec(&self, scope: Option<&str>) -> PluginSpec {
        let mut spec = PluginSpec::new(&self.name)
            .config(self.wasm_config())
            .options(bench_options());
        if let Some(scope) = scope {
            spec = spec.scope(scope);
        }
        spec
    }

    /// Which guest implements this plugin.
    pub fn code<'a>(&self, code: &'a Code) -> &'a PluginCode {
        match self.listener {
            Some(Listener::Redactor) => &code.redactor,
            _ => &code.declare,
        }
    }

    /// Load this plugin as a Wasm component into `registry`, from compiled code (an
    /// instantiation, as a new agent scope does).
    pub fn load_wasm(
        &self,
        runtime: &WasmRuntime,
        registry: &Arc<Registry>,
        code: &Code,
        scope: Option<&str>,
    ) -> LoadedPlugin {
        runtime
            .load(registry, &self.wasm_spec(scope), self.code(code))
            .unwrap_or_else(|e| panic!("load {}: {e}", self.name))
    }

    /// Register the same content through native closures; the fiber owns it.
    pub fn load_native(&self, registry: &Arc<Registry>, scope: Option<&str>) -> Fiber {
        let fiber = registry.fiber(&self.name, scope);
        let source = |t: &Text| {
            if t.dynamic {
                let template = t.text.clone();
                TextSource::dynamic(move |ctx| Ok(expand(&template, ctx)))
            } else {
                TextSource::fixed(t.text.as_str())
            }
        };
        for s in &self.sections {
            fiber
                .section(SectionDef::new(&s.name, s.order, source(s)))
                .expect("native section");
        }
        for c in &self.contexts {
            fiber
                .context(SectionDef::new(&c.name, c.order, source(c)))
                .expect("native context");
        }
        for v in &self.variables {
            let value = v.value.clone();
            let provider: Arc<dyn prompt_host::prompt::VariableProvider> = if v.dynamic {
                Arc::new(move |ctx: &AssembleContext| Ok(Some(expand(&value, ctx))))
            } else {
                // A fixed value is host data on the Wasm path too.
                Arc::new(move |_: &AssembleContext| Ok(Some(value.clone())))
            };
            fiber.variable(&v.name, provider).expect("native variable");
        }
        if let Some(tools) = &self.tools {
            let set = ToolSet {
                schemas: tools.schemas.clone(),
                known_names: None,
            };
            if tools.dynamic {
                fiber.tools(ToolSource::Dynamic(Arc::new(move |_: &AssembleContext| {
                    Ok(set.clone())
                })));
            } else {
                fiber.tools(ToolSource::Static(Arc::new(set)));
            }
        }
        match self.listener {
            Some(Listener::PassThrough) => {
                fiber.listener(
                    Arc::new(|a: &mut Assembly, _: &AssembleContext, next: &mut Next| next.run(a)),
                    ListenerOptions::default(),
                );
            }
            Some(Listener::Redactor) => {
                fiber.listener(
                    Arc::new(native_redactor),
                    ListenerOptions {
                        prepend: true,
                        global: false,
                    },
                );
            }
            None => {}
        }
        fiber
    }
}

/// Default limits, except a call deadline of 1 s instead of 50 ms: the benchmarks run on
/// shared, loaded machines where a descheduled thread must not turn a measurement into a
/// timeout. (The deadline's bookkeeping costs the same whatever its length.)
pub fn bench_options() -> PluginOptions {
    PluginOptions::default().limits(Limits::default().call_timeout_ms(1_000))
}

fn native_redactor(
    a: &mut Assembly,
    _: &AssembleContext,
    next: &mut Next,
) -> Result<(), ProviderError> {
    next.run(a)?;
    for s in &mut a.sections {
        if s.text.contains(REDACTED_WORD) {
            s.text = s.text.replace(REDACTED_WORD, REDACTION_MARK);
        }
    }
    Ok(())
}

/// What the `declare` guest does with a dynamic template (minus `${call}`).
pub fn expand(template: &str, cx: &AssembleContext) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        match name {
            "scope" => out.push_str(cx.scope().unwrap_or("")),
            "scope_chain" => {
                let chain: Vec<&str> = cx.scope_chain.iter().map(|s| &**s).collect();
                out.push_str(&chain.join(","));
            }
            _ => match name.strip_prefix("fact:") {
                Some(fact) => out.push_str(cx.fact(fact).unwrap_or("")),
                None => out.push_str(&rest[start..start + 3 + end]),
            },
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The guest components.
pub struct Guests {
    /// `declare`.
    pub declare: Vec<u8>,
    /// `redactor`.
    pub redactor: Vec<u8>,
}

impl Guests {
    /// Read the guests built by this package's build script (contract 0.1.0).
    pub fn load() -> Self {
        Self {
            declare: std::fs::read(env!("GUEST_DECLARE")).expect("declare guest"),
            redactor: std::fs::read(env!("GUEST_REDACTOR")).expect("redactor guest"),
        }
    }

    /// The same two guests rebuilt from the same sources against contract 0.2.0, whose
    /// dynamic entries answer "unchanged" when their value did not change.
    pub fn load_v2() -> Self {
        Self {
            declare: std::fs::read(env!("GUEST_DECLARE_V2")).expect("declare 0.2.0 guest"),
            redactor: std::fs::read(env!("GUEST_REDACTOR_V2")).expect("redactor 0.2.0 guest"),
        }
    }
}

/// The guests compiled by one runtime.
#[derive(Debug, Clone)]
pub struct Code {
    /// `declare`.
    pub declare: PluginCode,
    /// `redactor`.
    pub redactor: PluginCode,
}

impl Code {
    /// Compile (or fetch from the runtime's caches) both guests.
    pub fn compile(runtime: &WasmRuntime, guests: &Guests) -> Self {
        Self {
            declare: runtime
                .compile("declare", &guests.declare, None)
                .expect("declare"),
            redactor: runtime
                .compile("redactor", &guests.redactor, None)
                .expect("redactor"),
        }
    }
}

/// The reference deployment.
#[derive(Debug, Clone)]
pub struct Reference {
    /// Every plugin, shared ones first, then the three per-agent ones.
    pub plugins: Vec<PluginDef>,
}

impl Default for Reference {
    fn default() -> Self {
        Self::new()
    }
}

impl Reference {
    /// The content (deterministic).
    pub fn new() -> Self {
        let mut words = Words::new(7);
        let mut plugins = Vec::new();
        // Ten guidance sections, 200–800 bytes, each referencing variables; three dynamic.
        let layout: [(&str, Place, &[bool]); 4] = [
            ("guide-files", Place::Global, &[false, true, false]),
            ("guide-shell", Place::Global, &[false, false, false]),
            ("guide-web", Place::Parent, &[true, false]),
            ("guide-agent", Place::Agent, &[false, true]),
        ];
        let refs = ["model", "os", "shell", "project", "cwd", "budget"];
        let mut index = 0usize;
        for (name, place, dynamic) in layout {
            let mut def = PluginDef::new(name, place);
            for &dynamic in dynamic {
                let size = 200 + index * 600 / 9;
                let mut text = format!(
                    "Guidance {index} for {{{{project}}}} ({}): ",
                    refs[index % refs.len()]
                );
                // Agent-only variables are referenced only from agent-scope sections.
                let var = match place {
                    Place::Agent => refs[4 + index % 2],
                    _ => refs[index % 4],
                };
                text.push_str(&format!("use {{{{{var}}}}} when it applies. "));
                if dynamic {
                    text.push_str("Serving ${scope} on ${fact:model}. ");
                }
                if index == 4 {
                    text.push_str(&format!("Never print the password {REDACTED_WORD}. "));
                }
                words.fill(&mut text, size);
                def.sections.push(Text {
                    name: format!("{name}:{index}"),
                    order: 100.0 + 10.0 * index as f64,
                    text,
                    dynamic,
                });
                index += 1;
            }
            plugins.push(def);
        }
        // Runtime contexts: two fixed (global), one dynamic (per agent).
        let mut ctx = PluginDef::new("context-host", Place::Global);
        for (i, name) in ["context:os", "context:limits"].into_iter().enumerate() {
            let mut text = format!("Runtime {name}: {{{{os}}}} with {{{{shell}}}}. ");
            words.fill(&mut text, 160 + 80 * i);
            ctx.contexts.push(Text {
                name: name.into(),
                order: 10.0 * (i + 1) as f64,
                text,
                dynamic: false,
            });
        }
        plugins.push(ctx);
        let mut vars = PluginDef::new("vars-host", Place::Global);
        vars.variables = vec![
            var("model", "${fact:model}", true),
            var("os", "linux", false),
            var("shell", "bash", false),
            var("project", "prompt-host", false),
        ];
        plugins.push(vars);
        // Tools: 18 fixed (global), 12 dynamic (parent scope).
        let mut schemas = tool_schemas(&mut words, 30);
        let dynamic_tools = schemas.split_off(18);
        let mut tools = PluginDef::new("tools-builtin", Place::Global);
        tools.tools = Some(Tools {
            schemas,
            dynamic: false,
        });
        plugins.push(tools);
        let mut tools = PluginDef::new("tools-mcp", Place::Parent);
        tools.tools = Some(Tools {
            schemas: dynamic_tools,
            dynamic: true,
        });
        plugins.push(tools);
        let mut redactor = PluginDef::new("redactor", Place::Global);
        redactor.listener = Some(Listener::Redactor);
        plugins.push(redactor);
        let mut pass = PluginDef::new("pass-through", Place::Parent);
        pass.listener = Some(Listener::PassThrough);
        plugins.push(pass);
        // Per agent: the dynamic context and two variables (one dynamic).
        let mut ctx = PluginDef::new("context-agent", Place::Agent);
        let mut text = "Working in ${scope} at {{cwd}}, budget {{budget}}. ".to_string();
        words.fill(&mut text, 200);
        ctx.contexts.push(Text {
            name: "context:workspace".into(),
            order: 30.0,
            text,
            dynamic: true,
        });
        plugins.push(ctx);
        let mut vars = PluginDef::new("vars-agent", Place::Agent);
        vars.variables = vec![
            var("cwd", "${fact:cwd}", true),
            var("budget", "200k tokens", false),
        ];
        plugins.push(vars);
        // Agent plugins last.
        plugins.sort_by_key(|p| p.place == Place::Agent);
        Self { plugins }
    }

    /// The same content with every section, runtime context, variable and tool provider
    /// dynamic: the host asks a plugin for each of them on every step. In a steady state
    /// every answer equals the previous one, which a 0.2.0 plugin says with "unchanged".
    pub fn all_dynamic() -> Self {
        let mut reference = Self::new();
        for plugin in &mut reference.plugins {
            for text in plugin.sections.iter_mut().chain(&mut plugin.contexts) {
                text.dynamic = true;
            }
            for var in &mut plugin.variables {
                var.dynamic = true;
            }
            if let Some(tools) = &mut plugin.tools {
                tools.dynamic = true;
            }
        }
        reference
    }

    /// The same deployment with every `declare` plugin asking the host to keep its dynamic
    /// answers until the context changes (contract 0.2.0; a 0.1.0 plugin cannot ask).
    pub fn keeping(mut self) -> Self {
        for plugin in &mut self.plugins {
            plugin.keep = true;
        }
        self
    }

    /// The deployment as a host.toml, for agent `agent:0`: the `declare` and `redactor`
    /// component files at the given paths, compiled code cached in `cache`. Plugins get the
    /// benchmarks' 1 s call deadline (see [`bench_options`]). The global `model` variable is
    /// the host's own (from the `model` fact), as in any host.toml deployment.
    pub fn host_toml(
        &self,
        declare: &std::path::Path,
        redactor: &std::path::Path,
        cache: &std::path::Path,
    ) -> String {
        let scope = agent(0);
        let plugins: Vec<Value> = self
            .plugins
            .iter()
            .map(|p| {
                let wasm = match p.listener {
                    Some(Listener::Redactor) => redactor,
                    _ => declare,
                };
                // A host registers the global variables `model`, `cwd` and `provider` from
                // the caller's facts itself: the deployment's own global `model` goes.
                let mut def = p.clone();
                if def.place == Place::Global {
                    def.variables
                        .retain(|v| !["model", "cwd", "provider"].contains(&v.name.as_str()));
                }
                let mut entry = json!({
                    "name": p.name,
                    "wasm": wasm,
                    "config": def.wasm_config(),
                    "limits": { "call_timeout_ms": 1_000 },
                });
                if let Some(scope) = p.scope(&scope) {
                    entry["scope"] = scope.into();
                }
                entry
            })
            .collect();
        let doc = json!({
            "prompt": { "persona": Self::prompt_config().persona },
            "host": { "cache_dir": cache },
            "scope": [{ "name": PARENT }, { "name": scope, "parent": PARENT }],
            "plugin": plugins,
        });
        toml::to_string(&doc).expect("the reference deployment as TOML")
    }

    /// Write the deployment into `dir`: `guests`' components as `declare.wasm` and
    /// `redactor.wasm`, and `host.toml` naming them, its compiled code cached in `cache`.
    /// The path of `host.toml`. (What the cold-start and step benches and the profile
    /// example load, so that they time the same deployment.)
    pub fn write_deployment(
        &self,
        dir: &std::path::Path,
        guests: &Guests,
        cache: &std::path::Path,
    ) -> std::path::PathBuf {
        let declare = dir.join("declare.wasm");
        let redactor = dir.join("redactor.wasm");
        std::fs::write(&declare, &guests.declare).expect("declare.wasm");
        std::fs::write(&redactor, &guests.redactor).expect("redactor.wasm");
        let path = dir.join("host.toml");
        std::fs::write(&path, self.host_toml(&declare, &redactor, cache)).expect("host.toml");
        path
    }

    /// The prompt config: identity + a persona referencing a variable.
    pub fn prompt_config() -> PromptConfig {
        PromptConfig::default()
            .persona("You are a coding agent running on {{model}} for {{project}}.")
    }

    /// The caller facts of a step.
    pub fn context() -> AssembleContext {
        AssembleContext::with_facts([("model", "deepseek-v4"), ("cwd", "/work/project")])
    }

    /// A registry with the parent scope declared and agents `0..agents` bound to it.
    pub fn registry(agents: usize) -> Arc<Registry> {
        let registry = Registry::new(Self::prompt_config()).expect("registry");
        for i in 0..agents {
            registry
                .bind_scope_parent(&agent(i), PARENT)
                .expect("bind agent");
        }
        registry
    }

    /// The plugins shared by every agent (global and parent scope): nine.
    pub fn shared(&self) -> impl Iterator<Item = &PluginDef> {
        self.plugins.iter().filter(|p| p.place != Place::Agent)
    }

    /// The plugins loaded into each agent scope: three.
    pub fn per_agent(&self) -> impl Iterator<Item = &PluginDef> {
        self.plugins.iter().filter(|p| p.place == Place::Agent)
    }

    /// Load the shared plugins and those of agents `0..agents` as Wasm.
    pub fn deploy_wasm(
        &self,
        runtime: &WasmRuntime,
        registry: &Arc<Registry>,
        code: &Code,
        agents: usize,
    ) -> Vec<LoadedPlugin> {
        let mut loaded: Vec<LoadedPlugin> = self
            .shared()
            .map(|p| p.load_wasm(runtime, registry, code, p.scope("")))
            .collect();
        for i in 0..agents {
            let scope = agent(i);
            loaded.extend(
                self.per_agent()
                    .map(|p| p.load_wasm(runtime, registry, code, Some(&scope))),
            );
        }
        loaded
    }

    /// Register the shared content and that of agents `0..agents` natively.
    pub fn deploy_native(&self, registry: &Arc<Registry>, agents: usize) -> Vec<Fiber> {
        let mut fibers: Vec<Fiber> = self
            .shared()
            .map(|p| p.load_native(registry, p.scope("")))
            .collect();
        for i in 0..agents {
            let scope = agent(i);
            fibers.extend(
                self.per_agent()
                    .map(|p| p.load_native(registry, Some(&scope))),
            );
        }
        fibers
    }
}

fn var(name: &str, value: &str, dynamic: bool) -> Var {
    Var {
        name: name.into(),
        value: value.into(),
        dynamic,
    }
}

/// A deployment of `n` plugins along a chain of ten scopes (`chain:0` ← … ← `chain:9`, the
/// agent scope `chain:9` nearest), each plugin declaring one fixed section (~300 bytes), one
/// dynamic section and one fixed variable its fixed section references. For the growth
/// benchmark: the work per step is proportional to `n`.
pub fn chain_plugins(n: usize) -> Vec<PluginDef> {
    let mut words = Words::new(11);
    (0..n)
        .map(|i| {
            // `place` is not used for chain plugins: load them into `chain_scope(i, n)`.
            let mut def = PluginDef::new(&format!("p{i}"), Place::Global);
            let mut text = format!("Plugin {i} rule: respect {{{{v{i}}}}}. ");
            words.fill(&mut text, 300);
            def.sections.push(Text {
                name: format!("p{i}:fixed"),
                order: 100.0 + (i % 100) as f64,
                text,
                dynamic: false,
            });
            def.sections.push(Text {
                name: format!("p{i}:dynamic"),
                order: 200.0 + (i % 100) as f64,
                text: format!("Plugin {i} serves ${{scope}} on ${{fact:model}}."),
                dynamic: true,
            });
            def.variables
                .push(var(&format!("v{i}"), &format!("value {i}"), false));
            def
        })
        .collect()
}

/// Depth of the chain of [`chain_plugins`].
pub const CHAIN_DEPTH: usize = 10;

/// The scope of chain plugin `i` of `n`.
pub fn chain_scope(i: usize, n: usize) -> String {
    format!("chain:{}", i * CHAIN_DEPTH / n.max(1))
}

/// The nearest scope of the chain.
pub fn chain_agent() -> String {
    format!("chain:{}", CHAIN_DEPTH - 1)
}

/// A registry with the chain scopes bound.
pub fn chain_registry() -> Arc<Registry> {
    let registry = Registry::new(Reference::prompt_config()).expect("registry");
    for i in 1..CHAIN_DEPTH {
        registry
            .bind_scope_parent(&format!("chain:{i}"), &format!("chain:{}", i - 1))
            .expect("bind chain");
    }
    // The persona references `model` and `project`.
    registry
}

/// Fixed `model`/`project` variables the persona needs, for chain deployments.
pub fn chain_base() -> PluginDef {
    let mut base = PluginDef::new("base", Place::Global);
    base.variables = vec![
        var("model", "${fact:model}", true),
        var("project", "prompt-host", false),
    ];
    base
}

/// Deterministic filler prose.
struct Words {
    state: u64,
}

const WORDS: &[&str] = &[
    "prefer",
    "small",
    "edits",
    "read",
    "the",
    "file",
    "before",
    "changing",
    "it",
    "run",
    "tests",
    "after",
    "each",
    "step",
    "keep",
    "output",
    "brief",
    "quote",
    "paths",
    "exactly",
    "never",
    "guess",
    "ask",
    "when",
    "unsure",
    "search",
    "first",
    "then",
    "open",
    "only",
    "relevant",
    "lines",
    "summarise",
    "results",
    "avoid",
    "long",
    "commands",
    "use",
    "tool",
    "schemas",
    "as",
    "given",
    "report",
    "errors",
    "verbatim",
];

impl Words {
    fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    fn next(&mut self) -> &'static str {
        // xorshift64
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        WORDS[(self.state % WORDS.len() as u64) as usize]
    }

    /// Append words until `text` is `len` bytes long (cut to exactly `len`, ending in `.`).
    fn fill(&mut self, text: &mut String, len: usize) {
        while text.len() < len {
            text.push_str(self.next());
            text.push(' ');
        }
        text.truncate(len.max(1) - 1);
        text.push('.');
    }
}

const TOOL_NAMES: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "bash",
    "grep",
    "glob",
    "list_dir",
    "web_fetch",
    "web_search",
    "todo_write",
    "todo_read",
    "git_status",
    "git_diff",
    "git_log",
    "git_commit",
    "run_tests",
    "format_code",
    "lint",
    "open_pr",
    "review_pr",
    "search_issues",
    "create_issue",
    "comment_issue",
    "query_db",
    "describe_table",
    "http_request",
    "notebook_edit",
    "ask_user",
    "spawn_agent",
    "memory_write",
];

/// `n` tool schemas with JSON-schema parameters of 0.3–2 KB.
fn tool_schemas(words: &mut Words, n: usize) -> Vec<ToolSchema> {
    (0..n)
        .map(|i| {
            let target = 300 + i * 1700 / n.saturating_sub(1).max(1);
            let mut properties = serde_json::Map::new();
            let mut required = Vec::new();
            let mut k = 0;
            loop {
                let name = format!("{}_{k}", words.next());
                let mut description = String::new();
                words.fill(&mut description, 40 + (k * 13) % 60);
                let prop = match k % 4 {
                    0 => json!({ "type": "string", "description": description }),
                    1 => json!({ "type": "integer", "description": description, "minimum": 0 }),
                    2 => json!({
                        "type": "string",
                        "description": description,
                        "enum": [words.next(), words.next(), words.next()],
                    }),
                    _ => json!({
                        "type": "array",
                        "description": description,
                        "items": { "type": "string" },
                    }),
                };
                if k % 2 == 0 {
                    required.push(Value::String(name.clone()));
                }
                properties.insert(name, prop);
                k += 1;
                let params = json!({
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": false,
                });
                if params.to_string().len() >= target {
                    let mut description = String::new();
                    words.fill(&mut description, 80 + i * 7);
                    return ToolSchema {
                        name: TOOL_NAMES[i % TOOL_NAMES.len()].to_string(),
                        description,
                        parameters: params.into(),
                    };
                }
            }
        })
        .collect()
}
