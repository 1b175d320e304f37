//! Compaction through every entry point: a long conversation compacted three times on each
//! route through `serve` (every step's request rebuilt from the log after each compaction
//! equals what the step returned; the summary stands where the range was; a replaced
//! runtime-context snapshot is sent again), and bad ranges and summaries refused with
//! nothing written through `serve`, the command line and the library in a tokio runtime.

use std::path::Path;

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;
use prompt_host::session::{CompactionRange, Session, ToolCall};
use prompt_host::{Host, HostError, PromptConfig, RuntimeConfig, StepOptions};

const DECLARE: &str = env!("GUEST_DECLARE");

/// A deployment with a persona, a fixed section and a fixed runtime context in `agent:1`.
fn deployment() -> Deployment {
    Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\npersona = \"You help on {{{{model}}}}.\"\n\n\
         [[scope]]\nname = \"agent:1\"\n\n\
         [[plugin]]\nname = \"facts\"\nwasm = {}\nscope = \"agent:1\"\n\
         config = {{ sections = [{{ name = \"rules\", order = 10, text = \"Be brief.\" }}], \
         contexts = [{{ name = \"cwd\", order = 10, text = \"cwd: /work\" }}], \
         tools = [{{ schemas = [{{ name = \"ls\", description = \"List.\" }}] }}] }}\n",
        Value::String(DECLARE.into())
    ))
}

/// Every text the request's messages carry, in order, whatever the route's shape.
fn texts(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_texts(request.get("messages").or(request.get("input")), &mut out);
    out
}

fn collect_texts(value: Option<&Value>, out: &mut Vec<String>) {
    match value {
        Some(Value::String(s)) => out.push(s.clone()),
        Some(Value::Array(items)) => items.iter().for_each(|v| collect_texts(Some(v), out)),
        Some(Value::Object(map)) => {
            for key in ["content", "text", "output"] {
                collect_texts(map.get(key), out);
            }
        }
        _ => {}
    }
}

#[test]
fn a_long_conversation_compacted_three_times_on_each_route_replays_every_step() {
    let d = deployment();
    let mut s = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let routes = [
        json!("chat-completions"),
        json!({"name": "anthropic-messages", "options": {"max_tokens": 1024}}),
        json!("openai-responses"),
    ];
    for route in routes {
        let name = route
            .get("name")
            .unwrap_or(&route)
            .as_str()
            .unwrap()
            .to_string();
        let session = d.path(&format!("{name}.jsonl"));
        let session = session.to_str().unwrap();
        let step = |s: &mut Served, user: Option<String>| {
            let mut params = json!({"session": session, "scope": "agent:1", "facts": {"model": "m1"}, "route": route});
            if let Some(u) = user {
                params["user"] = json!([u]);
            }
            s.ok("step", params)
        };
        let mut returned: Vec<Value> = Vec::new();
        let mut compactions = 0;
        for turn in 0..60 {
            let stepped = step(&mut s, Some(format!("question {turn}")));
            returned.push(stepped["request"].clone());
            if turn % 3 == 1 {
                let id = format!("call_{turn}");
                s.ok("append_assistant", json!({"session": session, "tool_calls": [{"id": id, "name": "ls", "arguments": {"path": "."}}]}));
                s.ok("append_tool_result", json!({"session": session, "call_id": id, "content": format!("files of turn {turn}")}));
                let stepped = step(&mut s, None);
                returned.push(stepped["request"].clone());
            }
            s.ok(
                "append_assistant",
                json!({"session": session, "text": format!("answer {turn}")}),
            );
            if turn % 20 == 19 {
                compactions += 1;
                let summary = format!("summary {compactions} of turns up to {turn}");
                let done = s.ok(
                    "compact",
                    json!({"session": session, "summary": summary, "keep_turns": 3}),
                );
                assert_eq!(
                    done["summary_seq"],
                    done["start_event"].as_u64().unwrap() + 1,
                    "{done}"
                );
                // The system prompt, and nothing after it, is kept before the range.
                assert_eq!(done["prefix_messages_kept"], 1, "{name}: {done}");
                // The next request: the system prompt (apart on Anthropic and Responses),
                // the summary, the three kept turns, the context sent again, the new input.
                let stepped = step(&mut s, Some(format!("after compaction {compactions}")));
                returned.push(stepped["request"].clone());
                let sent = texts(&stepped["request"]);
                let at = sent.iter().position(|t| *t == summary);
                assert!(at.is_some_and(|i| i <= 1), "{name}: {sent:?}");
                assert!(!sent.iter().any(|t| t == "question 0"), "{name}: {sent:?}");
                assert!(
                    sent.iter().any(|t| *t == format!("question {}", turn - 2)),
                    "{name}: {sent:?}"
                );
                // The runtime-context snapshot was in the range: it is sent again, once.
                let context = sent.iter().filter(|t| t.contains("cwd: /work")).count();
                assert_eq!(context, 1, "{name}: {sent:?}");
                s.ok(
                    "append_assistant",
                    json!({"session": session, "text": "noted"}),
                );
            }
        }
        assert_eq!(compactions, 3);
        // Every step, before and after each compaction, rebuilt from the log as returned.
        for (n, request) in returned.iter().enumerate() {
            let replayed = s.ok("request", json!({"session": session, "step": n}));
            assert_eq!(&replayed["request"], request, "{name}: step {n}");
        }
        // The log still holds every turn: compaction shadows, never deletes.
        let log = std::fs::read_to_string(session).unwrap();
        assert!(log.contains("\"question 0\""));
        assert_eq!(log.matches("\"compaction/start\"").count(), 3);
    }
}

/// A log of two turns with a tool call in the first: seqs as `stepped` returns them.
fn stepped_log(s: &mut Served, session: &str) {
    let step = |s: &mut Served, user: Option<&str>| {
        let mut params = json!({"session": session, "scope": "agent:1", "facts": {"model": "m1"}});
        if let Some(u) = user {
            params["user"] = json!([u]);
        }
        s.ok("step", params);
    };
    step(s, Some("first"));
    s.ok(
        "append_assistant",
        json!({"session": session, "tool_calls": [{"id": "c1", "name": "ls", "arguments": {}}]}),
    );
    s.ok(
        "append_tool_result",
        json!({"session": session, "call_id": "c1", "content": "a"}),
    );
    step(s, None);
    s.ok(
        "append_assistant",
        json!({"session": session, "text": "done"}),
    );
    step(s, Some("second"));
}

/// A server on [`deployment`] and a log of three turns stepped through it ([`stepped_log`]).
fn served_stepped_log(d: &Deployment) -> (Served, std::path::PathBuf) {
    let mut s = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let path = d.path("s.jsonl");
    stepped_log(&mut s, path.to_str().unwrap());
    (s, path)
}

/// Surface nodes by kind, from the log on disk.
fn surface(path: &Path) -> Vec<(u64, String)> {
    let (session, _) = Session::open(path).unwrap();
    session
        .surface()
        .iter()
        .map(|seq| (seq, session.event(seq).unwrap().kind.clone()))
        .collect()
}

/// The seq of the first surface node of `kind` (after node 0), and of the tool result.
fn seqs(path: &Path) -> (u64, u64, u64) {
    let nodes = surface(path);
    let first_user = nodes.iter().find(|(_, k)| k == "user/message").unwrap().0;
    let call = nodes
        .iter()
        .find(|(_, k)| k == "assistant/message")
        .unwrap()
        .0;
    let result = nodes.iter().find(|(_, k)| k == "tool/result").unwrap().0;
    assert!(first_user < call && call < result);
    (first_user, call, result)
}

/// The refusals each entry point must give, as (params, text in the message).
fn bad_inputs(path: &Path) -> Vec<(Value, String)> {
    let (user, call, result) = seqs(path);
    let (session, _) = Session::open(path).unwrap();
    let events = session.events().len() as u64;
    let head = session.surface().nodes()[0];
    vec![
        (
            json!({"start_seq": user, "end_seq": events + 5}),
            format!("seq {} is beyond the log, which has {events} events", events + 5),
        ),
        (
            json!({"start_seq": result, "end_seq": user}),
            format!("the range is reversed: seq {result} comes after seq {user} on the surface"),
        ),
        (
            json!({"start_seq": head, "end_seq": head}),
            format!("the range starts at seq {head}, the system prompt (node 0)"),
        ),
        (
            json!({"start_seq": user, "end_seq": call}),
            format!("the range would separate tool call c1 (seq {call}) from its result (seq {result}); end the range at seq {result} or later"),
        ),
        (
            json!({"start_seq": user, "end_seq": result, "summary": "x".repeat(10 << 20)}),
            "the summary is 10485760 bytes; a compaction summary may be at most 1048576 bytes (1 MiB)".into(),
        ),
        (
            json!({"start_seq": user, "end_seq": result, "summary": ""}),
            "the summary is empty".into(),
        ),
    ]
}

fn nested(depth: usize) -> Value {
    (0..depth).fold(json!("deep"), |inner, _| json!([inner]))
}

#[test]
fn bad_ranges_and_summaries_are_refused_through_serve_with_nothing_written() {
    let d = deployment();
    let (mut s, path) = served_stepped_log(&d);
    let session = path.to_str().unwrap();
    // Read while the server does not hold the log (it takes the writer's lock).
    s.ok("close_session", json!({"session": session}));
    let bad = bad_inputs(&path);
    let (user, _, result) = seqs(&path);
    let before = std::fs::read(&path).unwrap();
    for (params, text) in bad {
        let mut p = json!({"session": session, "summary": "the summary"});
        p.as_object_mut()
            .unwrap()
            .extend(params.as_object().unwrap().clone());
        let answer = s.call("compact", p);
        let error = &answer["error"];
        assert_eq!(error["data"]["kind"], "compaction", "{answer:.300}");
        assert_eq!(error["data"]["session"], session);
        let message = error["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("session log {session}: compaction refused: ")),
            "{message}"
        );
        assert!(message.contains(&text), "{message:.300} lacks {text}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "{text}");
    }
    // A summary that is not text, nested to the reader's depth limit and past it; a range
    // and keep_turns at once; neither.
    // Within the reader's 128 levels the params are read and refused as params; past them
    // the line is refused as it is read.
    for (summary, code) in [(nested(124), -32602), (nested(200), -32700)] {
        let answer = s.call(
            "compact",
            json!({"session": session, "summary": summary, "keep_turns": 1}),
        );
        assert_eq!(answer["error"]["code"], code, "{answer:.300}");
    }
    let both = s.err("compact", json!({"session": session, "summary": "s", "start_seq": user, "end_seq": result, "keep_turns": 1}));
    assert!(
        both.contains("give start_seq and end_seq, or keep_turns"),
        "{both}"
    );
    let none = s.err(
        "compact",
        json!({"session": session, "summary": "s", "keep_turns": 9}),
    );
    assert!(
        none.contains("nothing to compact: the session has no turns before its newest 9"),
        "{none}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // And a good one goes through on the same server.
    let done = s.ok(
        "compact",
        json!({"session": session, "summary": "s", "start_seq": user, "end_seq": result}),
    );
    assert_eq!(done["replaced"].as_array().unwrap().len(), 4, "{done}");
}

#[test]
fn bad_ranges_and_summaries_are_refused_through_the_command_line_with_nothing_written() {
    let d = deployment();
    let path = d.path("s.jsonl");
    let session = path.to_str().unwrap();
    // A turn, a turn with a tool call answered, and a third turn.
    cli_step(&d, session, &["first"], &[]).ok();
    let call = r#"{"id":"c1","name":"ls","arguments":{}}"#;
    d.run(&["assistant", "--session", session, "--tool-call", call])
        .ok();
    let result = ["--call-id", "c1", "--content", "a"];
    d.run(&[&["tool-result", "--session", session][..], &result].concat())
        .ok();
    cli_step(&d, session, &[], &[]).ok();
    d.run(&["assistant", "--session", session, "--text", "done"])
        .ok();
    cli_step(&d, session, &["second"], &[]).ok();
    let before = std::fs::read(&path).unwrap();
    let big = d.path("big.txt");
    std::fs::write(&big, "x".repeat(10 << 20)).unwrap();
    let big = format!("@{}", big.display());
    for (params, text) in bad_inputs(&path) {
        let mut args = vec!["compact".to_string(), "--session".into(), session.into()];
        let summary = match params["summary"].as_str() {
            Some(s) if s.len() > 1000 => big.clone(),
            Some(s) => s.to_string(),
            None => "the summary".into(),
        };
        args.extend(["--summary".into(), summary]);
        args.extend(["--start-seq".into(), params["start_seq"].to_string()]);
        args.extend(["--end-seq".into(), params["end_seq"].to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = d.run(&args);
        run.fails(
            1,
            &[
                &format!("session log {session}: compaction refused: "),
                &text,
            ],
        );
        assert_eq!(std::fs::read(&path).unwrap(), before, "{text}");
    }
    // A summary file that is a FIFO is refused without blocking.
    let fifo = d.path("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let run = d.run(&[
        "compact",
        "--session",
        session,
        "--summary",
        &format!("@{}", fifo.display()),
        "--keep-turns",
        "1",
    ]);
    run.fails(1, &["--summary @", "not a regular file"]);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Neither a range nor --keep-turns is a usage error.
    d.run(&["compact", "--session", session, "--summary", "s"])
        .fails(2, &["--keep-turns"]);
    // A good one prints what it wrote, and the log reopens with the summary on its surface.
    let done = d
        .run(&[
            "compact",
            "--session",
            session,
            "--summary",
            "the first turn",
            "--keep-turns",
            "1",
        ])
        .json();
    let nodes = surface(&path);
    assert!(
        nodes
            .iter()
            .any(|(seq, _)| json!(seq) == done["summary_seq"]),
        "{done} {nodes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_ranges_and_summaries_are_refused_by_the_library_in_a_tokio_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = PromptConfig::default()
        .include_harness_identity(false)
        .persona("You help on {{model}}.");
    let host = Host::new(prompt, RuntimeConfig::with_cache_dir(dir.path())).unwrap();
    let path = dir.path().join("s.jsonl");
    let (mut session, _) = Session::open(&path).unwrap();
    let facts = || prompt_host::Facts::new().with("model", "m1");
    let user = |t: &str| StepOptions::default().user_texts(vec![t.to_string()]);
    host.step(&mut session, None, facts(), &user("first"))
        .await
        .unwrap();
    let reply =
        prompt_host::session::AssistantReply::calls(vec![ToolCall::new("c1", "ls", json!({}))]);
    host.append_assistant(&mut session, &reply).unwrap();
    let result = prompt_host::session::ToolResult {
        call_id: "c1".into(),
        content: "a".into(),
        is_error: false,
    };
    host.append_tool_result(&mut session, &result).unwrap();
    host.step(&mut session, None, facts(), &StepOptions::default())
        .await
        .unwrap();
    host.append_assistant(
        &mut session,
        &prompt_host::session::AssistantReply::text("done"),
    )
    .unwrap();
    host.step(&mut session, None, facts(), &user("second"))
        .await
        .unwrap();
    drop(session);
    let bad = bad_inputs(&path);
    let before = std::fs::read(&path).unwrap();
    let (mut session, _) = Session::open(&path).unwrap();
    for (params, text) in bad {
        let range = CompactionRange {
            start_seq: params["start_seq"].as_u64().unwrap(),
            end_seq: params["end_seq"].as_u64().unwrap(),
        };
        let summary = params["summary"].as_str().unwrap_or("the summary");
        let error = host.compact(&mut session, &range, summary).unwrap_err();
        assert!(matches!(error, HostError::Compaction { .. }), "{error:?}");
        let shown = error.to_string();
        assert!(
            shown.starts_with(&format!(
                "session log {}: compaction refused: ",
                path.display()
            )),
            "{shown}"
        );
        assert!(shown.contains(&text), "{shown:.300} lacks {text}");
        assert_eq!(std::fs::read(&path).unwrap(), before, "{text}");
    }
    // A good one, then the next step sends the summary after the system prompt.
    let range = prompt_host::session::oldest_compactable(&session, 1).unwrap();
    let done = host
        .compact(&mut session, &range, "they said first")
        .unwrap();
    assert_eq!(done.prefix_messages_kept, 1);
    let (_, outcome) = host
        .step(&mut session, None, facts(), &user("third"))
        .await
        .unwrap();
    let messages = outcome.request.body["messages"].clone();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "they said first"})
    );
    let (_, replayed) = host.replay(&session, None).unwrap();
    assert_eq!(replayed.body, outcome.request.body);
}

/// A deployment whose requests may count at most `limit` tokens.
fn budgeted(limit: usize) -> Deployment {
    let d = deployment();
    let toml = std::fs::read_to_string(d.config()).unwrap();
    let toml = toml.replacen("[prompt]\n", "[prompt]\ntokenizer = \"o200k_base\"\n", 1);
    std::fs::write(
        d.config(),
        format!("[sessions]\nmax_request_tokens = {limit}\n\n{toml}"),
    )
    .unwrap();
    d
}

#[test]
fn a_request_over_max_request_tokens_fails_naming_the_range_to_compact_and_writes_nothing() {
    let d = budgeted(300);
    let mut s = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let path = d.path("s.jsonl");
    let session = path.to_str().unwrap();
    let long = "many words in a question ".repeat(10);
    let step = |s: &mut Served, n: usize| {
        s.call(
            "step",
            json!({"session": session, "scope": "agent:1", "facts": {"model": "m1"}, "user": [format!("{n}: {long}")], "tokens": true}),
        )
    };
    let mut refused = None;
    let mut last_total = 0;
    for n in 0..20 {
        let answer = step(&mut s, n);
        if answer.get("error").is_some() {
            refused = Some(answer);
            break;
        }
        // Under the budget, every step reports what its request counts, growing to the limit.
        let counted = &answer["result"]["request_tokens"];
        let total = request_total(counted, "o200k_base");
        assert!(total > last_total && total <= 300, "{counted}");
        last_total = total;
        s.ok(
            "append_assistant",
            json!({"session": session, "text": format!("answer {n}")}),
        );
    }
    let refused = refused.expect("the conversation outgrew 300 tokens");
    let error = &refused["error"];
    let data = &error["data"];
    assert_eq!(data["kind"], "token-budget", "{refused}");
    assert_eq!(data["budget"], "max_request_tokens");
    assert_eq!(data["limit"], 300);
    assert!(data["tokens"].as_u64().unwrap() > 300, "{refused}");
    assert!(data["tokens"].as_u64().unwrap() > last_total);
    let (start, end) = (
        data["start_seq"].as_u64().unwrap(),
        data["end_seq"].as_u64().unwrap(),
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("over [sessions] max_request_tokens = 300; compact the conversation: the oldest range a compaction could replace is seqs"),
        "{message}"
    );
    // Nothing of the refused step is in the log.
    s.ok("close_session", json!({"session": session}));
    let before = std::fs::read(&path).unwrap();
    let steps = String::from_utf8_lossy(&before)
        .matches("\"step/start\"")
        .count();
    // The range named goes through, and the same step then fits.
    let done = s.ok("compact", json!({"session": session, "summary": "earlier questions", "start_seq": start, "end_seq": end}));
    assert_eq!(done["replaced"][0], start);
    let answer = step(&mut s, 99);
    assert!(answer.get("result").is_some(), "{answer}");
    let total = request_total(&answer["result"]["request_tokens"], "o200k_base");
    assert!(total < data["tokens"].as_u64().unwrap(), "{answer}");
    let after = std::fs::read_to_string(&path).unwrap();
    assert_eq!(after.matches("\"step/start\"").count(), steps + 1);
}

/// A step's `request_tokens`, checked whole: counted with `tokenizer`, its parts adding up
/// to its total, which it returns.
fn request_total(counted: &Value, tokenizer: &str) -> u64 {
    assert_eq!(counted["tokenizer"], tokenizer, "{counted}");
    let part = |name: &str| {
        counted[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{counted}"))
    };
    assert!(part("system") > 0 && part("tools") > 0 && part("messages") > 0);
    assert_eq!(
        part("system") + part("tools") + part("messages"),
        part("total")
    );
    part("total")
}

#[test]
fn a_step_reports_its_requests_tokens_as_its_route_sends_them() {
    let d = deployment();
    let mut s = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let tokenizer = prompt_host::tokens::Tokenizer::load("cl100k_base", None).unwrap();
    for route in ["chat-completions", "anthropic-messages", "openai-responses"] {
        let path = d.path(&format!("{route}.jsonl"));
        let session = path.to_str().unwrap();
        let spec = json!({"name": route, "options": {"max_tokens": 64}});
        let result = s.ok(
            "step",
            json!({"session": session, "scope": "agent:1", "facts": {"model": "m1"},
                   "route": spec, "user": ["What is in /work?"], "tokens": "cl100k_base"}),
        );
        let counted = &result["request_tokens"];
        request_total(counted, "cl100k_base");
        // The system prompt is counted as text, wherever the route carries it.
        let request = &result["request"];
        let system = match route {
            "chat-completions" => request["messages"][0]["content"].clone(),
            "anthropic-messages" => request["system"][0]["text"].clone(),
            _ => request["instructions"].clone(),
        };
        let system = tokenizer.count(system.as_str().unwrap()).unwrap();
        assert_eq!(counted["system"], system, "{route}: {counted}");
        // The tools as the route's JSON list.
        let tools = tokenizer.count(&request["tools"].to_string()).unwrap();
        assert_eq!(counted["tools"], tools, "{route}: {counted}");
        // Not asked: not counted.
        s.ok(
            "append_assistant",
            json!({"session": session, "text": "Two files."}),
        );
        let plain = s.ok(
            "step",
            json!({"session": session, "scope": "agent:1", "facts": {"model": "m1"}, "user": ["And?"]}),
        );
        assert!(plain.get("request_tokens").is_none(), "{plain}");
    }
    // A tokenizer that cannot be loaded fails the step before anything is written.
    let path = d.path("nope.jsonl");
    let answer = s.call(
        "step",
        json!({"session": path.to_str().unwrap(), "scope": "agent:1", "facts": {"model": "m1"},
               "user": ["hi"], "tokens": "no-such-tokenizer"}),
    );
    assert_eq!(answer["error"]["data"]["kind"], "tokenizer", "{answer}");
    assert!(!path.exists());
}

#[test]
fn the_command_line_counts_a_steps_request_on_standard_error() {
    let d = deployment();
    let path = d.path("s.jsonl");
    let session = path.to_str().unwrap();
    let step = |extra: &[&str]| cli_step(&d, session, &["hello"], extra);
    let run = step(&["--tokenizer", "o200k_base"]);
    let request: Value = serde_json::from_str(run.ok()).unwrap();
    let tokenizer = prompt_host::tokens::Tokenizer::load("o200k_base", None).unwrap();
    let system = tokenizer
        .count(request["messages"][0]["content"].as_str().unwrap())
        .unwrap();
    assert!(
        run.stderr.contains(&format!(
            "tokens (o200k_base: system prompt {system}, tools "
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.starts_with("request: "), "{}", run.stderr);
    // --tokens needs host.toml's tokenizer; without one, nothing is written.
    let before = std::fs::read(&path).unwrap();
    step(&["--tokens"]).fails(1, &["no tokenizer"]);
    step(&["--tokenizer", "no-such-tokenizer"]).fails(1, &["no-such-tokenizer"]);
    // A tokenizer file that is a FIFO is refused without blocking, before the step.
    let fifo = d.path("tokenizer.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let config = d.config();
    let run = d
        .run_timed(
            &[
                "step",
                "--config",
                config.to_str().unwrap(),
                "--session",
                session,
                "--user",
                "hello",
                "--tokenizer",
                fifo.to_str().unwrap(),
            ],
            std::time::Duration::from_secs(20),
        )
        .expect("a FIFO as --tokenizer blocked the command");
    run.fails(1, &["is a FIFO, not a regular file"]);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// `prompt-host step` in `agent:1` with these user messages, and `extra` arguments.
fn cli_step(
    d: &Deployment,
    session: &str,
    users: &[&str],
    extra: &[&str],
) -> crate::integration::support::cli::Run {
    cli_in_agent(d, "step", session, users, extra)
}

/// `prompt-host COMMAND` on [`deployment`]'s `agent:1` and `session`, with these user
/// messages and `extra` arguments.
fn cli_in_agent(
    d: &Deployment,
    command: &str,
    session: &str,
    users: &[&str],
    extra: &[&str],
) -> crate::integration::support::cli::Run {
    let config = d.config();
    let mut args = vec![
        command,
        "--config",
        config.to_str().unwrap(),
        "--scope",
        "agent:1",
        "--fact",
        "model=m1",
        "--session",
        session,
    ];
    for user in users {
        args.extend(["--user", user]);
    }
    args.extend_from_slice(extra);
    d.run(&args)
}

#[test]
fn max_request_tokens_holds_through_the_command_line_and_needs_a_tokenizer() {
    let d = budgeted(40);
    let path = d.path("s.jsonl");
    let session = path.to_str().unwrap();
    let run = cli_step(&d, session, &["hello"], &[]);
    run.fails(
        1,
        &[
            "over [sessions] max_request_tokens = 40",
            "no range can be compacted",
        ],
    );
    assert!(!path.exists() || std::fs::read(&path).unwrap().is_empty());
    // A budget with no tokenizer to count it stops the host, naming the key.
    let toml = std::fs::read_to_string(d.config()).unwrap();
    std::fs::write(d.config(), toml.replace("tokenizer = \"o200k_base\"\n", "")).unwrap();
    let run = cli_step(&d, session, &["hello"], &[]);
    run.fails(
        1,
        &[
            "sessions.max_request_tokens",
            "a token budget needs prompt.tokenizer",
        ],
    );
}

#[test]
fn inspect_names_the_compaction_behind_a_step_whose_prefix_broke() {
    let d = deployment();
    let (mut s, path) = served_stepped_log(&d);
    let session = path.to_str().unwrap();
    s.ok(
        "append_assistant",
        json!({"session": session, "text": "second answer"}),
    );
    let done = s.ok(
        "compact",
        json!({"session": session, "summary": "They listed a directory.", "keep_turns": 1}),
    );
    s.ok(
        "step",
        json!({"session": session, "scope": "agent:1", "facts": {"model": "m1"}, "user": ["third"]}),
    );
    s.ok("close_session", json!({"session": session}));
    let report = cli_in_agent(&d, "inspect", session, &[], &["--json"]).json();
    let steps = report["timeline"]["steps"].as_array().expect("steps");
    let (last, earlier) = steps.split_last().unwrap();
    assert!(
        earlier.iter().all(|s| s["compaction"].is_null()),
        "{report}"
    );
    assert_eq!(last["compaction"]["seq"], done["start_event"], "{last}");
    assert_eq!(
        last["compaction"]["replaced"],
        done["replaced"].as_array().unwrap().len()
    );
    // The request breaks at the summary, right after the system prompt.
    assert_eq!(last["prefix"]["kept"], false);
    assert_eq!(last["prefix"]["part"], "messages[1]", "{last}");
}
