//! docs/protocol.md's rules at the edges, through a real `prompt-host serve`: a scope is bound
//! once, a plugin error names its tool provider or listener, a null id is refused and a
//! fractional one echoed, the server exits once its output is closed, and a step that is
//! cancelled or fails leaves a new log alone.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::support::cli::{bin, Deployment};
use crate::integration::support::serve::Served;

/// A server whose `--config` declares `agent:1`.
fn served() -> (Deployment, Served) {
    let d = Deployment::new("[[scope]]\nname = \"agent:1\"\n");
    let served = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    (d, served)
}

/// The error object of a response that must be one.
fn error_of(response: &Value) -> &Value {
    assert!(response.get("result").is_none(), "{response}");
    &response["error"]
}

#[test]
fn a_scope_is_bound_once() {
    let (_d, mut s) = served();
    s.ok("bind_scope", json!({"scope": "a"}));
    s.ok(
        "load_plugin",
        json!({"name": "pa", "wasm": env!("GUEST_DECLARE"), "scope": "a",
        "config": {"sections": [{"name": "from-a", "order": 5, "text": "From a."}]}}),
    );
    let refused = |s: &mut Served, params: Value| {
        let response = s.call("bind_scope", params);
        let error = error_of(&response).clone();
        assert_eq!(error["code"], -32000, "{response}");
        error
    };
    // A root scope, then under a parent: refused, and it inherits nothing.
    s.ok("bind_scope", json!({"scope": "x"}));
    let error = refused(&mut s, json!({"scope": "x", "parent": "a"}));
    assert_eq!(error["data"], json!({"kind": "scope", "scope": "x"}));
    assert_eq!(
        error["message"],
        "bind_scope \"x\": scope: scope key is already bound: \"x\" is a root scope (a scope \
         is bound once)"
    );
    let prompt = s.ok("render", json!({"scope": "x"}))["prompt"].clone();
    assert!(!prompt.as_str().unwrap().contains("From a."), "{prompt}");
    // A root scope again: refused too.
    refused(&mut s, json!({"scope": "x"}));
    // A child, then as a root, under another parent or under the same one: refused, and
    // it stays a child of its parent.
    s.ok("bind_scope", json!({"scope": "y", "parent": "a"}));
    for params in [
        json!({"scope": "y"}),
        json!({"scope": "y", "parent": "x"}),
        json!({"scope": "y", "parent": "a"}),
    ] {
        let error = refused(&mut s, params);
        assert_eq!(error["data"], json!({"kind": "scope", "scope": "y"}));
        assert_eq!(
            error["message"],
            "bind_scope \"y\": scope: scope key is already bound to a parent: \"y\" is a child \
             of \"a\" (a scope is bound once)"
        );
    }
    let prompt = s.ok("render", json!({"scope": "y"}))["prompt"].clone();
    assert!(prompt.as_str().unwrap().contains("From a."), "{prompt}");
    // A link that would close a cycle is reported as one.
    let error = refused(&mut s, json!({"scope": "a", "parent": "y"}));
    assert_eq!(
        error["message"],
        "bind_scope \"a\": scope: scope parent link would form a cycle"
    );
    // A scope of --config is bound already.
    let error = refused(&mut s, json!({"scope": "agent:1", "parent": "a"}));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("\"agent:1\" is a root scope"),
        "{error}"
    );
    assert_eq!(s.ok("scopes", json!({})), json!(["a", "agent:1", "x", "y"]));
}

#[test]
fn plugin_errors_name_the_tool_provider_and_the_listener() {
    let (_d, mut s) = served();
    s.ok("bind_scope", json!({"scope": "t"}));
    s.ok(
        "load_plugin",
        json!({"name": "trap", "wasm": env!("GUEST_HOSTILE"), "scope": "t",
        "config": {"mode": "trap", "in": "tools"}}),
    );
    let failed = s.call("assemble", json!({"scope": "t"}));
    let error = error_of(&failed);
    assert_eq!(
        error["data"],
        json!({"kind": "plugin", "scope": "t", "plugin": "trap", "export": "tools", "tool_provider": "hostile"})
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("tool provider \"hostile\" (plugin \"trap\", scope \"t\") failed"),
        "{error}"
    );
    s.ok("bind_scope", json!({"scope": "l"}));
    s.ok(
        "load_plugin",
        json!({"name": "lst", "wasm": env!("GUEST_DECLARE"), "scope": "l",
        "config": {"listener": {"key": "L", "steps": [{"fail": "stop"}]}}}),
    );
    let failed = s.call("assemble", json!({"scope": "l"}));
    let error = error_of(&failed);
    assert_eq!(
        error["data"],
        json!({"kind": "plugin", "scope": "l", "plugin": "lst", "export": "on-assemble", "listener": "L"})
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("listener \"L\" (plugin \"lst\", scope \"l\") failed"),
        "{error}"
    );
}

#[test]
fn a_null_id_is_an_invalid_request_and_a_fractional_id_is_echoed() {
    let (_d, mut s) = served();
    // Not run: the scope is not bound.
    s.send_line(
        br#"{"jsonrpc": "2.0", "id": null, "method": "bind_scope", "params": {"scope": "ghost"}}"#,
    );
    let refused = s.answer();
    assert_eq!(refused["id"], Value::Null, "{refused}");
    assert_eq!(error_of(&refused)["code"], -32600, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("null is not an id"),
        "{refused}"
    );
    // In a batch: the same answer in its place.
    s.send_line(
        br#"[{"jsonrpc": "2.0", "id": null, "method": "scopes"}, {"jsonrpc": "2.0", "id": 2, "method": "scopes"}]"#,
    );
    let batch = s.answer();
    assert_eq!(batch[0]["id"], Value::Null, "{batch}");
    assert_eq!(batch[0]["error"]["code"], -32600, "{batch}");
    assert_eq!(
        batch[1],
        json!({"jsonrpc": "2.0", "id": 2, "result": ["agent:1"]})
    );
    // Any number is an id, echoed as sent.
    s.send_line(br#"{"jsonrpc": "2.0", "id": 1.5, "method": "scopes"}"#);
    assert_eq!(
        s.answer(),
        json!({"jsonrpc": "2.0", "id": 1.5, "result": ["agent:1"]})
    );
}

#[test]
fn the_server_exits_once_its_output_is_closed_without_more_input() {
    let d = Deployment::new("");
    let mut child = Command::new(bin())
        .arg("serve")
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn prompt-host serve");
    drop(child.stdout.take());
    // Its input stays open: only the failed answer can tell the server to stop.
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"scopes\"}\n")
        .expect("write request");
    stdin.flush().expect("flush");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running 10 s after its output closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!(
        "exited {:.0} ms after the request",
        started.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(status.code(), Some(0));
    drop(stdin);
}

#[test]
fn a_step_that_is_cancelled_or_fails_leaves_a_new_log_alone() {
    let (d, mut s) = served();
    s.ok("bind_scope", json!({"scope": "slow"}));
    s.ok(
        "load_plugin",
        json!({"name": "stuck", "wasm": env!("GUEST_HOSTILE"), "scope": "slow",
        "config": {"mode": "sleep", "in": "section"}, "limits": {"call_timeout_ms": 10000}}),
    );
    s.ok("bind_scope", json!({"scope": "bad"}));
    s.ok(
        "load_plugin",
        json!({"name": "bad", "wasm": env!("GUEST_DECLARE"), "scope": "bad",
        "config": {"sections": [{"name": "broken", "order": 1, "text": {"fail": "down"}}]}}),
    );
    let cancelled = |s: &mut Served, session: &str| {
        let id = format!("step {session}");
        s.send_line(json!({"jsonrpc": "2.0", "id": id, "method": "step", "params": {"session": session, "scope": "slow", "user": ["hi"]}}).to_string().as_bytes());
        std::thread::sleep(Duration::from_millis(200));
        s.send_line(
            json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}})
                .to_string()
                .as_bytes(),
        );
        let answer = s.answer();
        assert_eq!(answer["id"], json!(id), "{answer}");
        assert_eq!(error_of(&answer)["code"], -32800, "{answer}");
    };
    let failed = |s: &mut Served, session: &str| {
        let answer = s.call(
            "step",
            json!({"session": session, "scope": "bad", "user": ["hi"]}),
        );
        assert_eq!(error_of(&answer)["data"]["kind"], "plugin", "{answer}");
    };
    // A missing log: no file after a cancelled or failed step, nor after a replay.
    let missing = d.path("new.jsonl");
    let missing = missing.to_str().unwrap();
    cancelled(&mut s, missing);
    assert!(
        !d.path("new.jsonl").exists(),
        "a cancelled step created the log"
    );
    failed(&mut s, missing);
    assert!(
        !d.path("new.jsonl").exists(),
        "a failed step created the log"
    );
    let replay = s.call("request", json!({"session": missing}));
    assert_eq!(error_of(&replay)["data"]["kind"], "replay", "{replay}");
    assert!(!d.path("new.jsonl").exists(), "a replay created the log");
    // An empty file stays empty.
    std::fs::write(d.path("empty.jsonl"), b"").unwrap();
    let empty = d.path("empty.jsonl");
    let empty = empty.to_str().unwrap();
    cancelled(&mut s, empty);
    failed(&mut s, empty);
    assert_eq!(std::fs::read(empty).unwrap(), b"");
    // The first step that succeeds creates the log, header first.
    let first = s.ok("step", json!({"session": missing, "user": ["hi"]}));
    assert_eq!(first["step"], 0);
    let text = std::fs::read_to_string(missing).unwrap();
    assert_eq!(
        text.lines().next(),
        Some(prompt_host::session::HEADER),
        "{text}"
    );
    // On an existing log, a cancelled or failed step changes no byte.
    let before = std::fs::read(missing).unwrap();
    cancelled(&mut s, missing);
    failed(&mut s, missing);
    assert_eq!(std::fs::read(missing).unwrap(), before);
    assert_eq!(
        s.ok("step", json!({"session": missing}))["step"],
        1,
        "the log is still usable"
    );
}
