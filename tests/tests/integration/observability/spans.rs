//! The `tracing` spans (docs/observability.md) of one step and of an MCP server's exchanges,
//! recorded by a subscriber of the test's own on the test thread: names, parents, the
//! GenAI and MCP semantic-convention attributes, prompt-host's own, one span per plugin
//! call, and no prompt text in any attribute. The deployment is `timings`' (a dynamic
//! section and context, a fixed section, a pass-through listener).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use prompt_host::mcp::{McpConnection, McpEvent, McpServerSpec, ReconnectPolicy};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use crate::integration::mcp::client::{fixtures, python, python_mcp_available};
use crate::integration::support::cli::Deployment;

/// One span as the recorder saw it.
#[derive(Debug, Clone)]
struct Recorded {
    id: u64,
    name: &'static str,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

/// Records every span: its name, its parent (explicit, or the thread's current span) and
/// its fields, with values recorded later merged in.
#[derive(Default)]
struct Recorder {
    next: AtomicU64,
    spans: Mutex<Vec<Recorded>>,
    /// Each thread's entered spans, innermost last.
    stacks: Mutex<HashMap<ThreadId, Vec<u64>>>,
    metadata: Mutex<HashMap<u64, &'static Metadata<'static>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
}

impl Recorder {
    fn current(&self) -> Option<u64> {
        let stacks = self.stacks.lock().unwrap();
        stacks.get(&std::thread::current().id())?.last().copied()
    }

    fn spans(&self) -> Vec<Recorded> {
        self.spans.lock().unwrap().clone()
    }
}

/// The recorder as a subscriber, shared with the test that reads it.
struct Shared(Arc<Recorder>);

impl Subscriber for Shared {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.0.next.fetch_add(1, Ordering::SeqCst) + 1;
        let parent = match attrs.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if attrs.is_contextual() => self.0.current(),
            None => None,
        };
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0.metadata.lock().unwrap().insert(id, attrs.metadata());
        self.0.spans.lock().unwrap().push(Recorded {
            id,
            name: attrs.metadata().name(),
            parent,
            fields,
        });
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.0.spans.lock().unwrap();
        if let Some(s) = spans.iter_mut().find(|s| s.id == span.into_u64()) {
            values.record(&mut Fields(&mut s.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, span: &Id) {
        let mut stacks = self.0.stacks.lock().unwrap();
        let stack = stacks.entry(std::thread::current().id()).or_default();
        stack.push(span.into_u64());
    }
    fn exit(&self, span: &Id) {
        let mut stacks = self.0.stacks.lock().unwrap();
        let stack = stacks.entry(std::thread::current().id()).or_default();
        if let Some(at) = stack.iter().rposition(|s| *s == span.into_u64()) {
            stack.remove(at);
        }
    }
    fn current_span(&self) -> tracing_core::span::Current {
        match self.0.current() {
            Some(id) => {
                let metadata = self.0.metadata.lock().unwrap()[&id];
                tracing_core::span::Current::new(Id::from_u64(id), metadata)
            }
            None => tracing_core::span::Current::none(),
        }
    }
}

/// prompt-host's spans only (rmcp and wasmtime have spans of their own).
fn ours(spans: &[Recorded]) -> Vec<Recorded> {
    spans
        .iter()
        .filter(|s| s.name.starts_with("prompt_host."))
        .cloned()
        .collect()
}

fn children<'a>(spans: &'a [Recorded], of: &Recorded) -> Vec<&'a Recorded> {
    spans.iter().filter(|s| s.parent == Some(of.id)).collect()
}

/// Whether `span` is below the span `ancestor`.
fn descends(spans: &[Recorded], span: &Recorded, ancestor: u64) -> bool {
    let mut parent = span.parent;
    while let Some(id) = parent {
        if id == ancestor {
            return true;
        }
        parent = spans.iter().find(|s| s.id == id).and_then(|s| s.parent);
    }
    false
}

fn field<'a>(span: &'a Recorded, name: &str) -> &'a str {
    span.fields
        .get(name)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("{} has no {name}: {span:?}", span.name))
}

/// The deployment loaded from its host.toml and one step for `agent:1`, in a multi-thread
/// runtime (the step's future runs on this thread; its assembly on a blocking one).
fn step_once(
    d: &Deployment,
    config: &prompt_host::config::HostConfig,
) -> (prompt_host::Rendered, prompt_host::projection::StepOutcome) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut options = prompt_host::wasm::RuntimeConfig::default();
        options.cache_dir = Some(d.path("cache"));
        let host = prompt_host::Host::from_config(config, options).unwrap();
        let (mut session, _) = prompt_host::session::Session::open(d.path("s.jsonl")).unwrap();
        let facts = prompt_host::Facts::new().with("model", "m1");
        let options = prompt_host::StepOptions::default().user_texts(vec!["hi".into()]);
        host.step(&mut session, Some("agent:1"), facts, &options)
            .await
            .unwrap()
    })
}

#[test]
fn one_step_is_a_span_tree_with_one_span_per_plugin_call() {
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let config = prompt_host::config::HostConfig::load(&d.config()).unwrap();
    let recorder = Arc::new(Recorder::default());
    let _default = tracing::subscriber::set_default(Shared(Arc::clone(&recorder)));
    let (rendered, outcome) = step_once(&d, &config);
    let spans = ours(&recorder.spans());

    // The one component file, compiled once (for its first plugin), saying where its code
    // came from; then each plugin's load, a root of its own.
    let compiles: Vec<&Recorded> = spans
        .iter()
        .filter(|s| s.name == "prompt_host.compile")
        .collect();
    assert_eq!(compiles.len(), 1, "{spans:#?}");
    assert_eq!(field(compiles[0], "prompt_host.plugin"), "dyn");
    let cache = field(compiles[0], "prompt_host.compile_cache");
    assert!(
        ["memory", "disk", "compiled"].contains(&cache),
        "{:?}",
        compiles[0]
    );
    let loads: Vec<&Recorded> = spans
        .iter()
        .filter(|s| s.name == "prompt_host.load")
        .collect();
    let loaded: BTreeSet<(&str, &str)> = loads
        .iter()
        .map(|s| {
            (
                field(s, "prompt_host.plugin"),
                field(s, "prompt_host.scope"),
            )
        })
        .collect();
    assert_eq!(
        loaded,
        BTreeSet::from([("dyn", "agent:1"), ("pass", "global")])
    );
    assert!(loads.iter().all(|l| l.parent.is_none()), "{loads:#?}");

    // step → render → assemble → one plugin_call a call; step → project.
    let steps: Vec<&Recorded> = spans
        .iter()
        .filter(|s| s.name == "prompt_host.step")
        .collect();
    assert_eq!(steps.len(), 1, "{spans:#?}");
    let step = steps[0];
    assert_eq!(step.parent, None);
    let attributes = [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "openai"),
        ("gen_ai.request.model", "m1"),
        ("prompt_host.route", "chat-completions"),
        ("prompt_host.scope", "agent:1"),
    ];
    for (name, value) in attributes {
        assert_eq!(field(step, name), value, "{step:?}");
    }
    assert_eq!(field(step, "prompt_host.step"), outcome.step.to_string());
    assert_eq!(
        field(step, "prompt_host.commits"),
        outcome.commits.len().to_string()
    );
    assert_eq!(
        field(step, "prompt_host.prompt.bytes"),
        rendered.prompt.len().to_string()
    );
    assert_eq!(
        field(step, "prompt_host.context.bytes"),
        rendered.context.len().to_string()
    );
    assert!(
        !step.fields.contains_key("prompt_host.retry_of"),
        "{step:?}"
    );

    let names: Vec<&str> = children(&spans, step).iter().map(|s| s.name).collect();
    assert_eq!(names, ["prompt_host.render", "prompt_host.project"]);
    let render = children(&spans, step)[0];
    assert_eq!(
        field(render, "prompt_host.sections"),
        rendered.assembly.sections.len().to_string()
    );
    assert_eq!(field(render, "prompt_host.tools"), "0");
    let project = children(&spans, step)[1];
    assert_eq!(field(project, "prompt_host.commits"), "1");
    assert!(children(&spans, project).is_empty());
    let assemble = children(&spans, render);
    assert_eq!(assemble.len(), 1);
    assert_eq!(assemble[0].name, "prompt_host.assemble");
    assert_eq!(field(assemble[0], "prompt_host.scope"), "agent:1");

    // Every plugin call, under the assembly (a listener's `next` runs the rest inside it).
    let calls: Vec<&Recorded> = spans
        .iter()
        .filter(|s| s.name == "prompt_host.plugin_call")
        .collect();
    let seen: BTreeSet<(String, String, String, String)> = calls
        .iter()
        .map(|s| {
            let get = |name| field(s, name).to_string();
            let entry = s
                .fields
                .get("prompt_host.entry.name")
                .cloned()
                .unwrap_or_default();
            (
                get("prompt_host.entry.kind"),
                entry,
                get("prompt_host.plugin"),
                get("prompt_host.layer"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        crate::integration::observability::timings::expected_calls()
    );
    assert_eq!(calls.len(), 6, "one span a call: {calls:#?}");
    let assembly = assemble[0].id;
    assert!(
        calls.iter().all(|c| descends(&spans, c, assembly)),
        "{spans:#?}"
    );

    // No attribute carries prompt text.
    for span in &spans {
        for value in span.fields.values() {
            assert!(
                !value.contains("Live text.") && !value.contains("Fixed."),
                "{span:?}"
            );
        }
    }
}

#[test]
fn without_a_subscriber_no_span_is_recorded_and_the_step_is_the_same() {
    // A recorder set on another thread sees nothing of this one's step.
    let recorder = Arc::new(Recorder::default());
    let elsewhere = Arc::clone(&recorder);
    let (ready, wait) = std::sync::mpsc::channel();
    let (done, finish) = std::sync::mpsc::channel::<()>();
    let other = std::thread::spawn(move || {
        let _default = tracing::subscriber::set_default(Shared(elsewhere));
        ready.send(()).unwrap();
        finish.recv().ok();
    });
    wait.recv().unwrap();
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let config = prompt_host::config::HostConfig::load(&d.config()).unwrap();
    step_once(&d, &config);
    done.send(()).unwrap();
    other.join().unwrap();
    assert!(
        ours(&recorder.spans()).is_empty(),
        "{:#?}",
        recorder.spans()
    );
}

#[test]
fn an_mcp_server_s_exchanges_are_client_spans_named_by_their_method() {
    if !python_mcp_available() {
        return;
    }
    let _serial = crate::integration::mcp::client::serial_blocking();
    let recorder = Arc::new(Recorder::default());
    let _default = tracing::subscriber::set_default(Shared(Arc::clone(&recorder)));
    // One thread: the connection's tasks run where the recorder is the default.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut spec = McpServerSpec::new("fx", python());
        spec.args = vec![
            fixtures().join("server.py").display().to_string(),
            "--instructions".into(),
            "Use the echo tool.".into(),
        ];
        spec.timeout = Duration::from_secs(20);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let on_update = Arc::new(move |e: McpEvent| {
            tx.send(e).ok();
        });
        let policy = ReconnectPolicy::new(Duration::from_millis(50), Duration::from_millis(500));
        let connection = McpConnection::spawn_with_policy(spec, policy, on_update);
        let first = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
        assert!(
            matches!(first, Ok(Some(McpEvent::Generation(_)))),
            "{first:?}"
        );
        drop(connection);
    });
    let spans = ours(&recorder.spans());
    let exchanges: Vec<&Recorded> = spans
        .iter()
        .filter(|s| s.name == "prompt_host.mcp")
        .collect();
    let methods: Vec<&str> = exchanges
        .iter()
        .map(|s| field(s, "mcp.method.name"))
        .collect();
    // The lifecycle's exchange (the 2026-07-28 `server/discover`, which this server speaks),
    // the discover that reads its time to live, then the list.
    assert_eq!(
        methods,
        ["server/discover", "server/discover", "tools/list"],
        "{spans:#?}"
    );
    for span in &exchanges {
        assert_eq!(field(span, "otel.name"), field(span, "mcp.method.name"));
        assert_eq!(field(span, "otel.kind"), "client");
        assert_eq!(field(span, "network.transport"), "pipe");
        assert_eq!(field(span, "prompt_host.mcp.server"), "fx");
    }
    // The version the server answered with.
    assert!(!field(exchanges[0], "mcp.protocol.version").is_empty());
}

/// The rendered prompt and context are attributes of `prompt_host.render` only once the
/// embedder asks (`Host::record_prompt_in_spans`), on a current-thread runtime here (the
/// multi-thread one is the command line's, tested in `observability::otlp_export`).
#[test]
fn prompt_text_is_a_render_span_attribute_only_when_the_embedder_asks() {
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let config = prompt_host::config::HostConfig::load(&d.config()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut options = prompt_host::wasm::RuntimeConfig::default();
    options.cache_dir = Some(d.path("cache"));
    let host = runtime
        .block_on(async { prompt_host::Host::from_config(&config, options) })
        .unwrap();
    let render = |host: &prompt_host::Host| {
        let recorder = Arc::new(Recorder::default());
        let _default = tracing::subscriber::set_default(Shared(Arc::clone(&recorder)));
        let facts = prompt_host::Facts::new().with("model", "m1");
        let rendered = runtime
            .block_on(host.render(Some("agent:1"), facts))
            .unwrap();
        let spans = ours(&recorder.spans());
        let span = spans
            .iter()
            .find(|s| s.name == "prompt_host.render")
            .cloned()
            .expect("a render span");
        (rendered, span)
    };

    let (_, quiet) = render(&host);
    assert!(
        !quiet.fields.contains_key("gen_ai.system_instructions"),
        "{quiet:?}"
    );
    assert!(
        !quiet.fields.contains_key("prompt_host.context.text"),
        "{quiet:?}"
    );

    host.record_prompt_in_spans(true);
    let (rendered, told) = render(&host);
    let parts: serde_json::Value =
        serde_json::from_str(field(&told, "gen_ai.system_instructions")).unwrap();
    assert_eq!(
        parts,
        serde_json::json!([{"type": "text", "content": rendered.prompt}])
    );
    assert_eq!(field(&told, "prompt_host.context.text"), rendered.context);
    assert!(rendered.prompt.contains("Live text."));

    host.record_prompt_in_spans(false);
    let (_, quiet_again) = render(&host);
    assert!(!quiet_again
        .fields
        .contains_key("gen_ai.system_instructions"));
}

/// With `[prompt] tokenizer`, the render span carries the prompt's and the context's token
/// counts (equal to tiktoken's) and the tokenizer's name; without one, no token attribute.
#[test]
fn a_render_span_carries_token_counts_when_the_host_has_a_tokenizer() {
    let counted = format!(
        "[prompt]\ntokenizer = \"cl100k_base\"\n{}",
        crate::integration::observability::timings::DEPLOYMENT
    );
    for (deployment, with_tokens) in [
        (counted.as_str(), true),
        (
            crate::integration::observability::timings::DEPLOYMENT,
            false,
        ),
    ] {
        let d = Deployment::new(deployment);
        let config = prompt_host::config::HostConfig::load(&d.config()).unwrap();
        let recorder = Arc::new(Recorder::default());
        let _default = tracing::subscriber::set_default(Shared(Arc::clone(&recorder)));
        let (rendered, _) = step_once(&d, &config);
        let spans = ours(&recorder.spans());
        let render = spans
            .iter()
            .find(|s| s.name == "prompt_host.render")
            .expect("a render span");
        if !with_tokens {
            assert!(
                !render.fields.contains_key("prompt_host.prompt.tokens"),
                "{render:?}"
            );
            assert!(
                !render.fields.contains_key("prompt_host.tokenizer"),
                "{render:?}"
            );
            continue;
        }
        let theirs = crate::integration::tokens::reference::reference_counts(
            crate::integration::tokens::reference::encoding_request(
                "cl100k_base",
                &[rendered.prompt.clone(), rendered.context.clone()],
            ),
        );
        assert_eq!(field(render, "prompt_host.tokenizer"), "cl100k_base");
        assert_eq!(
            field(render, "prompt_host.prompt.tokens"),
            theirs[0].to_string()
        );
        assert_eq!(
            field(render, "prompt_host.context.tokens"),
            theirs[1].to_string()
        );
    }
}
