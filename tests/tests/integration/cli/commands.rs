//! The real `prompt-host` binary: every command, and each error class with its exit code
//! and message.

use crate::integration::support::cli::Deployment;

const ID: &str = "You are an AI agent powered by the DeepSeek Harness SDK.";

/// A parent scope with tool guidance and a child with its own persona and a section.
const TWO_SCOPES: &str = r#"
[prompt]
persona = "Deployment persona on {{model}}."

[[scope]]
name = "preset:coder"

[[scope]]
name = "agent:1"
parent = "preset:coder"

[[scope]]
name = "agent:2"
parent = "preset:coder"

[[plugin]]
name = "guide"
wasm = "{DECLARE}"
scope = "preset:coder"
config = { sections = [{ name = "guide", order = 150, text = "Use the tools." }], tools = [{ schemas = [{ name = "bash", description = "run", parameters = { type = "object" } }] }] }

[[plugin]]
name = "agent-persona"
wasm = "{PERSONA}"
scope = "agent:1"
config = { text = "Agent one on {{model}}." }
"#;

#[test]
fn render_prints_the_exact_prompt_per_scope() {
    let d = Deployment::new(TWO_SCOPES);
    let config = d.config();
    let config = config.to_str().unwrap();
    let agent = d.run(&[
        "render", "--config", config, "--scope", "agent:1", "--fact", "model=m1",
    ]);
    assert_eq!(
        agent.ok(),
        format!("{ID}\n\nAgent one on m1.\n\nUse the tools.")
    );
    let sibling = d.run(&[
        "render", "--config", config, "--scope", "agent:2", "--fact", "model=m1",
    ]);
    assert_eq!(
        sibling.ok(),
        format!("{ID}\n\nDeployment persona on m1.\n\nUse the tools.")
    );
    let global = d.run(&["render", "--config", config, "--fact", "model=m1"]);
    assert_eq!(global.ok(), format!("{ID}\n\nDeployment persona on m1."));
    let json = d
        .run(&[
            "render", "--json", "--config", config, "--scope", "agent:1", "--fact", "model=m1",
        ])
        .json();
    assert_eq!(
        json["prompt"],
        format!("{ID}\n\nAgent one on m1.\n\nUse the tools.")
    );
    assert_eq!(json["context"], "");
}

#[test]
fn assemble_prints_the_stable_json_shape() {
    let d = Deployment::new(TWO_SCOPES);
    let config = d.config();
    let json = d
        .run(&[
            "assemble",
            "--config",
            config.to_str().unwrap(),
            "--scope",
            "agent:1",
        ])
        .json();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["sections", "contexts", "tools", "variables"]);
    let names: Vec<&str> = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["harness:identity", "deployment:persona", "guide"]);
    assert_eq!(json["sections"][1]["text"], "Agent one on {{model}}.");
    assert_eq!(
        json["tools"][0],
        serde_json::json!({"name": "bash", "description": "run", "parameters": {"type": "object"}})
    );
    // The host's variables read the facts; absent facts have no value.
    assert_eq!(json["variables"]["model"], serde_json::Value::Null);
    assert_eq!(json["variables"]["cwd"], serde_json::Value::Null);
}

#[test]
fn step_writes_the_log_and_prints_a_request_without_system_field() {
    let d = Deployment::new(TWO_SCOPES);
    let config = d.config();
    let log = d.path("session.jsonl");
    let args = |user: &'static str| {
        vec![
            "step".to_string(),
            "--config".into(),
            config.to_str().unwrap().into(),
            "--session".into(),
            log.to_str().unwrap().into(),
            "--scope".into(),
            "agent:1".into(),
            "--fact".into(),
            "model=m1".into(),
            "--user".into(),
            user.into(),
        ]
    };
    let first: Vec<String> = args("hello");
    let first = d
        .run(&first.iter().map(String::as_str).collect::<Vec<_>>())
        .json();
    assert!(first.get("system").is_none());
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[0]["content"],
        format!("{ID}\n\nAgent one on m1.\n\nUse the tools.")
    );
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(first["tools"][0]["function"]["name"], "bash");
    // Same prompt again: no new system message, the history grows by the user message.
    let second: Vec<String> = args("again");
    let second = d
        .run(&second.iter().map(String::as_str).collect::<Vec<_>>())
        .json();
    let roles: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "user"]);
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(lines.matches("\"type\":\"system/message\"").count(), 1);
}

/// `inspect` names a dynamic tool provider and a listener by the key they were declared
/// under.
#[test]
fn inspect_names_tool_providers_and_listeners_by_key() {
    let d = Deployment::new(&format!(
        "[[plugin]]\nname = \"d\"\nwasm = {:?}\n\
         config = {{ tools = [{{ schemas = [{{ name = \"t\", description = \"x\" }}], dynamic = true, key = \"mytools\" }}], \
         listener = {{ key = \"L\", steps = [{{ next = true }}] }} }}\n",
        env!("GUEST_DECLARE")
    ));
    let config = d.config();
    let out = d.run(&["inspect", "--config", config.to_str().unwrap()]);
    let text = out.ok();
    assert!(
        text.contains("tool providers: d \"mytools\" in global (dynamic)"),
        "{text}"
    );
    assert!(
        text.contains("listeners (outermost first): d \"L\" (global)"),
        "{text}"
    );
}

#[test]
fn inspect_shows_contributors_and_the_cache_prefix() {
    let d = Deployment::new(TWO_SCOPES);
    let config = d.config();
    let config = config.to_str().unwrap();
    let out = d.run(&[
        "inspect", "--config", config, "--scope", "agent:1", "--fact", "model=m1",
    ]);
    let text = out.ok();
    assert!(text.contains("agent-persona"), "{text}");
    assert!(
        text.contains("prompt-host in global"),
        "persona shadows the built-in: {text}"
    );
    assert!(text.contains("preset:coder"), "{text}");
    let previous = d.path("previous.json");
    let rendered = d.run(&[
        "render", "--json", "--config", config, "--scope", "agent:1", "--fact", "model=m1",
    ]);
    std::fs::write(&previous, rendered.ok()).unwrap();
    let same = d.run(&[
        "inspect",
        "--config",
        config,
        "--scope",
        "agent:1",
        "--fact",
        "model=m1",
        "--against",
        previous.to_str().unwrap(),
    ]);
    assert!(
        same.ok().contains("kept: the new prompt"),
        "{}",
        same.stdout
    );
    let changed = d.run(&[
        "inspect",
        "--config",
        config,
        "--scope",
        "agent:1",
        "--fact",
        "model=m2",
        "--against",
        previous.to_str().unwrap(),
    ]);
    let text = changed.ok();
    let offset = ID.len() + 2 + "Agent one on m".len();
    assert!(
        text.contains(&format!("broken at byte {offset} ")),
        "{text}"
    );
    assert!(
        text.contains("first changed section: deployment:persona"),
        "{text}"
    );
}

#[test]
fn check_reports_declarations_and_refuses_non_components() {
    let d = Deployment::new("");
    let out = d.run(&["check", env!("GUEST_TOOL_GUIDE")]);
    let text = out.ok();
    assert!(text.contains("section  \"tools:guide\""), "{text}");
    assert!(text.contains("tools    fixed:"), "{text}");
    let junk = d.path("junk.wasm");
    std::fs::write(&junk, b"not wasm at all").unwrap();
    d.run(&["check", junk.to_str().unwrap()]).fails(
        1,
        &["junk.wasm cannot be loaded", "not a WebAssembly component"],
    );
    let bytes = std::fs::read(env!("GUEST_PERSONA")).unwrap();
    let truncated = d.path("truncated.wasm");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    d.run(&["check", truncated.to_str().unwrap()])
        .fails(1, &["truncated.wasm cannot be loaded"]);
}

#[test]
fn usage_errors_exit_2() {
    let d = Deployment::new("");
    d.run(&["render"]).fails(2, &["--config"]);
    d.run(&["frobnicate"]).fails(2, &["frobnicate"]);
    let config = d.config();
    d.run(&[
        "render",
        "--config",
        config.to_str().unwrap(),
        "--fact",
        "novalue",
    ])
    .fails(2, &["expected KEY=VALUE"]);
}

#[test]
fn configuration_errors_name_file_and_key() {
    let cases: &[(&str, &[&str])] = &[
        ("[prompt]\npersonna = \"x\"\n", &["host.toml", "personna"]),
        (
            "[prompt]\npersona = 3\n",
            &["host.toml", "persona", "string"],
        ),
        (
            "[[plugin]]\nname = \"p\"\nwasm = \"missing.wasm\"\n",
            &["plugin[0].wasm", "missing.wasm"],
        ),
        (
            "[[scope]]\nname = \"agent:1\"\nparent = \"ghost\"\n",
            &["scope[0].parent", "\"ghost\""],
        ),
        (
            "[[scope]]\nname = \"a\"\nparent = \"b\"\n[[scope]]\nname = \"b\"\nparent = \"a\"\n",
            &["scope[0].parent", "cycle"],
        ),
        (
            "[[plugin]]\nname = \"p\"\nwasm = \"{PERSONA}\"\nsha256 = \"abc\"\n",
            &["plugin[0].sha256", "expected abc"],
        ),
        (
            "[[plugin]]\nname = \"p\"\nwasm = \"{PERSONA}\"\nlimits = { memory = 5 }\n",
            &["plugin[0].limits", "memory"],
        ),
        (
            "[prompt]\ntool_order = [\"bash\"]\n",
            &["toolOrder must contain the \"<unlisted-tools>\" rest entry"],
        ),
    ];
    for (toml, needles) in cases {
        let d = Deployment::new(toml);
        let config = d.config();
        let run = d.run(&["render", "--config", config.to_str().unwrap()]);
        run.fails(1, needles);
        assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn plugin_assembly_and_render_errors_name_plugin_section_and_scope() {
    // A plugin whose init fails.
    let d = Deployment::new(
        "[[scope]]\nname = \"agent:1\"\n[[plugin]]\nname = \"broken\"\nwasm = \"{DECLARE}\"\nscope = \"agent:1\"\nconfig = { sections = [{ name = \"s\", order = \"NaN\", text = \"x\" }] }\n",
    );
    let config = d.config();
    d.run(&["render", "--config", config.to_str().unwrap()])
        .fails(
            1,
            &[
                "plugin \"broken\"",
                "prompt section \"s\" order must be a finite number",
            ],
        );
    // Two complete sections: the assembly error, with the scope.
    let d = Deployment::new(
        "[[plugin]]\nname = \"two\"\nwasm = \"{DECLARE}\"\nconfig = { sections = [{ name = \"first\", order = 10, text = \"a\", complete = true }, { name = \"second\", order = 20, text = \"b\", complete = true }] }\n",
    );
    let config = d.config();
    d.run(&["assemble", "--config", config.to_str().unwrap()])
        .fails(
            1,
            &[
                "assembly for scope \"global\" failed",
                "multiple complete prompt sections are active: \"first\", \"second\"",
            ],
        );
    // A reference to an unknown variable: the render error names section and scope.
    let d = Deployment::new(
        "[[scope]]\nname = \"agent:1\"\n[[plugin]]\nname = \"typo\"\nwasm = \"{DECLARE}\"\nscope = \"agent:1\"\nconfig = { sections = [{ name = \"persona2\", order = 5, text = \"on {{modle}}\" }] }\n",
    );
    let config = d.config();
    d.run(&["render", "--config", config.to_str().unwrap(), "--scope", "agent:1"])
        .fails(
            1,
            &[
                "rendering for scope \"agent:1\" failed",
                "unknown prompt variable \"{{modle}}\" in section \"persona2\"; registered variables: provider, model, cwd",
            ],
        );
    // A dynamic provider that fails at assembly: plugin, export and scope are named.
    let d = Deployment::new(
        "[[scope]]\nname = \"agent:1\"\n[[plugin]]\nname = \"flaky\"\nwasm = \"{DECLARE}\"\nscope = \"agent:1\"\nconfig = { sections = [{ name = \"dyn\", order = 5, text = { fail = \"upstream down\" } }] }\n",
    );
    let config = d.config();
    d.run(&[
        "render",
        "--config",
        config.to_str().unwrap(),
        "--scope",
        "agent:1",
    ])
    .fails(
        1,
        &[
            "plugin \"flaky\"",
            "section-text",
            "agent:1",
            "upstream down",
        ],
    );
}

/// 1,000 requests, valid and not, pipelined: each is answered (by id; a line that is not
/// JSON gets an error with a null id), in whatever order the concurrent server finishes.
#[test]
fn serve_survives_a_thousand_mixed_requests() {
    let d = Deployment::new("");
    let mut served = crate::integration::support::serve::Served::start(&[], &d.path("cache"));
    // Scopes are bound and the plugin loaded first: the rest depends on them.
    served.ok("bind_scope", serde_json::json!({"scope": "agent:1"}));
    served.ok("bind_scope", serde_json::json!({"scope": "agent:2"}));
    served.ok(
        "load_plugin",
        serde_json::json!({"name": "p", "wasm": env!("GUEST_PERSONA"), "scope": "agent:1", "config": {"text": "Hi {{model}}"}}),
    );
    let mut expected = std::collections::HashMap::new();
    let mut null_ids = 0;
    for i in 1000..2000 {
        let (line, kind) = match i % 7 {
            0 => (format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"render\",\"params\":{{\"scope\":\"agent:1\",\"facts\":{{\"model\":\"m{i}\"}}}}}}"), "result"),
            1 => ("this is not json".to_string(), "error:-32700"),
            2 => (format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"nope\"}}"), "error:-32601"),
            3 => (format!("{{\"jsonrpc\":\"1.0\",\"id\":{i},\"method\":\"render\"}}"), "error:-32600"),
            4 => (format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"render\",\"params\":{{\"scope\":\"agent:1\"}}}}"), "error:-32000"),
            5 => (format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"assemble\",\"params\":{{\"facts\":7}}}}"), "error:-32602"),
            _ => (format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"assemble\",\"params\":{{\"scope\":\"agent:2\"}}}}"), "result"),
        };
        served.send_line(line.as_bytes());
        if kind == "error:-32700" {
            null_ids += 1;
        } else {
            expected.insert(i, kind);
        }
    }
    // A notification: no response.
    served.send_line(b"{\"jsonrpc\":\"2.0\",\"method\":\"plugins\"}");
    let mut nulls = 0;
    for _ in 0..(expected.len() + null_ids) {
        let response = served.answer();
        assert_eq!(response["jsonrpc"], "2.0");
        let Some(i) = response["id"].as_u64() else {
            assert_eq!(response["error"]["code"], -32700, "{response}");
            nulls += 1;
            continue;
        };
        let kind = expected
            .remove(&i)
            .unwrap_or_else(|| panic!("unexpected {response}"));
        match kind.strip_prefix("error:") {
            Some(code) => assert_eq!(response["error"]["code"].to_string(), code, "{response}"),
            None => assert!(response.get("result").is_some(), "{response}"),
        }
        if i % 7 == 0 {
            assert_eq!(response["result"]["prompt"], format!("{ID}\n\nHi m{i}"));
        }
    }
    assert_eq!(nulls, null_ids);
    assert!(expected.is_empty(), "unanswered: {expected:?}");
    served.ok("plugins", serde_json::json!({}));
}

/// A plugin that writes to stdout and stderr during `init` is loaded from async code by every
/// command; its output is captured, and none of it reaches the command's own stdout.
#[test]
fn a_plugin_printing_during_init_loads_in_every_command() {
    let d = Deployment::new(
        r#"
[[plugin]]
name = "printer"
wasm = "{HOSTILE}"
config = { mode = "stdout_spam", count = 3, in = "init" }
"#,
    );
    let config = d.config();
    let config = config.to_str().unwrap();
    let rendered = d.run(&["render", "--config", config]);
    assert_eq!(rendered.ok(), format!("{ID}\n\nhostile: stdout spam done"));
    assert!(!rendered.stderr.contains("panicked"), "{}", rendered.stderr);
    let checked = d.run(&[
        "check",
        env!("GUEST_HOSTILE"),
        "--config",
        r#"{"mode":"stdout_spam","count":3,"in":"init"}"#,
    ]);
    let text = checked.ok();
    assert!(
        text.contains("section  \"hostile\" order 500 (fixed, 25 bytes)"),
        "{text}"
    );
    // A batch runs in order: the render sees the loaded plugin.
    let input = format!(
        "[{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"load_plugin\",\"params\":{{\"name\":\"p\",\"wasm\":{:?},\"config\":{{\"mode\":\"stdout_spam\",\"count\":3,\"in\":\"init\"}}}}}},\
         {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"render\"}}]\n",
        env!("GUEST_HOSTILE")
    );
    let served = d.run_with_input(&["serve"], &input);
    assert_eq!(served.code, 0, "{}", served.stderr);
    let batch: serde_json::Value =
        serde_json::from_str(served.stdout.trim()).expect("one JSON array");
    assert_eq!(batch.as_array().map(Vec::len), Some(2), "{}", served.stdout);
    assert_eq!(
        batch[1]["result"]["prompt"],
        format!("{ID}\n\nhostile: stdout spam done")
    );
}
