//! The protocol of docs/protocol.md through a real `prompt-host serve`: a conversation and its
//! replay, retry, cancellation with `$/cancelRequest` while another request is answered,
//! structured error data, method discovery and notifications.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

fn served() -> (Deployment, Served) {
    let d = Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\npersona = \"You help on {{{{model}}}}.\"\n\n\
         [[scope]]\nname = \"agent:1\"\n\n\
         [[plugin]]\nname = \"tools\"\nwasm = {}\nscope = \"agent:1\"\n\
         config = {{ sections = [{{ name = \"count\", order = 10, text = {{ dynamic = \"call ${{call}}\" }} }}], tools = [{{ schemas = [{{ name = \"ls\", description = \"List.\" }}] }}] }}\n",
        Value::String(env!("GUEST_DECLARE").into())
    ));
    let served = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    (d, served)
}

#[test]
fn a_conversation_its_replay_and_a_retry() {
    let (d, mut s) = served();
    let session = d.path("s.jsonl");
    let session = session.to_str().unwrap();
    let step = |s: &mut Served, user: Option<&str>| {
        let mut params = json!({"session": session, "scope": "agent:1", "facts": {"model": "m1"}});
        if let Some(u) = user {
            params["user"] = json!([u]);
        }
        s.ok("step", params)
    };
    let first = step(&mut s, Some("List the files."));
    assert_eq!(first["step"], 0);
    assert_eq!(first["header"], "initial");
    assert_eq!(
        first["request"]["messages"],
        json!([{"role": "system", "content": "You help on m1.\n\ncall 1"}, {"role": "user", "content": "List the files."}])
    );
    let seq = s.ok("append_assistant", json!({"session": session, "tool_calls": [{"id": "call_1", "name": "ls", "arguments": {"path": "."}}]}));
    assert!(seq["seq"].as_u64().is_some());
    let refused = s.call(
        "step",
        json!({"session": session, "scope": "agent:1", "facts": {"model": "m1"}}),
    );
    assert_eq!(
        refused["error"]["data"]["kind"], "conversation",
        "{refused}"
    );
    assert_eq!(refused["error"]["data"]["session"], session);
    s.ok(
        "append_tool_result",
        json!({"session": session, "call_id": "call_1", "content": "README.md"}),
    );
    let second = step(&mut s, None);
    let sent = second["request"]["messages"].as_array().unwrap().clone();
    assert_eq!(
        sent[2..].to_vec(),
        vec![
            // A reply of tool calls alone has no content key (never `content: null`).
            json!({"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}]}),
            json!({"role": "tool", "content": "README.md", "tool_call_id": "call_1"}),
        ]
    );
    // A retry with another model: no plugin call ("call 2" stays), a new system prompt.
    let retried = s.ok(
        "retry",
        json!({"session": session, "facts": {"model": "m2"}}),
    );
    assert_eq!(retried["step"], 2);
    assert_eq!(retried["commits"], 1);
    // Not an in-history route: the new prompt replaces the head.
    assert_eq!(
        retried["request"]["messages"][0]["content"],
        "You help on m2.\n\ncall 2"
    );
    // Every past request, rebuilt from the log.
    for (n, returned) in [(0, &first), (1, &second), (2, &retried)] {
        let replayed = s.ok("request", json!({"session": session, "step": n}));
        assert_eq!(replayed["request"], returned["request"], "step {n}");
    }
    let newest = s.ok("request", json!({"session": session}));
    assert_eq!(newest["step"], 2);
    let missing = s.call("request", json!({"session": session, "step": 9}));
    assert_eq!(missing["error"]["data"]["kind"], "replay");
    assert_eq!(
        s.ok("close_session", json!({"session": session})),
        json!({"closed": true})
    );
    // A closed log can be replayed (it is opened for the replay only), and stepped again:
    // the new instance's first header is `resume`.
    assert_eq!(
        s.ok("request", json!({"session": session, "step": 1}))["request"],
        second["request"]
    );
    let resumed = step(&mut s, Some("Again."));
    assert_eq!(resumed["header"], "resume");
}

#[test]
fn cancel_request_stops_busy_and_sleeping_plugins_while_others_are_answered() {
    let (d, mut s) = served();
    for (i, mode) in ["loop", "sleep"].iter().enumerate() {
        let scope = format!("agent:stuck{i}");
        s.ok("bind_scope", json!({"scope": scope}));
        s.ok(
            "load_plugin",
            json!({"name": "stuck", "wasm": env!("GUEST_HOSTILE"), "scope": scope,
            "config": {"mode": mode, "in": "section"}, "limits": {"call_timeout_ms": 10000}}),
        );
        let session = d.path(&format!("stuck{i}.jsonl"));
        let session = session.to_str().unwrap().to_string();
        // An existing log: its bytes must not change.
        s.ok(
            "step",
            json!({"session": session, "facts": {"model": "m"}, "user": ["hi"]}),
        );
        let before = std::fs::read(&session).unwrap();
        let id = format!("stuck-{mode}");
        s.send_line(json!({"jsonrpc": "2.0", "id": id, "method": "step", "params": {"session": session, "scope": scope, "user": ["more"]}}).to_string().as_bytes());
        std::thread::sleep(Duration::from_millis(200));
        // Another scope is answered while the step runs.
        s.send_line(json!({"jsonrpc": "2.0", "id": "other", "method": "render", "params": {"scope": "agent:1", "facts": {"model": "m"}}}).to_string().as_bytes());
        let other = s.answer();
        assert_eq!(other["id"], "other", "{other}");
        assert!(other["result"]["prompt"].is_string());
        let cancelled_at = Instant::now();
        s.send_line(
            json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}})
                .to_string()
                .as_bytes(),
        );
        let answer = s.answer();
        let latency = cancelled_at.elapsed();
        assert_eq!(answer["id"], json!(id), "{answer}");
        assert_eq!(answer["error"]["code"], -32800, "{answer}");
        assert_eq!(answer["error"]["data"]["kind"], "cancelled");
        eprintln!(
            "cancel → error through serve ({mode}): {:.2} ms",
            latency.as_secs_f64() * 1e3
        );
        assert!(latency < Duration::from_secs(2), "{latency:?}");
        assert_eq!(
            std::fs::read(&session).unwrap(),
            before,
            "{mode}: the log changed"
        );
    }
    // Cancelling what already finished does nothing; with an id, it is answered.
    assert_eq!(
        s.ok("$/cancelRequest", json!({"id": "long gone"})),
        json!({})
    );
    s.ok("plugins", json!({}));
}

#[test]
fn errors_carry_structured_data_and_unknown_methods_list_the_methods() {
    let (_d, mut s) = served();
    let nope = s.call("nope", json!({}));
    assert_eq!(nope["error"]["code"], -32601);
    assert!(
        nope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("methods: describe, bind_scope"),
        "{nope}"
    );
    assert!(nope["error"]["data"]["methods"]
        .as_array()
        .unwrap()
        .contains(&json!("append_tool_result")));
    let described = s.ok("describe", json!({}));
    assert_eq!(described["protocol"], "1.1");
    assert_eq!(described["methods"], nope["error"]["data"]["methods"]);
    let unknown = s.call("render", json!({"scope": "agnet:1"}));
    assert_eq!(
        unknown["error"]["data"],
        json!({"kind": "unknown-scope", "scope": "agnet:1", "suggestion": "agent:1"})
    );
    let params = s.call("render", json!({"scope": "agent:1", "fact": {}}));
    assert_eq!(params["error"]["code"], -32602);
    assert_eq!(params["error"]["data"]["kind"], "invalid-params");
    // A render error names the section, the variable and the plugin that registered it.
    let no_model = s.call("render", json!({"scope": "agent:1"}));
    assert_eq!(
        no_model["error"]["data"],
        json!({"kind": "render", "scope": "agent:1", "section": "deployment:persona", "variable": "model", "plugin": "prompt-host"})
    );
    // A plugin failure names plugin, export, entry and scope.
    s.ok("bind_scope", json!({"scope": "agent:bad"}));
    s.ok(
        "load_plugin",
        json!({"name": "bad", "wasm": env!("GUEST_DECLARE"), "scope": "agent:bad",
        "config": {"sections": [{"name": "broken", "order": 1, "text": {"fail": "down"}}]}}),
    );
    let failed = s.call("assemble", json!({"scope": "agent:bad"}));
    assert_eq!(
        failed["error"]["data"],
        json!({"kind": "plugin", "scope": "agent:bad", "plugin": "bad", "export": "section-text", "section": "broken"})
    );
    let init = s.call(
        "load_plugin",
        json!({"name": "worse", "wasm": env!("GUEST_DECLARE"), "config": {"sections": 7}}),
    );
    assert_eq!(
        init["error"]["data"],
        json!({"kind": "plugin", "plugin": "worse", "export": "init"})
    );
}

#[test]
fn subscribed_notifications_arrive_between_responses() {
    let (_d, mut s) = served();
    s.ok(
        "subscribe",
        json!({"log": "info", "plugins": true, "registry": true}),
    );
    s.ok("bind_scope", json!({"scope": "agent:n"}));
    let config = json!({"listener": {"key": "l", "steps": [{"record_sections": true}, {"next": true}]},
        "sections": [{"name": "flaky", "order": 1, "text": {"fail": "down"}}]});
    s.send_line(json!({"jsonrpc": "2.0", "id": "load", "method": "load_plugin", "params": {"name": "noisy", "wasm": env!("GUEST_DECLARE"), "scope": "agent:n", "config": config, "on_error": "skip"}}).to_string().as_bytes());
    s.send_line(b"");
    let mut seen: Vec<Value> = Vec::new();
    let mut loaded = false;
    while !loaded {
        let message = s.answer();
        loaded = message["id"] == "load";
        seen.push(message);
    }
    assert!(
        seen.iter().any(|m| m["method"] == "registry/changed"),
        "{seen:?}"
    );
    s.send_line(json!({"jsonrpc": "2.0", "id": "r", "method": "render", "params": {"scope": "agent:n", "facts": {"model": "m"}}}).to_string().as_bytes());
    let mut rendered = false;
    while !rendered {
        let message = s.answer();
        rendered = message["id"] == "r";
        seen.push(message);
    }
    let log = seen
        .iter()
        .find(|m| m["method"] == "log")
        .expect("a log notification");
    assert_eq!(log["params"]["plugin"], "noisy");
    assert_eq!(log["params"]["stream"], "info");
    let skipped = seen
        .iter()
        .find(|m| m["method"] == "plugin/skipped")
        .expect("a skip notification");
    assert!(skipped["params"]["message"]
        .as_str()
        .unwrap()
        .contains("left out of this assembly"));
    // Unsubscribed: no more notifications.
    s.ok("subscribe", json!({}));
    s.ok(
        "render",
        json!({"scope": "agent:n", "facts": {"model": "m"}}),
    );
}
