//! The session log attacked from outside: JSON nested just under a reader's limit handed in
//! through the command line, `serve`, a plugin's tool parameters and the library; a file
//! size limit; logs of many calls and replacements; a step with thousands of messages. The
//! rule behind every test: nothing is acknowledged that another process cannot read back.

use std::path::Path;

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::integration::support::cli::{bin, Deployment};
use crate::integration::support::serve::Served;
use prompt_host::session::{AssistantReply, Session, ToolCall};
use prompt_host::{Host, PluginSpec, PromptConfig, RuntimeConfig, StepOptions};

fn nested(levels: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..levels {
        value = Value::Array(vec![value]);
    }
    value
}

/// `prompt-host <args>` outside any deployment.
fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(bin())
        .args(args)
        .output()
        .expect("run prompt-host")
}

/// Another process opens the log (an append of a plain reply), so every line must read
/// back; the reply's seq.
fn reopens(log: &Path) -> u64 {
    let out = cli(&[
        "assistant",
        "--session",
        log.to_str().unwrap(),
        "--text",
        "ok",
    ]);
    assert!(
        out.status.success(),
        "the log does not open any more: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seq: Value = serde_json::from_slice(&out.stdout).unwrap();
    seq["seq"].as_u64().unwrap()
}

/// A tool call whose arguments (an object, as they must be) nest `levels` deep.
fn deep_arguments(levels: usize) -> Value {
    json!({ "a": nested(levels - 1) })
}

fn deep_call(levels: usize) -> String {
    json!({"id": "c", "name": "n", "arguments": deep_arguments(levels)}).to_string()
}

#[test]
fn a_reply_nested_past_the_readers_limit_is_refused_by_the_cli_and_the_log_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let log_arg = log.to_str().unwrap();
    let first = cli(&["assistant", "--session", log_arg, "--text", "hello"]);
    assert!(first.status.success());
    let before = std::fs::read(&log).unwrap();
    // 123 arrays: accepted by the argument's parser, 128 levels once inside the event.
    let out = cli(&[
        "assistant",
        "--session",
        log_arg,
        "--tool-call",
        &deep_call(123),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "session event \"assistant/message\" nests more than 127 levels deep at /data/message/content/0/arguments/a/0/0/0/0/0/0/…, deeper than a session log can be read back"
        ),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&log).unwrap(), before, "nothing was written");
    assert_eq!(reopens(&log), 1);
    // The deepest reply that fits is accepted and reads back.
    let out = cli(&[
        "assistant",
        "--session",
        log_arg,
        "--tool-call",
        &deep_call(122),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    reopens(&log);
}

#[test]
fn a_reply_nested_past_the_readers_limit_is_refused_by_serve() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let mut served = Served::start(&[], &dir.path().join("cache"));
    let seq = served.ok("append_assistant", json!({"session": log, "text": "hello"}));
    assert_eq!(seq["seq"], 0);
    let message = served.err(
        "append_assistant",
        json!({"session": log, "tool_calls": [{"id": "c", "name": "n", "arguments": deep_arguments(123)}]}),
    );
    assert!(
        message.contains("nests more than 127 levels deep at /data/message/content/0/arguments/"),
        "{message}"
    );
    served.ok("close_session", json!({"session": log}));
    drop(served);
    assert_eq!(reopens(&log), 1);
}

#[test]
fn tool_parameters_nested_past_the_limit_fail_the_plugin_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let d = Deployment::new(&format!(
        "[[plugin]]\nname = \"deep\"\nwasm = {:?}\nconfig = {{ mode = \"deep_tool\", in = \"tools\", depth = 125 }}\n",
        env!("GUEST_HOSTILE")
    ));
    let run = d.run(&[
        "step",
        "--config",
        d.config().to_str().unwrap(),
        "--session",
        log.to_str().unwrap(),
        "--user",
        "hi",
    ]);
    run.fails(
        1,
        &[
            "plugin \"deep\" export \"tools\" (global)",
            "tool \"hostile\": parameters nest more than 122 levels deep (at /default/0/0/0/0/0/0/0/0/0/0/0/…), deeper than a session log can hold",
        ],
    );
    assert!(!log.exists(), "a failed step writes nothing");
}

#[test]
fn an_mcp_servers_schema_too_deep_for_the_log_leaves_out_that_tool_only() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    assert!(crate::integration::mcp::client::python_mcp_available());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let d = Deployment::new(&format!(
        "[host]\nmcp_provider = {provider:?}\n\n[[scope]]\nname = \"agent:1\"\n\n\
         [[mcp]]\nname = \"fx\"\ncommand = {python:?}\nscope = \"agent:1\"\ntimeout_ms = 20000\n\
         args = [{server:?}, \"--instructions\", \"Deep.\", \"--deep-schema\", \"120\"]\n",
        provider = env!("GUEST_MCP_INSTRUCTIONS"),
        python = crate::integration::mcp::client::python(),
        server = crate::integration::mcp::client::fixtures().join("server.py"),
    ));
    let run = d.run(&[
        "step",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:1",
        "--session",
        log.to_str().unwrap(),
        "--user",
        "hi",
    ]);
    let request: Value = serde_json::from_str(run.ok()).unwrap();
    let names: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(names.iter().any(|n| n.contains("echo")), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("deep")), "{names:?}");
    assert!(
        run.stderr.contains("MCP server \"fx\": tool \"deep\" left out: its inputSchema nests more than 122 levels deep"),
        "{}",
        run.stderr
    );
    reopens(&log);
}

/// Any JSON value, shallow or deep, big numbers, odd strings.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(json!(-0.0)),
        "\\PC*".prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    let shallow = leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\u{e9}\u{4e2d}\u{1f600}]{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    // And deep ones, around the limit, with a shallow value at the bottom.
    let deep = (110usize..135, shallow.clone()).prop_map(|(levels, bottom)| {
        let mut value = bottom;
        for i in 0..levels {
            value = if i % 2 == 0 {
                Value::Array(vec![value])
            } else {
                json!({ "k": value })
            };
        }
        value
    });
    prop_oneof![3 => shallow, 2 => deep]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever an append is handed is refused before the append, or another process reads
    /// it back identically.
    #[test]
    fn an_append_is_refused_or_reads_back_identically(value in any_json()) {
        // Arguments are an object; the value of any shape and depth inside it.
        let arguments = json!({ "v": value });
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.jsonl");
        let (mut session, _) = Session::open(&log).unwrap();
        let reply = AssistantReply::default().with_tool_calls(vec![ToolCall::new("c", "n", arguments.clone())]);
        let event = prompt_host::session::assistant_event(&session, &reply).unwrap();
        let appended = session.append(event).is_ok();
        let events = session.events().len();
        drop(session);
        if !appended {
            prop_assert_eq!(events, 0);
            prop_assert!(!log.exists() || std::fs::read(&log).unwrap().is_empty());
            return Ok(());
        }
        prop_assert_eq!(reopens(&log), 1);
        let text = std::fs::read_to_string(&log).unwrap();
        let line: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        prop_assert_eq!(&line["data"]["message"]["content"][0]["arguments"], &arguments);
    }
}

/// A plugin's tool parameters of any depth: the step fails naming the tool, or the log's
/// header holds them exactly and another process rebuilds the request from it — in a log
/// file and in a SQLite database alike.
#[test]
fn tool_parameters_of_any_depth_are_refused_or_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = dir.path().join("sessions.db");
    let depths = [0usize, 60, 119, 120, 121, 122, 126, 127, 130];
    let names = depths.iter().flat_map(|depth| {
        [
            (*depth, dir.path().join(format!("log-{depth}.jsonl"))),
            (
                *depth,
                std::path::PathBuf::from(format!("sqlite:{}#{depth}", db.display())),
            ),
        ]
    });
    for (depth, log) in names {
        let prompt = PromptConfig::default().include_harness_identity(false);
        let host = Host::new(
            prompt,
            RuntimeConfig::with_cache_dir(dir.path().join("cache")),
        )
        .unwrap();
        let config = json!({"mode": "deep_tool", "in": "tools", "depth": depth});
        let plugin = host
            .load_plugin(
                PluginSpec::new("deep").config(config),
                std::path::Path::new(env!("GUEST_HOSTILE")),
            )
            .unwrap();
        host.attach(plugin);
        let (mut session, _) = Session::open(&log).unwrap();
        let options = StepOptions::default().user_texts(vec!["hi".into()]);
        let stepped =
            runtime.block_on(host.step(&mut session, None, prompt_host::Facts::new(), &options));
        drop(session);
        // The parameters are `{"type":"object","default":<depth arrays>}`: depth + 1 levels.
        if depth + 1 > prompt_host::session::MAX_TOOL_PARAMETERS_DEPTH {
            let e = stepped.expect_err("too deep");
            assert!(
                e.to_string().contains("tool \"hostile\": parameters"),
                "{depth}: {e}"
            );
            let written = Session::read(&log).map_or(0, |(events, _)| events.len());
            assert_eq!(written, 0, "{depth}: a failed step writes nothing");
            continue;
        }
        let (_, outcome) = stepped.unwrap_or_else(|e| panic!("{depth}: {e}"));
        // Another process rebuilds the request from what the store holds.
        let out = cli(&["replay", "--session", log.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{depth}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let replayed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            replayed,
            serde_json::to_value(&outcome.request).unwrap(),
            "{depth}"
        );
        assert_eq!(
            replayed["tools"][0]["function"]["parameters"]["default"],
            nested(depth)
        );
    }
}

#[test]
fn an_append_past_a_file_size_limit_fails_cleanly_and_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let log_arg = log.to_str().unwrap();
    assert!(cli(&["assistant", "--session", log_arg, "--text", "hello"])
        .status
        .success());
    let before = std::fs::read(&log).unwrap();
    // 8 blocks of 512 bytes: a 20 KB reply crosses the limit.
    let text = "x".repeat(20_000);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -f 8 && exec "$0" assistant --session "$1" --text "$2""#)
        .arg(bin())
        .arg(log_arg)
        .arg(&text)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "not killed by SIGXFSZ: {:?}",
        out.status
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("File too large"), "{stderr}");
    assert_eq!(
        std::fs::read(&log).unwrap(),
        before,
        "the partial write was rolled back"
    );
    assert_eq!(reopens(&log), 1);
}

#[test]
fn a_reply_of_100k_tool_calls_is_checked_and_a_repeated_id_found() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let (mut session, _) = Session::open(&log).unwrap();
    let host = Host::new(PromptConfig::default(), RuntimeConfig::without_cache()).unwrap();
    let calls = |from: usize, n: usize| -> Vec<ToolCall> {
        (from..from + n)
            .map(|i| ToolCall::new(format!("call-{i}"), "n", json!({})))
            .collect()
    };
    let first = AssistantReply::default().with_tool_calls(calls(0, 50_000));
    host.append_assistant(&mut session, &first).unwrap();
    // A second reply repeating an id of the first, at its very end.
    let mut second = calls(50_000, 50_000);
    second.push(ToolCall::new("call-49999", "n", json!({})));
    let e = host
        .append_assistant(
            &mut session,
            &AssistantReply::default().with_tool_calls(second),
        )
        .unwrap_err();
    assert!(
        e.to_string().contains(
            "tool call id \"call-49999\" is already used (by the assistant message at seq 0)"
        ),
        "{e}"
    );
    assert_eq!(session.events().len(), 1);
}

#[test]
fn a_log_of_many_appends_and_replacements_opens() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    // Written as a hand-edited log would be: 20,000 user messages, each replaced once.
    let n = 20_000u64;
    let mut text = String::from("{\"prompt-host\":\"session-log\",\"version\":1}\n");
    let message = |seq: u64, op: Value, sources: Option<Value>| {
        let mut event = json!({
            "type": "user/message", "seq": seq, "time": 0, "surfaceOp": op,
            "data": {"message": {"id": format!("m{seq}"), "role": "user", "content": [{"type": "text", "text": "t"}]}},
        });
        if let Some(s) = sources {
            event["sourceEventSeqs"] = s;
        }
        event.to_string() + "\n"
    };
    for seq in 0..n {
        text.push_str(&message(seq, json!("append"), None));
    }
    for i in 0..n {
        let seq = n + i;
        text.push_str(&message(
            seq,
            json!({"op": "replace", "startSeq": i, "endSeq": i}),
            Some(json!([i])),
        ));
    }
    std::fs::write(&log, text).unwrap();
    let (session, report) = Session::open(&log).unwrap();
    assert_eq!(report.events, 2 * n as usize);
    assert_eq!(session.surface().len(), n as usize);
    assert_eq!(session.surface().nodes()[0], n);
    assert_eq!(session.surface().replace_generation(), n);
}

#[test]
fn a_step_with_5000_user_messages_is_one_durable_write() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let host = Host::new(PromptConfig::default(), RuntimeConfig::without_cache()).unwrap();
    let (mut session, _) = Session::open(&log).unwrap();
    let options =
        StepOptions::default().user_texts((0..5000).map(|i| format!("message {i}")).collect());
    let (_, outcome) = runtime
        .block_on(host.step(&mut session, None, prompt_host::Facts::new(), &options))
        .unwrap();
    assert_eq!(
        session.durable_writes(),
        1,
        "a step's events are written together"
    );
    assert_eq!(outcome.request.messages().len(), 5001);
    drop(session);
    assert!(reopens(&log) > 5000);
    // Cancelled before it writes, a step writes nothing.
    let (mut session, _) = Session::open(&log).unwrap();
    let before = std::fs::read(&log).unwrap();
    let signal = prompt_host::prompt::CancelToken::new();
    signal.cancel();
    let facts = prompt_host::Facts::new().signal(signal);
    assert!(runtime
        .block_on(host.step(&mut session, None, facts, &options))
        .is_err());
    assert_eq!(std::fs::read(&log).unwrap(), before);
}
