//! OTLP export of the spans (docs/observability.md) from the command line and from `serve`,
//! received on loopback by a real decoder: `tests/fixtures/otlp/receiver.py` parses each
//! request with the OpenTelemetry project's protobuf classes (`opentelemetry-proto`). One
//! step is one tree (names, parents, attributes, one span per plugin call); prompt text is
//! sent only when asked for; a collector in trouble is a warning, never a failed command;
//! the exporter's credentials reach the collector and nothing else.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::mcp::client::python;
use crate::integration::support::cli::{bin, Deployment, QUIET_PROGRESS};

/// How long the spans of a command that ended may take to arrive.
const ARRIVAL: Duration = Duration::from_secs(30);

fn receiver_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/otlp/receiver.py")
}

/// The receiver's decoder is installed, or the test fails saying what to install (a test that
/// cannot run must not pass; `.ci/run` installs it).
fn decoder_available() {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    let probe = PROBE.get_or_init(|| {
        let out = Command::new(python())
            .args([
                "-c",
                "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            ])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python()))?;
        if out.status.success() {
            return Ok(());
        }
        Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("no error output")
            .to_owned())
    });
    if let Err(why) = probe {
        panic!(
            "the OTLP export tests need the Python `opentelemetry-proto` package ({why}); \
             run `python3 -m pip install -r tests/fixtures/otlp/requirements.txt`"
        );
    }
}

/// A running receiver: its port and the spans it decoded, one JSON value each.
struct Collector {
    child: Child,
    _stdin: ChildStdin,
    port: u16,
    spans: Receiver<Value>,
}

impl Collector {
    /// Start the receiver; `args` are its flags (`--fail N`).
    fn start(args: &[&str]) -> Self {
        decoder_available();
        let mut child = Command::new(python())
            .arg(receiver_script())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the OTLP receiver");
        let stdin = child.stdin.take().expect("stdin");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        out.read_line(&mut first)
            .expect("the receiver's first line");
        let port = first
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the receiver said {first:?}"));
        let (tx, spans) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let span = serde_json::from_str(&line).expect("a span as JSON");
                if tx.send(span).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            _stdin: stdin,
            port,
            spans,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received until one named `last` has arrived (spans of one batch arrive
    /// together; the root of a tree ends, and is sent, last).
    fn until(&self, last: &str) -> Vec<Value> {
        let deadline = Instant::now() + ARRIVAL;
        let mut spans = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.spans.recv_timeout(left) {
                Ok(span) => {
                    let done = span["name"] == last;
                    spans.push(span);
                    if done {
                        // What came in the same request is already queued.
                        while let Ok(span) = self.spans.recv_timeout(Duration::from_millis(200)) {
                            spans.push(span);
                        }
                        return spans;
                    }
                }
                Err(_) => panic!("no {last} span within {ARRIVAL:?}; received: {spans:#?}"),
            }
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `prompt-host <args>` in the deployment with `env` added; (exit code, stdout, stderr).
fn run(d: &Deployment, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(bin())
        .args(args)
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run prompt-host");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn one<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one {name}: {spans:#?}");
    found[0]
}

fn children<'a>(spans: &'a [Value], of: &Value) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["parent_span_id"] == of["span_id"])
        .collect()
}

fn descends(spans: &[Value], span: &Value, ancestor: &Value) -> bool {
    let mut parent = span["parent_span_id"].clone();
    while parent != "" {
        if parent == ancestor["span_id"] {
            return true;
        }
        parent = match spans.iter().find(|s| s["span_id"] == parent) {
            Some(s) => s["parent_span_id"].clone(),
            None => return false,
        };
    }
    false
}

/// The step tree of `timings::DEPLOYMENT` for `agent:1`, as a collector received it: under
/// the root span of the command named `command` (the command line's), or the root itself
/// (`serve`'s, where each request is a trace of its own).
fn check_step_tree(spans: &[Value], command: Option<&str>) {
    let step = one(spans, "prompt_host.step");
    match command {
        None => assert_eq!(step["parent_span_id"], "", "the step is a root: {step}"),
        Some(name) => {
            let root = one(spans, name);
            assert_eq!(step["parent_span_id"], root["span_id"], "{spans:#?}");
            check_one_trace(spans, root);
        }
    }
    let attributes = &step["attributes"];
    for (key, value) in [
        ("gen_ai.operation.name", "chat"),
        ("gen_ai.provider.name", "openai"),
        ("gen_ai.request.model", "m1"),
        ("prompt_host.route", "chat-completions"),
        ("prompt_host.scope", "agent:1"),
    ] {
        assert_eq!(attributes[key], value, "{key}: {step}");
    }
    // Counts are integers, not text; the first step of a log is step 0.
    assert_eq!(attributes["prompt_host.step"], 0, "{step}");
    assert_eq!(attributes["prompt_host.commits"], 1, "{step}");
    assert!(attributes["prompt_host.prompt.bytes"].as_i64() > Some(0));
    // The deployment has no tokenizer: no token counts.
    assert!(attributes.get("prompt_host.prompt.tokens").is_none());
    assert_eq!(step["resource"]["service.name"], "prompt-host", "{step}");
    assert_eq!(step["content_type"], "application/x-protobuf");

    let below: Vec<&str> = children(spans, step)
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        below,
        ["prompt_host.render", "prompt_host.project"],
        "{spans:#?}"
    );
    let render = one(spans, "prompt_host.render");
    let assemble = one(spans, "prompt_host.assemble");
    assert_eq!(assemble["parent_span_id"], render["span_id"]);
    assert_eq!(assemble["attributes"]["prompt_host.scope"], "agent:1");

    // One span per plugin call, under the assembly.
    let calls = named(spans, "prompt_host.plugin_call");
    assert_eq!(calls.len(), 6, "one span a call: {calls:#?}");
    let seen: BTreeSet<(String, String, String, String)> = calls
        .iter()
        .map(|c| {
            let a = |k: &str| c["attributes"][k].as_str().unwrap_or("").to_string();
            (
                a("prompt_host.entry.kind"),
                a("prompt_host.entry.name"),
                a("prompt_host.plugin"),
                a("prompt_host.layer"),
            )
        })
        .collect();
    assert_eq!(
        seen,
        crate::integration::observability::timings::expected_calls()
    );
    assert!(calls.iter().all(|c| descends(spans, c, assemble)));
    let trace = &step["trace_id"];
    assert!(calls.iter().all(|c| &c["trace_id"] == trace), "one trace");
}

/// `root` is the one root of what was received, and every span is in its trace.
fn check_one_trace(spans: &[Value], root: &Value) {
    let roots: Vec<&Value> = spans.iter().filter(|s| s["parent_span_id"] == "").collect();
    assert_eq!(roots, [root], "one root: {spans:#?}");
    assert!(
        spans
            .iter()
            .all(|s| s["trace_id"] == root["trace_id"] && (s == root || descends(spans, s, root))),
        "one trace: {spans:#?}"
    );
}

/// Whether any attribute of any span holds `text`.
fn any_attribute_holds(spans: &[Value], text: &str) -> bool {
    spans
        .iter()
        .any(|s| s["attributes"].to_string().contains(text))
}

#[test]
fn a_command_line_step_reaches_the_collector_as_one_tree_with_one_span_per_plugin_call() {
    let collector = Collector::start(&[]);
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let config = d.config();
    let session = d.path("s.jsonl");
    let endpoint = collector.endpoint();
    let secret = "Bearer otlp-secret-7f3a";
    let headers = format!("authorization={secret}");
    let (code, stdout, stderr) = run(
        &d,
        &[
            "step",
            "--config",
            config.to_str().unwrap(),
            "--scope",
            "agent:1",
            "--session",
            session.to_str().unwrap(),
            "--fact",
            "model=m1",
            "--user",
            "hi",
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "nothing said on stderr: {stderr}");
    let spans = collector.until("prompt-host step");
    check_step_tree(&spans, Some("prompt-host step"));
    let root = one(&spans, "prompt-host step");
    assert_eq!(root["attributes"]["prompt_host.command"], "step", "{root}");
    assert_eq!(root["status"], 0, "a command that succeeded: {root}");

    // The plugins' loads and the component's compile are exported too, in the command's
    // trace (which `check_step_tree` showed is the only one).
    let loads = named(&spans, "prompt_host.load");
    assert_eq!(loads.len(), 2, "{spans:#?}");
    let compile = one(&spans, "prompt_host.compile");
    assert_eq!(
        compile["attributes"]["prompt_host.compile_cache"],
        "compiled"
    );

    // The credentials went to the collector, and nowhere else.
    assert!(spans.iter().all(|s| s["authorization"] == secret));
    assert!(!stdout.contains("otlp-secret") && !stderr.contains("otlp-secret"));
    assert!(!any_attribute_holds(&spans, "otlp-secret"));
    let log = std::fs::read_to_string(&session).unwrap();
    assert!(!log.contains("otlp-secret"));

    // No prompt text unless asked for.
    assert!(!any_attribute_holds(&spans, "Live text."));
    assert!(!any_attribute_holds(&spans, "Fixed."));
}

#[test]
fn prompt_text_is_exported_only_when_asked_for() {
    let collector = Collector::start(&[]);
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let config = d.config();
    let endpoint = collector.endpoint();
    let args = [
        "render",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "--scope",
        "agent:1",
    ];
    let (code, stdout, stderr) = run(
        &d,
        &args,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
            ("OTEL_SERVICE_NAME", "agent-runner"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let rendered: Value = serde_json::from_str(&stdout).unwrap();
    let spans = collector.until("prompt-host render");
    let render = one(&spans, "prompt_host.render");
    assert_eq!(render["resource"]["service.name"], "agent-runner");
    let instructions: Value = serde_json::from_str(
        render["attributes"]["gen_ai.system_instructions"]
            .as_str()
            .expect("gen_ai.system_instructions"),
    )
    .unwrap();
    assert_eq!(
        instructions,
        json!([{"type": "text", "content": rendered["prompt"]}])
    );
    assert_eq!(
        render["attributes"]["prompt_host.context.text"],
        rendered["context"]
    );

    // The same render without the variable: no text.
    let (code, _, stderr) = run(&d, &args, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    assert_eq!(code, 0, "{stderr}");
    let spans = collector.until("prompt-host render");
    let render = one(&spans, "prompt_host.render");
    assert!(render["attributes"]
        .get("gen_ai.system_instructions")
        .is_none());
    assert!(!any_attribute_holds(&spans, "Live text."));
}

/// A step's provider is the one its model or the caller's `provider` fact names, as the
/// GenAI conventions spell it — a DeepSeek model on `chat-completions` is `deepseek`, not
/// `openai` — and a command that fails is one trace too, its root marked as an error.
#[test]
fn the_provider_is_the_models_or_the_callers_and_a_failed_command_is_marked() {
    let collector = Collector::start(&[]);
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let config = d.config();
    let endpoint = collector.endpoint();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];
    let step = |log: &str, facts: &[&str]| {
        let session = d.path(log);
        let mut args = vec![
            "step",
            "--config",
            config.to_str().unwrap(),
            "--scope",
            "agent:1",
            "--session",
            session.to_str().unwrap(),
        ];
        for fact in facts {
            args.extend(["--fact", fact]);
        }
        let (code, _, stderr) = run(&d, &args, &env);
        assert_eq!(code, 0, "{stderr}");
        let spans = collector.until("prompt-host step");
        check_one_trace(&spans, one(&spans, "prompt-host step"));
        let attributes = one(&spans, "prompt_host.step")["attributes"].clone();
        (
            attributes["gen_ai.provider.name"].clone(),
            attributes["gen_ai.request.model"].clone(),
            attributes["prompt_host.route"].clone(),
        )
    };
    assert_eq!(
        step("a.jsonl", &["model=deepseek-v4"]),
        (
            json!("deepseek"),
            json!("deepseek-v4"),
            json!("chat-completions")
        )
    );
    // The caller's fact wins, in the conventions' spelling, or as given.
    assert_eq!(
        step("b.jsonl", &["model=deepseek-v4", "provider=Mistral"]).0,
        "mistral_ai"
    );
    assert_eq!(
        step("c.jsonl", &["model=deepseek-v4", "provider=openrouter"]).0,
        "openrouter"
    );

    // A command that fails: its root says so.
    let (code, _, stderr) = run(
        &d,
        &[
            "render",
            "--config",
            config.to_str().unwrap(),
            "--scope",
            "agnet:1",
        ],
        &env,
    );
    assert_eq!(code, 1, "{stderr}");
    let spans = collector.until("prompt-host render");
    let root = one(&spans, "prompt-host render");
    check_one_trace(&spans, root);
    assert_eq!(root["status"], 2, "OpenTelemetry's ERROR: {root}");
    assert_eq!(root["attributes"]["prompt_host.command"], "render");
}

/// The MCP servers a command waits for are in its trace: their opening exchanges (the
/// lifecycle, the first listing) under the command's root, not traces of their own.
#[test]
fn a_commands_mcp_exchanges_are_in_its_trace() {
    crate::integration::mcp::client::python_mcp_available();
    let _serial = crate::integration::mcp::client::serial_blocking();
    let collector = Collector::start(&[]);
    let d = Deployment::new(&format!(
        "[host]\nmcp_provider = {:?}\n\n[[mcp]]\nname = \"fx\"\ncommand = {:?}\n\
         args = [{:?}, \"--instructions\", \"Use the echo tool.\"]\ntimeout_ms = 20000\n",
        env!("GUEST_MCP_INSTRUCTIONS"),
        python(),
        crate::integration::mcp::client::fixtures().join("server.py"),
    ));
    let config = d.config();
    let endpoint = collector.endpoint();
    let (code, stdout, stderr) = run(
        &d,
        &["render", "--config", config.to_str().unwrap()],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Use the echo tool."), "{stdout}");
    let spans = collector.until("prompt-host render");
    check_one_trace(&spans, one(&spans, "prompt-host render"));
    let methods: BTreeSet<&str> = spans
        .iter()
        .filter_map(|s| s["attributes"]["mcp.method.name"].as_str())
        .collect();
    assert!(methods.contains("tools/list"), "{spans:#?}");
}

#[test]
fn serve_exports_the_steps_it_takes_and_flushes_when_its_input_closes() {
    let collector = Collector::start(&[]);
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let mut child = Command::new(bin())
        .args(["serve", "--config", d.config().to_str().unwrap()])
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "step", "params": {
        "session": d.path("s.jsonl"), "scope": "agent:1",
        "facts": {"model": "m1"}, "user": ["hi"],
    }});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{request}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let answer: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
    check_step_tree(&collector.until("prompt_host.step"), None);
}

#[test]
fn a_collector_in_trouble_is_a_warning_and_the_command_does_its_work() {
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let config = d.config();
    let args = [
        "render",
        "--config",
        config.to_str().unwrap(),
        "--scope",
        "agent:1",
    ];
    let (code, expected, stderr) = run(&d, &args, &[]);
    assert_eq!(code, 0, "{stderr}");
    let secret = "Bearer otlp-secret-7f3a";
    let headers = format!("authorization={secret}");

    // Answers 500 to every export.
    let failing = Collector::start(&["--fail", "1000"]);
    let (code, stdout, stderr) = run(
        &d,
        &args,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &failing.endpoint()),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
        ],
    );
    assert_eq!((code, stdout.as_str()), (0, expected.as_str()), "{stderr}");
    assert!(stderr.contains("warning: trace export:"), "{stderr}");
    assert!(!stderr.contains("otlp-secret"), "{stderr}");

    // Nobody listening: the same.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let nobody = format!("http://127.0.0.1:{closed}");
    let started = Instant::now();
    let (code, stdout, stderr) = run(
        &d,
        &args,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &nobody),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
        ],
    );
    assert_eq!((code, stdout.as_str()), (0, expected.as_str()), "{stderr}");
    assert!(stderr.contains("warning: trace export:"), "{stderr}");
    assert!(!stderr.contains("otlp-secret"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "a refused connection does not hold the command: {:?}",
        started.elapsed()
    );

    // A collector that takes the connection and never answers: the command's work is done
    // and printed, and its exit waits at most for the export timeout or the exporter's
    // 5-second shutdown bound, whichever is shorter.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_endpoint = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in silent.incoming().map_while(Result::ok) {
            held.push(conn);
        }
    });
    for (timeout, bound) in [(Some("1000"), 4), (None, 12)] {
        let mut env = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", silent_endpoint.as_str())];
        if let Some(ms) = timeout {
            env.push(("OTEL_EXPORTER_OTLP_TIMEOUT", ms));
        }
        let started = Instant::now();
        let (code, stdout, stderr) = run(&d, &args, &env);
        let took = started.elapsed();
        assert_eq!((code, stdout.as_str()), (0, expected.as_str()), "{stderr}");
        assert!(stderr.contains("warning: "), "{stderr}");
        assert!(took < Duration::from_secs(bound), "{timeout:?}: {took:?}");
    }

    // A protocol prompt-host does not speak: said once, and nothing is sent.
    let (code, stdout, stderr) = run(
        &d,
        &args,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &nobody),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    assert_eq!((code, stdout.as_str()), (0, expected.as_str()), "{stderr}");
    assert_eq!(
        stderr,
        "warning: no traces are exported: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported \
         (prompt-host exports with http/protobuf only)\n"
    );

    // An endpoint that is not a URL.
    let (code, stdout, stderr) = run(
        &d,
        &args,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url\u{7f}")],
    );
    assert_eq!((code, stdout.as_str()), (0, expected.as_str()), "{stderr}");
    assert!(
        stderr.starts_with("warning: no traces are exported: cannot build the OTLP exporter:"),
        "{stderr}"
    );
}

#[test]
fn a_plugins_requests_are_spans_of_its_load_without_the_secret() {
    use crate::integration::support::hostile_peer::{Peer, Reply};
    let collector = Collector::start(&[]);
    let peer = Peer::http(|_| Reply::new(200).text("Team rules.").into());
    let d = Deployment::new(&format!(
        "[[plugin]]\nname = \"team-rules\"\nwasm = {wasm:?}\n\
         grants = {{ http = [{{ origin = {origin:?}, headers = {{ authorization = \"Bearer ${{env:DOCS_TOKEN}}\" }} }}] }}\n\
         config = {{ url = {url:?} }}\nlimits = {{ init_timeout_ms = 10000 }}\n",
        wasm = env!("GUEST_REMOTE_INSTRUCTIONS"),
        origin = peer.origin(),
        url = peer.url("/team.md?key=not-for-spans"),
    ));
    let config = d.config();
    let endpoint = collector.endpoint();
    let (code, stdout, stderr) = run(
        &d,
        &["render", "--config", config.to_str().unwrap()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("DOCS_TOKEN", "s3cr3t-for-no-span"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Team rules."), "{stdout}");
    let spans = collector.until("prompt-host render");
    check_one_trace(&spans, one(&spans, "prompt-host render"));
    let http = one(&spans, "prompt_host.plugin_http");
    let attributes = &http["attributes"];
    assert_eq!(attributes["prompt_host.plugin"], "team-rules", "{http:#}");
    assert_eq!(attributes["http.request.method"], "GET");
    assert_eq!(attributes["server.address"], "127.0.0.1");
    assert_eq!(attributes["server.port"], json!(peer.port()));
    assert_eq!(attributes["url.path"], "/team.md");
    assert_eq!(attributes["http.response.status_code"], 200);
    assert_eq!(attributes["http.response.body.size"], 11);
    assert!(descends(&spans, http, one(&spans, "prompt_host.load")));
    assert!(!any_attribute_holds(&spans, "s3cr3t-for-no-span"));
    assert!(!any_attribute_holds(&spans, "not-for-spans"));
}
