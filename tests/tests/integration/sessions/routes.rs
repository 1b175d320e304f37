//! Routes through a real `prompt-host serve`, the command line and the library: for each
//! provider API a conversation of six steps (tool calls with arguments as JSON text and as
//! objects, a failed tool call, a reasoning reply, a system prompt that changes every step,
//! a retry with another model), its requests in the route's own shape, every step replayed
//! from the log alone; and bad replies refused with nothing appended.

use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

/// A deployment whose system prompt changes on every step (`call N` counts the plugin's
/// calls), so every step carries a system update, and with one tool, `ls`.
fn deployment() -> Deployment {
    Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\npersona = \"You help on {{{{model}}}}.\"\n\n\
         [[scope]]\nname = \"agent:1\"\n\n\
         [[plugin]]\nname = \"tools\"\nwasm = {}\nscope = \"agent:1\"\n\
         config = {{ sections = [{{ name = \"count\", order = 10, text = {{ dynamic = \"call ${{call}}\" }} }}], tools = [{{ schemas = [{{ name = \"ls\", description = \"List.\" }}] }}] }}\n",
        Value::String(env!("GUEST_DECLARE").into())
    ))
}

fn served(d: &Deployment) -> Served {
    Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    )
}

/// The lines of a log (nothing may be appended by a refused request).
fn lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

fn events_of(path: &std::path::Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == kind)
        .collect()
}

/// One route's conversation: its name, the route spec the first step gives, the model of
/// the retry, and its provider's replies.
struct Case {
    route: &'static str,
    spec: Value,
    model: &'static str,
    retry_model: &'static str,
    /// A reply with reasoning and a tool call `call_1` whose arguments are JSON text.
    thinking_tool_call: Value,
    /// A text reply, in the provider's shape.
    text: fn(&str) -> Value,
    /// The id the provider gave the first call.
    first_call: &'static str,
}

/// The provider replies these tests feed the routes, from `tests/fixtures/replies/routes.json`,
/// where the Python suite checks each against the official SDK's response model
/// (`clients/python/tests/test_reply_models.py`): a reply written here that the SDK would
/// reject fails there.
fn reply(name: &str) -> Value {
    reply_with_text(name, "")
}

/// [`reply`], its `"<TEXT>"` replaced by `text`.
fn reply_with_text(name: &str, text: &str) -> Value {
    static REPLIES: OnceLock<Value> = OnceLock::new();
    let replies = REPLIES.get_or_init(|| {
        serde_json::from_str(include_str!("../../../fixtures/replies/routes.json")).unwrap()
    });
    let reply = &replies["replies"][name]["reply"];
    assert!(!reply.is_null(), "no reply {name:?} in the fixture");
    fn fill(value: &Value, text: &str) -> Value {
        match value {
            Value::String(s) if s == "<TEXT>" => Value::String(text.to_owned()),
            Value::Array(items) => items.iter().map(|v| fill(v, text)).collect(),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| (k.clone(), fill(v, text)))
                .collect(),
            other => other.clone(),
        }
    }
    fill(reply, text)
}

fn chat_text(text: &str) -> Value {
    reply_with_text("chat-completions text", text)
}

fn anthropic_text(text: &str) -> Value {
    reply_with_text("anthropic-messages text", text)
}

fn responses_text(text: &str) -> Value {
    reply_with_text("openai-responses text", text)
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            route: "chat-completions",
            spec: json!("chat-completions"),
            model: "deepseek-chat",
            retry_model: "deepseek-reasoner",
            thinking_tool_call: reply("chat-completions thinking tool call"),
            text: chat_text,
            first_call: "call_1",
        },
        Case {
            route: "anthropic-messages",
            spec: json!({"name": "anthropic-messages", "options": {"max_tokens": 1024}}),
            model: "claude-opus-4-8",
            retry_model: "claude-opus-4-8-20261101",
            thinking_tool_call: reply("anthropic-messages thinking tool call"),
            text: anthropic_text,
            first_call: "toolu_1",
        },
        Case {
            route: "anthropic-messages",
            spec: json!({"name": "anthropic-messages", "options": {"max_tokens": 512, "temperature": 0.2}}),
            model: "claude-sonnet-4-5",
            retry_model: "claude-haiku-4-5",
            thinking_tool_call: reply(
                "anthropic-messages redacted thinking tool call (the message alone)",
            ),
            text: anthropic_text,
            first_call: "toolu_1",
        },
        Case {
            route: "openai-responses",
            spec: json!({"name": "openai-responses", "options": {"max_output_tokens": 2048}}),
            model: "gpt-5.2",
            retry_model: "gpt-5.2-mini",
            thinking_tool_call: reply("openai-responses thinking tool call"),
            text: responses_text,
            first_call: "call_1",
        },
    ]
}

/// Every message of a request, whichever key holds them.
fn turns(request: &Value) -> &Vec<Value> {
    request
        .get("messages")
        .or_else(|| request.get("input"))
        .and_then(Value::as_array)
        .expect("messages or input")
}

/// Runs one case through serve; the six step results.
fn converse(s: &mut Served, session: &str, case: &Case) -> Vec<Value> {
    let facts = |model: &str| json!({"model": model});
    let mut steps = Vec::new();
    let step = |s: &mut Served, params: Value| s.ok("step", params);
    // 0: the user asks; the reply thinks and calls `ls` with arguments as JSON text.
    steps.push(step(
        s,
        json!({"session": session, "scope": "agent:1", "facts": facts(case.model),
               "route": case.spec, "user": ["List the files."]}),
    ));
    s.ok(
        "append_assistant",
        json!({"session": session, "reply": case.thinking_tool_call}),
    );
    s.ok(
        "append_tool_result",
        json!({"session": session, "call_id": case.first_call, "content": "ls: src: permission denied", "is_error": true}),
    );
    // 1: the route goes on without being named; the reply calls `ls` again, in the plain
    // form with arguments as an object.
    steps.push(step(
        s,
        json!({"session": session, "scope": "agent:1", "facts": facts(case.model)}),
    ));
    s.ok(
        "append_assistant",
        json!({"session": session, "tool_calls": [{"id": "call_2", "name": "ls", "arguments": {"path": "."}}]}),
    );
    s.ok(
        "append_tool_result",
        json!({"session": session, "call_id": "call_2", "content": "README.md\nsrc"}),
    );
    // 2: the reply is text.
    steps.push(step(
        s,
        json!({"session": session, "scope": "agent:1", "facts": facts(case.model)}),
    ));
    // 3: the provider failed; the step is retried with another model.
    steps.push(s.ok(
        "retry",
        json!({"session": session, "facts": facts(case.retry_model)}),
    ));
    s.ok(
        "append_assistant",
        json!({"session": session, "reply": (case.text)("A README and src.")}),
    );
    // 4, 5: two more turns of text.
    steps.push(step(
        s,
        json!({"session": session, "scope": "agent:1", "facts": facts(case.retry_model), "user": ["Thanks."]}),
    ));
    s.ok(
        "append_assistant",
        json!({"session": session, "reply": (case.text)("You are welcome.")}),
    );
    steps.push(step(
        s,
        json!({"session": session, "scope": "agent:1", "facts": facts(case.retry_model), "user": ["Bye."]}),
    ));
    steps
}

#[test]
fn each_route_carries_a_six_step_conversation_in_its_own_shape_and_replays_it() {
    let d = deployment();
    for (n, case) in cases().iter().enumerate() {
        // A server each: the plugin's call count starts at 1.
        let mut s = served(&d);
        let path = d.path(&format!("s{n}.jsonl"));
        let session = path.to_str().unwrap();
        let steps = converse(&mut s, session, case);
        let label = format!("{} on {}", case.route, case.model);
        // Every step: the route it was prepared for, the model it names, replayed exactly.
        for (i, step) in steps.iter().enumerate() {
            assert_eq!(step["route"]["name"], case.route, "{label} step {i}");
            let model = if i < 3 { case.model } else { case.retry_model };
            assert_eq!(step["request"]["model"], model, "{label} step {i}");
            let replayed = s.ok("request", json!({"session": session, "step": i}));
            assert_eq!(
                replayed["request"], step["request"],
                "{label}: replay of step {i}"
            );
        }
        // The route was logged when it changed: at the first step, and at the retry's model.
        let contexts = events_of(&path, "request/context");
        assert_eq!(contexts.len(), 2, "{label}: {contexts:?}");
        assert_eq!(contexts[0]["data"]["route"], case.route);
        assert_eq!(contexts[1]["data"]["model"], case.retry_model);
        // Usage was recorded with each provider reply.
        let replies = events_of(&path, "assistant/message");
        assert!(
            case.thinking_tool_call.get("usage").is_none()
                || replies[0]["data"]["usage"]["output_tokens"] == 5,
            "{label}: {:?}",
            replies[0]
        );
        let last = &steps[5];
        match case.route {
            "chat-completions" => assert_chat(last),
            "anthropic-messages" => {
                assert_anthropic(last, case.model.starts_with("claude-opus-4-8"))
            }
            _ => assert_responses(last),
        }
    }
}

fn assert_chat(step: &Value) {
    let request = &step["request"];
    let messages = turns(request);
    // Not in history by default: one system message, the newest prompt, first.
    let systems: Vec<&Value> = messages.iter().filter(|m| m["role"] == "system").collect();
    assert_eq!(systems.len(), 1, "{request}");
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[0]["content"],
        "You help on deepseek-reasoner.\n\ncall 5"
    );
    assert!(request.get("system").is_none() && request.get("instructions").is_none());
    // The provider's message back as it was sent (content null beside its tool calls), its
    // reasoning left out (chat-completions omits it unless asked).
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\"src\"}"}}]})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "content": "Error: ls: src: permission denied", "tool_call_id": "call_1"})
    );
    // The plain form's object arguments as the JSON text the API takes; no content key.
    assert_eq!(
        messages[4],
        json!({"role": "assistant", "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}]})
    );
    assert!(
        messages
            .iter()
            .all(|m| m.get("content") != Some(&Value::Null) || m.get("tool_calls").is_some()),
        "{request}"
    );
    assert!(
        messages
            .iter()
            .all(|m| m.get("reasoning_content").is_none()),
        "{request}"
    );
    assert_eq!(
        request["tools"],
        json!([{"type": "function", "function": {"name": "ls", "description": "List.", "parameters": {"type": "object", "properties": {}}}}])
    );
    assert_eq!(step["cache"]["breakpoints"], json!([]));
}

fn assert_anthropic(step: &Value, in_history: bool) {
    let request = &step["request"];
    let messages = turns(request);
    // The system prompt is top-level blocks; the first text stays while updates go into
    // history on Opus 4.8, the newest replaces it elsewhere.
    let system = request["system"].as_array().expect("system blocks");
    let in_messages: Vec<&Value> = messages.iter().filter(|m| m["role"] == "system").collect();
    if in_history {
        assert_eq!(system[0]["text"], "You help on claude-opus-4-8.\n\ncall 1");
        // Five updates; the retry's replaced the one it retried (no turn between them).
        // Each stands right after a user turn, before the next reply.
        assert_eq!(in_messages.len(), 4, "{request}");
        for (i, m) in messages.iter().enumerate() {
            if m["role"] == "system" {
                assert_eq!(messages[i - 1]["role"], "user", "{request}");
                assert!(
                    messages.get(i + 1).is_none_or(|n| n["role"] == "assistant"),
                    "{request}"
                );
            }
        }
    } else {
        assert_eq!(system.len(), 1, "{request}");
        assert_eq!(system[0]["text"], "You help on claude-haiku-4-5.\n\ncall 5");
        assert!(in_messages.is_empty(), "{request}");
    }
    assert!(request["max_tokens"].is_u64());
    // Thinking returned unchanged, the call's input an object; the error flagged.
    let first_reply = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    let blocks = first_reply["content"].as_array().unwrap();
    assert!(blocks[0]["type"] == "thinking" || blocks[0]["type"] == "redacted_thinking");
    if blocks[0]["type"] == "thinking" {
        assert_eq!(blocks[0]["signature"], "c2lnLTE=");
    }
    assert_eq!(
        blocks[1],
        json!({"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "src"}})
    );
    let results: Vec<&Value> = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2, "{request}");
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[0]["content"], "ls: src: permission denied");
    assert!(results[1].get("is_error").is_none());
    // Roles alternate between user and assistant once system messages are set aside.
    let roles: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert!(roles.windows(2).all(|w| w[0] != w[1]), "{roles:?}");
    // Two breakpoints: the end of the system prefix and the latest user turn.
    let breakpoints = step["cache"]["breakpoints"].as_array().unwrap();
    assert_eq!(breakpoints.len(), 2, "{step}");
    assert_eq!(
        breakpoints[0],
        json!({"at": "system", "index": system.len() - 1})
    );
    let marked = request.to_string().matches("cache_control").count();
    assert_eq!(marked, 2, "{request}");
    let at = breakpoints[1]["index"].as_u64().unwrap() as usize;
    assert_eq!(messages[at]["role"], "user");
    assert!(
        messages[at]["content"].as_array().unwrap().last().unwrap()["cache_control"].is_object()
    );
    // The previous reply's usage is shown beside them (cache reads included in input).
    assert_eq!(step["cache"]["last_usage"]["cached_input_tokens"], 16);
    assert_eq!(step["cache"]["last_usage"]["input_tokens"], 20);
}

fn assert_responses(step: &Value) {
    let request = &step["request"];
    let input = turns(request);
    // `instructions` keeps the first prompt; every update is a developer message in order.
    assert_eq!(request["instructions"], "You help on gpt-5.2.\n\ncall 1");
    let developer: Vec<&Value> = input.iter().filter(|m| m["role"] == "developer").collect();
    assert_eq!(developer.len(), 5, "{request}");
    assert_eq!(
        developer[4]["content"],
        "You help on gpt-5.2-mini.\n\ncall 5"
    );
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two directories."}]})
    );
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[2]["arguments"], "{\"path\":\"src\"}");
    let outputs: Vec<&Value> = input
        .iter()
        .filter(|m| m["type"] == "function_call_output")
        .collect();
    assert_eq!(
        outputs[0],
        &json!({"type": "function_call_output", "call_id": "call_1", "output": "Error: ls: src: permission denied"})
    );
    let plain = input
        .iter()
        .find(|m| m["call_id"] == "call_2" && m["type"] == "function_call")
        .unwrap();
    assert_eq!(plain["arguments"], "{\"path\":\".\"}");
    assert_eq!(
        request["tools"],
        json!([{"type": "function", "name": "ls", "description": "List.", "parameters": {"type": "object", "properties": {}}, "strict": false}])
    );
    assert!(request.get("messages").is_none());
}

#[test]
fn bad_replies_and_unknown_routes_are_refused_through_serve_with_nothing_appended() {
    let d = deployment();
    let mut s = served(&d);
    let refuse = |s: &mut Served,
                  path: &std::path::Path,
                  method: &str,
                  params: Value,
                  kind: &str,
                  message: &str| {
        let before = lines(path);
        let answer = s.call(method, params);
        assert_eq!(answer["error"]["data"]["kind"], kind, "{answer}");
        // A refused append names the log it was refused for.
        let expected = if kind == "conversation" {
            format!("session log {}: {message}", path.display())
        } else {
            message.to_string()
        };
        assert_eq!(answer["error"]["message"], expected.as_str(), "{answer}");
        assert_eq!(lines(path), before, "{method} appended to the log");
    };
    // An unknown route: nothing is written, not even the log's header.
    let path = d.path("unknown.jsonl");
    refuse(
        &mut s,
        &path,
        "step",
        json!({"session": path, "scope": "agent:1", "facts": {"model": "m"}, "route": "anthropic-message", "user": ["hi"]}),
        "route",
        "unknown route \"anthropic-message\" (did you mean \"anthropic-messages\"?); routes: chat-completions, anthropic-messages, openai-responses",
    );
    assert!(!path.exists());
    refuse(
        &mut s,
        &path,
        "step",
        json!({"session": path, "scope": "agent:1", "facts": {"model": "claude-opus-4-8"}, "route": "anthropic-messages", "user": ["hi"]}),
        "route",
        "route anthropic-messages needs the option \"max_tokens\" (the Messages API requires it: a positive integer)",
    );
    for case in cases() {
        let path = d.path(&format!("bad-{}.jsonl", case.model));
        let session = path.to_str().unwrap();
        s.ok(
            "step",
            json!({"session": session, "scope": "agent:1", "facts": {"model": case.model}, "route": case.spec, "user": ["List."]}),
        );
        // Arguments that are JSON text of an array, in the provider's shape where it has
        // text arguments, and in the plain form.
        let array_text = match case.route {
            "chat-completions" => Some(reply(
                "chat-completions arguments as JSON text of an array (the message alone)",
            )),
            "openai-responses" => Some(reply(
                "openai-responses arguments as JSON text of an array (the output alone)",
            )),
            _ => None,
        };
        let message =
            "tool call 0 (\"ls\"): its arguments are JSON text of an array, not of an object";
        if let Some(reply) = array_text {
            refuse(
                &mut s,
                &path,
                "append_assistant",
                json!({"session": session, "reply": reply}),
                "conversation",
                message,
            );
        }
        refuse(
            &mut s,
            &path,
            "append_assistant",
            json!({"session": session, "tool_calls": [{"id": "x", "name": "ls", "arguments": "[\"src\"]"}]}),
            "conversation",
            message,
        );
        // A reply of another route's shape.
        let (foreign, shaped) = match case.route {
            "anthropic-messages" => (chat_text("hi"), "chat-completions"),
            _ => (anthropic_text("hi"), "anthropic-messages"),
        };
        refuse(
            &mut s,
            &path,
            "append_assistant",
            json!({"session": session, "reply": foreign}),
            "conversation",
            &format!(
                "route {} cannot read this reply: it is shaped like a reply of the {shaped} route",
                case.route
            ),
        );
        // A tool call id that repeats an earlier one.
        let seq = s.ok(
            "append_assistant",
            json!({"session": session, "reply": case.thinking_tool_call}),
        )["seq"]
            .clone();
        s.ok(
            "append_tool_result",
            json!({"session": session, "call_id": case.first_call, "content": "ok"}),
        );
        s.ok(
            "step",
            json!({"session": session, "scope": "agent:1", "facts": {"model": case.model}}),
        );
        refuse(
            &mut s,
            &path,
            "append_assistant",
            json!({"session": session, "reply": case.thinking_tool_call}),
            "conversation",
            &format!(
                "tool call id \"{}\" is already used (by the assistant message at seq {seq})",
                case.first_call
            ),
        );
        // The log still steps and replays.
        s.ok("request", json!({"session": session}));
    }
}

#[test]
fn the_command_line_steps_every_route_records_provider_replies_and_replays() {
    let d = deployment();
    let config = d.config();
    let config = config.to_str().unwrap();
    let path = d.path("cli.jsonl");
    let session = path.to_str().unwrap();
    let first = d
        .run(&[
            "step",
            "--config",
            config,
            "--scope",
            "agent:1",
            "--session",
            session,
            "--fact",
            "model=claude-opus-4-8",
            "--route",
            "anthropic-messages",
            "--option",
            "max_tokens=1024",
            "--user",
            "List the files.",
        ])
        .json();
    assert_eq!(first["model"], "claude-opus-4-8");
    assert_eq!(first["max_tokens"], 1024);
    assert_eq!(
        first["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let reply = d.path("reply.json");
    std::fs::write(&reply, cases()[1].thinking_tool_call.to_string()).unwrap();
    d.run(&[
        "assistant",
        "--session",
        session,
        "--reply",
        &format!("@{}", reply.display()),
    ])
    .ok();
    d.run(&[
        "tool-result",
        "--session",
        session,
        "--call-id",
        "toolu_1",
        "--error",
        "--content",
        "denied",
    ])
    .ok();
    let second = d
        .run(&[
            "step",
            "--config",
            config,
            "--scope",
            "agent:1",
            "--session",
            session,
            "--fact",
            "model=claude-opus-4-8",
        ])
        .json();
    let messages = turns(&second);
    assert_eq!(messages[1]["content"][0]["signature"], "c2lnLTE=");
    assert_eq!(messages[2]["content"][0]["is_error"], true);
    // A new process is a new instance: the prompt ("call 1") is unchanged, so no update.
    assert_eq!(messages.len(), 3, "{second}");
    for (n, step) in [(0, &first), (1, &second)] {
        let replayed = d
            .run(&["replay", "--session", session, "--step", &n.to_string()])
            .json();
        assert_eq!(&replayed, step, "replay of step {n}");
    }
    // Refused with nothing appended: another route's reply, arguments that are no object.
    let before = lines(&path);
    d.run(&["assistant", "--session", session, "--reply", &chat_text("hi").to_string()])
        .fails(1, &["route anthropic-messages cannot read this reply: it is shaped like a reply of the chat-completions route"]);
    d.run(&[
        "assistant",
        "--session",
        session,
        "--tool-call",
        r#"{"id":"t9","name":"ls","arguments":"[1]"}"#,
    ])
    .fails(
        1,
        &["tool call 0 (\"ls\"): its arguments are JSON text of an array, not of an object"],
    );
    d.run(&[
        "step",
        "--config",
        config,
        "--session",
        session,
        "--route",
        "chat-completion",
    ])
    .fails(
        2,
        &["unknown route \"chat-completion\" (did you mean \"chat-completions\"?)"],
    );
    assert_eq!(lines(&path), before);
    // The newest request's breakpoints and the recorded usage.
    // The prefix report reads an Anthropic request (its top-level system) and stands
    // beside the breakpoints and the recorded usage.
    let previous = d.path("first.json");
    std::fs::write(&previous, first.to_string()).unwrap();
    let previous = previous.to_str().unwrap();
    let inspected = d
        .run(&[
            "inspect",
            "--config",
            config,
            "--scope",
            "agent:1",
            "--fact",
            "model=claude-opus-4-8",
            "--against",
            previous,
            "--session",
            session,
        ])
        .ok()
        .to_string();
    assert!(
        inspected.contains(
            "  kept: the new prompt (36 bytes) starts with the whole previous prompt (36 bytes)"
        ),
        "{inspected}"
    );
    assert!(
        inspected.contains("(route anthropic-messages, model claude-opus-4-8):\n  step 1's cache breakpoints: end of system (block 0), latest user turn (message 2)\n"),
        "{inspected}"
    );
    // Anthropic's input_tokens (10) excludes the cache: recorded as 10 + 0 read + 30 written.
    assert!(
        inspected
            .contains(": 40 input tokens, 0 from cache (0%), 30 written to the cache, 5 output\n"),
        "{inspected}"
    );
}

#[test]
fn the_library_steps_a_route_in_both_tokio_runtimes_and_refuses_foreign_replies() {
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    library_steps_a_route(&multi);
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    library_steps_a_route(&current);
}

fn library_steps_a_route(tokio: &tokio::runtime::Runtime) {
    use prompt_host::session::route::{RouteName, RouteSpec};
    use prompt_host::session::Session;
    use prompt_host::{Facts, Host, StepOptions};
    use prompt_host::{HostConfig, RuntimeConfig};

    let d = deployment();
    let config = HostConfig::load(&d.config()).unwrap();
    tokio.block_on(async {
        let host = Host::from_config(&config, RuntimeConfig::with_cache_dir(d.path("cache"))).unwrap();
        let path = d.path("lib.jsonl");
        let (mut session, _) = Session::open(&path).unwrap();
        let options = StepOptions::user(["List."]).route(
            RouteSpec::new(RouteName::OpenaiResponses).option("max_output_tokens", json!(256)),
        );
        let facts = || Facts::new().with("model", "gpt-5.2");
        let (_, outcome) = host.step(&mut session, Some("agent:1"), facts(), &options).await.unwrap();
        let body = serde_json::to_value(&outcome.request).unwrap();
        assert_eq!(body["instructions"], "You help on gpt-5.2.\n\ncall 1");
        assert_eq!(body["max_output_tokens"], 256);
        let before = lines(&path);
        let error = host.append_reply(&mut session, None, &anthropic_text("hi")).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("session log {}: route openai-responses cannot read this reply: it is shaped like a reply of the anthropic-messages route", path.display())
        );
        assert_eq!(lines(&path), before);
        host.append_reply(&mut session, None, &responses_text("Two files.")).unwrap();
        let (_, next) = host.step(&mut session, Some("agent:1"), facts(), &StepOptions::user(["More."])).await.unwrap();
        let (n, replayed) = host.replay(&session, None).unwrap();
        assert_eq!(n, 1);
        assert_eq!(serde_json::to_value(&replayed).unwrap(), serde_json::to_value(&next.request).unwrap());
    });
}
