//! Embedding end to end through the `Host` API: a whole conversation in the log (assistant
//! replies with tool calls, tool results), every past request rebuilt from the log, retries
//! that call no plugin, cancellation (a token, a dropped future) of busy and sleeping
//! plugins, and the `resume` header of a reopened log.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use prompt_host::policy::{Limits, PluginOptions};
use prompt_host::prompt::CancelToken;
use prompt_host::session::{AssistantReply, Session, ToolCall, ToolResult};
use prompt_host::{Facts, Host, PluginSpec, PromptConfig, RuntimeConfig, StepOptions};

const DECLARE: &str = env!("GUEST_DECLARE");
const PERSONA: &str = env!("GUEST_PERSONA");
const HOSTILE: &str = env!("GUEST_HOSTILE");

fn host(cache: &Path) -> Host {
    let prompt = PromptConfig::default()
        .include_harness_identity(false)
        .persona("You help on {{model}}.");
    let host = Host::new(prompt, RuntimeConfig::with_cache_dir(cache)).unwrap();
    host.bind_scope("agent:1", None).unwrap();
    host
}

/// A plugin in `agent:1` with a dynamic section counting its calls and one fixed tool.
fn load_tools(host: &Host) {
    let config = json!({
        "sections": [{"name": "count", "order": 10, "text": {"dynamic": "section call ${call}"}}],
        "tools": [{"schemas": [{"name": "ls", "description": "List files.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]}],
    });
    let plugin = host
        .load_plugin(
            PluginSpec::new("tools").scope("agent:1").config(config),
            std::path::Path::new(DECLARE),
        )
        .unwrap();
    host.attach(plugin);
}

fn user(text: &str) -> StepOptions {
    StepOptions::default().user_texts(vec![text.to_string()])
}

fn call(id: &str, path: &str) -> ToolCall {
    ToolCall::new(id, "ls", json!({"path": path}))
}

fn result(id: &str, content: &str) -> ToolResult {
    ToolResult {
        call_id: id.into(),
        content: content.into(),
        is_error: false,
    }
}

fn data(event: &prompt_host::session::Event) -> Value {
    serde_json::to_value(&event.data).unwrap()
}

fn messages(request: &prompt_host::session::ModelRequest) -> Value {
    serde_json::to_value(request.messages()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_five_turn_conversation_with_three_tool_calls() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(&dir.path().join("cache"));
    load_tools(&host);
    let (mut log, _) = Session::open(dir.path().join("s.jsonl")).unwrap();
    let facts = || Facts::new().with("model", "m1");
    let scope = Some("agent:1");
    let system = |n: u32| json!({"role": "system", "content": format!("You help on m1.\n\nsection call {n}")});

    // Turn 1: a question answered with two tool calls, then a final text.
    let (_, s0) = host
        .step(&mut log, scope, facts(), &user("What is here?"))
        .await
        .unwrap();
    assert_eq!(
        messages(&s0.request),
        json!([system(1), {"role": "user", "content": "What is here?"}])
    );
    let tools = serde_json::to_value(s0.request.tools()).unwrap();
    assert_eq!(
        tools,
        json!([{"type": "function", "function": {"name": "ls", "description": "List files.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}])
    );
    host.append_assistant(
        &mut log,
        &AssistantReply::default()
            .with_text("Looking.")
            .with_reasoning("Two directories to list.")
            .with_tool_calls(vec![call("c1", "."), call("c2", "src")]),
    )
    .unwrap();
    // The next step is refused while a call is unanswered.
    let refused = host
        .step(&mut log, scope, facts(), &StepOptions::default())
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("tool calls \"c1\", \"c2\" have no tool/result yet"),
        "{refused}"
    );
    host.append_tool_result(&mut log, &result("c1", "README.md"))
        .unwrap();
    host.append_tool_result(&mut log, &result("c2", "main.rs"))
        .unwrap();
    let (_, s1) = host
        .step(&mut log, scope, facts(), &StepOptions::default())
        .await
        .unwrap();
    // The reasoning is logged but not sent: chat-completions omits it unless asked.
    let turn1 = json!([
        {"role": "assistant", "content": "Looking.",
         "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\"src\"}"}}]},
        {"role": "tool", "content": "README.md", "tool_call_id": "c1"},
        {"role": "tool", "content": "main.rs", "tool_call_id": "c2"},
    ]);
    // The dynamic section changed ("call 2"): the projection replaced the head.
    let mut expected = vec![
        system(2),
        json!({"role": "user", "content": "What is here?"}),
    ];
    expected.extend(turn1.as_array().unwrap().clone());
    assert_eq!(messages(&s1.request), Value::Array(expected.clone()));
    host.append_assistant(
        &mut log,
        &AssistantReply::default().with_text("A README and main.rs."),
    )
    .unwrap();

    // Turns 2–5: one more tool call in turn 3, plain replies otherwise.
    for (turn, question) in ["Thanks.", "And in docs?", "Fine.", "Bye."]
        .iter()
        .enumerate()
    {
        let (_, s) = host
            .step(&mut log, scope, facts(), &user(question))
            .await
            .unwrap();
        let sent = messages(&s.request);
        assert_eq!(sent[0], system(s.step as u32 + 1), "turn {}", turn + 2);
        assert_eq!(
            sent.as_array().unwrap().last().unwrap(),
            &json!({"role": "user", "content": question})
        );
        if *question == "And in docs?" {
            host.append_assistant(
                &mut log,
                &AssistantReply::default().with_tool_calls(vec![call("c3", "docs")]),
            )
            .unwrap();
            // A result must answer an open call of this turn.
            let stray = host
                .append_tool_result(&mut log, &result("c1", "again"))
                .unwrap_err();
            assert!(
                stray.to_string().contains(
                    "answers no open tool call of the current turn (it was answered at seq"
                ),
                "{stray}"
            );
            host.append_tool_result(
                &mut log,
                &ToolResult {
                    call_id: "c3".into(),
                    content: "no such directory".into(),
                    is_error: true,
                },
            )
            .unwrap();
            let (_, s) = host
                .step(&mut log, scope, facts(), &StepOptions::default())
                .await
                .unwrap();
            let sent = messages(&s.request);
            let tail: Vec<Value> =
                sent.as_array().unwrap()[sent.as_array().unwrap().len() - 2..].to_vec();
            assert_eq!(
                tail,
                vec![
                    // No content key beside tool calls; the failure stated in the content
                    // (chat-completions has no error flag).
                    json!({"role": "assistant", "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\"docs\"}"}}]}),
                    json!({"role": "tool", "content": "Error: no such directory", "tool_call_id": "c3"}),
                ]
            );
        }
        host.append_assistant(
            &mut log,
            &AssistantReply::default().with_text(format!("reply {}", turn + 2)),
        )
        .unwrap();
    }
    // Ids are unique in the log.
    let dup = host
        .append_assistant(
            &mut log,
            &AssistantReply::default().with_tool_calls(vec![call("c2", "x")]),
        )
        .unwrap_err();
    assert!(
        dup.to_string()
            .contains("tool call id \"c2\" is already used (by the assistant message at seq"),
        "{dup}"
    );
    let empty = host
        .append_assistant(&mut log, &AssistantReply::default())
        .unwrap_err();
    assert!(empty
        .to_string()
        .contains("an assistant message needs text, reasoning or at least one tool call"));
    // The whole conversation, in order, in the last request.
    let (_, last) = host
        .step(&mut log, scope, facts(), &user("One more."))
        .await
        .unwrap();
    let roles: Vec<&str> = last
        .request
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user"
        ]
    );
}

/// A tiny deterministic generator (no external crate): xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_rebuilt_from_the_log_after_fifty_random_steps() {
    let d = Deployment::new("");
    let host = host(&d.path("cache"));
    let path = d.path("s.jsonl");
    let (mut log, _) = Session::open(&path).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut returned: Vec<(u64, String)> = Vec::new();
    let mut persona: Option<prompt_host::PluginId> = None;
    let mut tools: Option<prompt_host::PluginId> = None;
    let mut last = None;
    for i in 0..50u64 {
        match rng.below(6) {
            0 => {
                if let Some(id) = persona.take() {
                    host.dispose_plugin(id);
                }
                let spec = PluginSpec::new("persona")
                    .scope("agent:1")
                    .config(json!({"text": format!("Persona {} on {{{{model}}}}.", rng.below(3))}));
                persona = Some(
                    host.attach(
                        host.load_plugin(spec, std::path::Path::new(PERSONA))
                            .unwrap(),
                    ),
                );
            }
            1 => {
                match tools.take() {
                    Some(id) => {
                        host.dispose_plugin(id);
                    }
                    None => {
                        let n = rng.below(3) + 1;
                        let schemas: Vec<Value> = (0..n).map(|k| json!({"name": format!("tool{k}"), "description": format!("v{i}")})).collect();
                        let spec = PluginSpec::new("tools")
                            .scope("agent:1")
                            .config(json!({"tools": [{"schemas": schemas}]}));
                        tools = Some(
                            host.attach(
                                host.load_plugin(spec, std::path::Path::new(DECLARE))
                                    .unwrap(),
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
        let facts = Facts::new().with("model", format!("m{}", rng.below(3)));
        let outcome = match (&last, rng.below(5)) {
            (Some(previous), 0) => host.retry(
                &mut log,
                Some("agent:1"),
                previous,
                facts,
                &StepOptions::default(),
            ),
            _ => {
                let options = StepOptions::default()
                    .user_texts((0..rng.below(2)).map(|k| format!("user {i}.{k}")).collect())
                    .starts_series(rng.below(7) == 0)
                    .in_history(rng.below(4) == 0);
                host.step(&mut log, Some("agent:1"), facts, &options).await
            }
        };
        let (rendered, outcome) = outcome.unwrap_or_else(|e| panic!("step {i}: {e}"));
        if rng.below(3) == 0 {
            host.append_assistant(
                &mut log,
                &AssistantReply::default().with_text(format!("answer {i}")),
            )
            .unwrap();
        }
        returned.push((
            outcome.step,
            serde_json::to_string_pretty(&outcome.request).unwrap(),
        ));
        last = Some(rendered);
    }
    for (step, request) in &returned {
        let (n, rebuilt) = host.replay(&log, Some(*step)).unwrap();
        assert_eq!(n, *step);
        assert_eq!(
            &serde_json::to_string_pretty(&rebuilt).unwrap(),
            request,
            "step {step}"
        );
    }
    let newest = host.replay(&log, None).unwrap();
    assert_eq!(newest.0, returned.last().unwrap().0);
    // Another process replays the closed log: byte for byte what `step` printed.
    drop(log);
    for (step, request) in returned.iter().step_by(7) {
        let run = d.run(&[
            "replay",
            "--session",
            path.to_str().unwrap(),
            "--step",
            &step.to_string(),
        ]);
        assert_eq!(run.ok(), format!("{request}\n"), "step {step}");
    }
    let missing = d.run(&[
        "replay",
        "--session",
        path.to_str().unwrap(),
        "--step",
        "500",
    ]);
    assert_eq!(missing.code, 1);
    assert!(
        missing
            .stderr
            .contains("has no completed step 500; completed steps: 0 to 49"),
        "{}",
        missing.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_calls_no_plugin_and_writes_only_what_the_projection_requires() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(&dir.path().join("cache"));
    load_tools(&host);
    let (mut log, _) = Session::open(dir.path().join("s.jsonl")).unwrap();
    let scope = Some("agent:1");
    let (rendered, first) = host
        .step(
            &mut log,
            scope,
            Facts::new().with("model", "m1"),
            &user("hi"),
        )
        .await
        .unwrap();
    assert!(rendered.prompt.ends_with("section call 1"));
    let events = log.events().len();
    // Same facts: nothing changes, no plugin call, the log gets the step's frame only.
    let (same, again) = host
        .retry(
            &mut log,
            scope,
            &rendered,
            Facts::new().with("model", "m1"),
            &StepOptions::default(),
        )
        .unwrap();
    assert_eq!(same.prompt, rendered.prompt);
    assert!(again.commits.is_empty());
    assert_eq!(again.request.messages(), first.request.messages());
    let kinds: Vec<&str> = log.events()[events..]
        .iter()
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(kinds, ["step/start", "step/end"]);
    assert_eq!(data(&log.events()[events])["retryOf"], json!(0));
    // Another model: the persona references {{model}}, so the prompt is re-rendered and
    // committed; the dynamic section is reused as rendered ("call 1": no new plugin call).
    let (other, switched) = host
        .retry(
            &mut log,
            scope,
            &same,
            Facts::new().with("model", "m2"),
            &StepOptions::default(),
        )
        .unwrap();
    assert_eq!(other.prompt, "You help on m2.\n\nsection call 1");
    assert_eq!(switched.commits.len(), 1);
    // The next ordinary step calls the plugin again: its second call ever.
    let (next, _) = host
        .step(
            &mut log,
            scope,
            Facts::new().with("model", "m2"),
            &StepOptions::default(),
        )
        .await
        .unwrap();
    assert!(next.prompt.ends_with("section call 2"), "{}", next.prompt);
}

/// A plugin in `agent:slow` whose section never returns on its own (`mode`), with a 10 s
/// deadline so only a cancellation stops it.
fn load_stuck(host: &Host, mode: &str) {
    host.bind_scope("agent:slow", None).unwrap();
    let limits = Limits::default().call_timeout_ms(10_000);
    let spec = PluginSpec::new("stuck")
        .scope("agent:slow")
        .config(json!({"mode": mode, "in": "section"}))
        .options(PluginOptions::default().limits(limits));
    host.attach(
        host.load_plugin(spec, std::path::Path::new(HOSTILE))
            .unwrap(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_busy_or_sleeping_plugin_through_the_host() {
    for mode in ["loop", "sleep"] {
        let dir = tempfile::tempdir().unwrap();
        let host = std::sync::Arc::new(host(&dir.path().join("cache")));
        load_stuck(&host, mode);
        let path = dir.path().join("s.jsonl");
        let (mut log, _) = Session::open(&path).unwrap();
        let token = CancelToken::new();
        let canceller = {
            let token = token.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let at = Instant::now();
                token.cancel();
                at
            })
        };
        // Another scope is served while the stuck one runs.
        let other = {
            let host = host.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                host.render(Some("agent:1"), Facts::new().with("model", "m"))
                    .await
                    .unwrap();
                started.elapsed()
            })
        };
        let facts = Facts::new().signal(token.clone());
        let error = host
            .step(&mut log, Some("agent:slow"), facts, &user("hi"))
            .await
            .unwrap_err();
        let cancelled_at = canceller.await.unwrap();
        let latency = cancelled_at.elapsed();
        let message = error.to_string();
        assert!(message.contains("cancelled"), "{mode}: {message}");
        assert!(latency < Duration::from_secs(2), "{mode}: {latency:?}");
        eprintln!(
            "cancel → error through Host ({mode}): {:.2} ms",
            latency.as_secs_f64() * 1e3
        );
        assert!(other.await.unwrap() < Duration::from_secs(5));
        // A cancelled step writes nothing: the new log was not even created.
        assert!(!path.exists(), "{mode}: the log was created");
        // The interrupted instance was replaced: the plugin is still usable (and still
        // stuck, so cancel it again, quickly).
        let again = CancelToken::new();
        let quick = again.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            quick.cancel();
        });
        let started = Instant::now();
        host.render(Some("agent:slow"), Facts::new().signal(again))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_cancels_the_assembly() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(&dir.path().join("cache"));
    load_stuck(&host, "loop");
    let dropped = tokio::time::timeout(
        Duration::from_millis(100),
        host.render(Some("agent:slow"), Facts::new()),
    )
    .await;
    assert!(dropped.is_err(), "the render should still be running");
    // Had the first call kept running, this one would wait for the instance for ~10 s.
    let token = CancelToken::new();
    let quick = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        quick.cancel();
    });
    let started = Instant::now();
    host.render(Some("agent:slow"), Facts::new().signal(token))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reopened_log_logs_its_first_header_as_resume() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(&dir.path().join("cache"));
    let path = dir.path().join("s.jsonl");
    let reasons = |log: &Session| -> Vec<String> {
        log.events()
            .iter()
            .filter(|e| e.kind == "request/header")
            .map(|e| data(e)["reason"].as_str().unwrap().to_string())
            .collect()
    };
    {
        let (mut log, _) = Session::open(&path).unwrap();
        host.step(&mut log, None, Facts::new().with("model", "m"), &user("a"))
            .await
            .unwrap();
        host.step(&mut log, None, Facts::new().with("model", "m"), &user("b"))
            .await
            .unwrap();
        assert_eq!(reasons(&log), ["initial"]);
    }
    let (mut log, _) = Session::open(&path).unwrap();
    host.step(&mut log, None, Facts::new().with("model", "m"), &user("c"))
        .await
        .unwrap();
    host.step(&mut log, None, Facts::new().with("model", "m"), &user("d"))
        .await
        .unwrap();
    assert_eq!(reasons(&log), ["initial", "resume"]);
}

#[test]
fn a_scope_is_bound_once_through_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(&dir.path().join("cache"));
    host.bind_scope("a", None).unwrap();
    host.bind_scope("y", Some("a")).unwrap();
    let rebound = |key: &str, parent: Option<&str>| {
        let error = host.bind_scope(key, parent).unwrap_err();
        assert!(
            matches!(&error, prompt_host::HostError::Rebound { scope, .. } if scope == key),
            "{error}"
        );
        error.to_string()
    };
    // `agent:1` is a root scope (see `host`), `y` a child of `a`; every second bind is
    // refused, the same parent included, and names what the scope is bound to.
    for parent in [None, Some("a")] {
        assert_eq!(
            rebound("agent:1", parent),
            "bind_scope \"agent:1\": scope: scope key is already bound: \"agent:1\" is a root \
             scope (a scope is bound once)"
        );
    }
    for parent in [None, Some("a"), Some("agent:1")] {
        assert_eq!(
            rebound("y", parent),
            "bind_scope \"y\": scope: scope key is already bound to a parent: \"y\" is a child \
             of \"a\" (a scope is bound once)"
        );
    }
    let chain: Vec<String> = host
        .registry()
        .scope_chain("agent:1")
        .iter()
        .map(|k| k.to_string())
        .collect();
    assert_eq!(chain, ["agent:1"]);
    // A cycle is reported as one.
    let cycle = host.bind_scope("a", Some("y")).unwrap_err();
    assert!(
        matches!(
            &cycle,
            prompt_host::HostError::Scope {
                error: prompt_host::prompt::ScopeError::Cycle { .. },
                ..
            }
        ),
        "{cycle}"
    );
    assert_eq!(host.scopes(), ["a", "agent:1", "y"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tool_provider_or_listener_is_named_by_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(&dir.path().join("cache"));
    let trap = PluginSpec::new("trap")
        .scope("agent:1")
        .config(json!({"mode": "trap", "in": "tools"}));
    let trap = host
        .load_plugin(trap, std::path::Path::new(HOSTILE))
        .unwrap();
    let error = host
        .assemble(Some("agent:1"), Facts::new())
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("assembly for scope \"agent:1\" failed: tool provider \"hostile\" (plugin \"trap\", scope \"agent:1\") failed: "),
        "{error}"
    );
    drop(trap);
    let listener = PluginSpec::new("lst")
        .scope("agent:1")
        .config(json!({"listener": {"key": "L", "steps": [{"fail": "stop"}]}}));
    let _listener = host
        .load_plugin(listener, std::path::Path::new(DECLARE))
        .unwrap();
    let error = host
        .assemble(Some("agent:1"), Facts::new())
        .await
        .unwrap_err();
    let prompt_host::HostError::Assemble { error: source, .. } = &error else {
        panic!("{error}");
    };
    assert!(
        matches!(&**source, prompt_host::prompt::AssembleError::Provider { kind: prompt_host::prompt::EntryKind::Listener, name: Some(name), .. } if name == "L"),
        "{error}"
    );
}

/// A native section in `scope` that records the thread each assembly calls it on.
fn thread_probe(
    host: &Host,
    scope: &str,
) -> (
    prompt_host::prompt::Fiber,
    std::sync::Arc<std::sync::Mutex<Vec<std::thread::ThreadId>>>,
) {
    use prompt_host::prompt::{SectionDef, TextSource};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let fiber = host.native("probe", Some(scope));
    let record = seen.clone();
    fiber
        .section(SectionDef::new(
            "probe",
            1.0,
            TextSource::dynamic(move |_| {
                record.lock().unwrap().push(std::thread::current().id());
                Ok("probed".into())
            }),
        ))
        .unwrap();
    (fiber, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_caller_thread_assembles_on_the_callers_worker_and_a_signal_still_cancels_it() {
    let dir = tempfile::tempdir().unwrap();
    let host = std::sync::Arc::new(host(&dir.path().join("cache")));
    let (_probe, seen) = thread_probe(&host, "agent:1");
    let here = std::thread::current().id();
    // Through the blocking pool by default; on this worker when asked.
    host.render(Some("agent:1"), Facts::new().with("model", "m"))
        .await
        .unwrap();
    let rendered = host
        .render(
            Some("agent:1"),
            Facts::new().with("model", "m").on_caller_thread(true),
        )
        .await
        .unwrap();
    assert!(rendered.prompt.contains("probed"));
    {
        let seen = seen.lock().unwrap();
        assert_ne!(
            seen[0], here,
            "by default the assembly is handed to the pool"
        );
        assert_eq!(seen[1], here, "asked, it runs on the caller's thread");
    }
    // A plugin that writes to stdout and one that sleeps (WASI calls that drive their own
    // futures) work there too, and a stuck one is stopped by the signal while the runtime
    // serves another task meanwhile.
    load_tools(&host);
    host.render(
        Some("agent:1"),
        Facts::new().with("model", "m").on_caller_thread(true),
    )
    .await
    .unwrap();
    for mode in ["loop", "sleep"] {
        let scope = format!("agent:{mode}");
        host.bind_scope(&scope, None).unwrap();
        let limits = Limits::default().call_timeout_ms(10_000);
        let spec = PluginSpec::new("stuck")
            .scope(&scope)
            .config(json!({"mode": mode, "in": "section"}))
            .options(PluginOptions::default().limits(limits));
        host.attach(host.load_plugin(spec, Path::new(HOSTILE)).unwrap());
        let token = CancelToken::new();
        let canceller = {
            let token = token.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                token.cancel();
                Instant::now()
            })
        };
        let started = Instant::now();
        let error = host
            .render(
                Some(&scope),
                Facts::new().signal(token).on_caller_thread(true),
            )
            .await
            .unwrap_err();
        assert!(error.to_string().contains("cancelled"), "{mode}: {error}");
        let cancelled_at = canceller.await.unwrap();
        assert!(cancelled_at.elapsed() < Duration::from_secs(2), "{mode}");
        assert!(started.elapsed() < Duration::from_secs(5), "{mode}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn on_caller_thread_on_a_current_thread_runtime_goes_to_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(&dir.path().join("cache"));
    let (_probe, seen) = thread_probe(&host, "agent:1");
    let here = std::thread::current().id();
    host.render(
        Some("agent:1"),
        Facts::new().with("model", "m").on_caller_thread(true),
    )
    .await
    .unwrap();
    assert_ne!(
        seen.lock().unwrap()[0],
        here,
        "a current-thread runtime cannot be left: the assembly is handed over"
    );
}
