//! The outputs users see, held byte for byte to recorded ones: `render`, `assemble`, `step`,
//! `assistant`, `tool-result`, `replay`, `inspect` and `check` on the example deployments,
//! and every `serve` method in one scripted session. A restructuring of the code must not
//! change a byte of them. The recordings live in `tests/golden/`; after a change that is
//! meant to change an output, run with `PROMPT_HOST_BLESS=1` and review the diff.
//!
//! Normalised before comparing, because they differ between machines or runs and are not
//! what a user reads: temporary paths, the guests' directory, a component's sha256 and size
//! (their builds embed paths), durations, and the wall clock of a log's events.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::integration::support::cli::{bin, QUIET_PROGRESS};
use crate::integration::support::hostile_peer::{Answer, Peer, Reply, Request};
use crate::integration::support::serve::Served;

/// The caller facts every recorded command is given.
pub(crate) const FACTS: [&str; 8] = [
    "--fact",
    "model=deepseek-v4",
    "--fact",
    "cwd=/work",
    "--fact",
    "sandbox=read-only",
    "--fact",
    "project=golden",
];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden")
}

fn guests_dir() -> PathBuf {
    Path::new(env!("GUEST_DECLARE"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The demo's deployment with the clock fixed, and the reference deployment.
fn deployments(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let demo = prompt_host_tests::demo::deployment().replace(
        "name = \"clock\"\nwasm = ",
        "name = \"clock\"\nconfig = { fixed = \"2026-03-04T05:06:07Z\" }\nwasm = ",
    );
    assert!(demo.contains("fixed = "), "the demo's clock entry moved");
    std::fs::write(dir.join("demo.toml"), demo).unwrap();
    let reference = prompt_host_tests::reference::Reference::new().host_toml(
        Path::new(env!("GUEST_DECLARE")),
        Path::new(env!("GUEST_REDACTOR")),
        &dir.join("cache"),
    );
    std::fs::write(dir.join("reference.toml"), reference).unwrap();
    vec![
        ("demo", dir.join("demo.toml")),
        ("reference", dir.join("reference.toml")),
    ]
}

fn normalise(text: &str, dir: &Path) -> String {
    let mut out = text
        .replace(&dir.display().to_string(), "<dir>")
        .replace(&guests_dir().display().to_string(), "<guests>");
    // `check`'s sha256 and size lines.
    out = out
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("sha256:") || trimmed.starts_with("size:") {
                let key = trimmed.split(':').next().unwrap_or_default();
                format!("{}{key}: <{key}>", &line[..line.len() - trimmed.len()])
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    // Durations (`in 1.234 ms`, `(instantiate 1.2ms, init 3µs)`) and event times.
    mask_times(&out)
}

/// Replace durations and epoch-millisecond times: `<n> ms`, `<n>ms`,
/// `<n>µs`, `<n>s` after a digit run, and `"time":<digits>`.
fn mask_times(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if text[i..].starts_with("\"time\":") {
            out.push_str("\"time\":<time>");
            i += 7;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            continue;
        }
        if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            let rest = &text[i..];
            let unit = ["µs", " ms", "ms", "ns", "s)", "s,"]
                .iter()
                .find(|u| rest.starts_with(**u));
            if let Some(unit) = unit {
                out.push_str("<t>");
                out.push_str(unit);
                i += unit.len();
                continue;
            }
            out.push_str(&text[start..i]);
            continue;
        }
        let ch = text[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// One command's transcript. A compile that outlasts the progress delay (a second by
/// default: a loaded machine) would add a `compiling plugin …` line to stderr and one more
/// with the seconds it took; the delay is set past any run, so the transcript holds what a
/// command prints whatever the machine's speed (`cli::details` tests those lines).
fn run(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .env("PROMPT_HOST_CACHE_DIR", dir.join("cache"))
        .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    format!(
        "$ prompt-host {}\n[exit {}]\n{}\n[stderr]\n{}\n",
        args.join(" "),
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn compare(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("PROMPT_HOST_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (record it with PROMPT_HOST_BLESS=1)",
            path.display()
        )
    });
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        let show = |text: &str| {
            text.lines()
                .skip(first.saturating_sub(3))
                .take(8)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "{name} differs from the recording at line {}:\n--- recorded\n{}\n--- now\n{}",
            first + 1,
            show(&expected),
            show(actual)
        );
    }
}

#[test]
fn command_line_outputs_are_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let mut transcript = String::new();
    for (name, config) in deployments(&dir) {
        let config = config.display().to_string();
        let scope = if name == "demo" { "agent:1" } else { "agent:0" };
        let facts = FACTS;
        let with = |args: &[&str]| -> Vec<String> {
            args.iter()
                .map(|s| s.to_string())
                .chain(facts.iter().map(|s| s.to_string()))
                .collect()
        };
        let refs = |v: &[String]| -> Vec<String> { v.to_vec() };
        let log = dir.join(format!("{name}.jsonl"));
        let log = log.display().to_string();
        let commands: Vec<Vec<String>> = vec![
            with(&["render", "--config", &config]),
            with(&["render", "--config", &config, "--scope", scope]),
            with(&["render", "--config", &config, "--scope", scope, "--json"]),
            with(&["assemble", "--config", &config, "--scope", scope]),
            with(&["inspect", "--config", &config, "--scope", scope]),
            with(&[
                "step",
                "--config",
                &config,
                "--scope",
                scope,
                "--session",
                &log,
                "--user",
                "First.",
            ]),
            refs(&[
                "assistant".into(),
                "--session".into(),
                log.clone(),
                "--text".into(),
                "Looking.".into(),
                "--tool-call".into(),
                r#"{"id":"t1","name":"ls","arguments":{"path":"."}}"#.into(),
            ]),
            refs(&[
                "tool-result".into(),
                "--session".into(),
                log.clone(),
                "--call-id".into(),
                "t1".into(),
                "--content".into(),
                "a b c".into(),
            ]),
            with(&[
                "step",
                "--config",
                &config,
                "--scope",
                scope,
                "--session",
                &log,
                "--user",
                "Second.",
            ]),
            with(&[
                "step",
                "--config",
                &config,
                "--scope",
                scope,
                "--session",
                &log,
                "--in-history",
            ]),
            refs(&[
                "replay".into(),
                "--session".into(),
                log.clone(),
                "--step".into(),
                "0".into(),
            ]),
            refs(&["replay".into(), "--session".into(), log.clone()]),
        ];
        for args in commands {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            transcript.push_str(&run(&dir, &args));
        }
    }
    // The guests tests/build.rs built from guest-examples/, not whatever the directory holds:
    // other tests build plugins of their own into the same target dir (dev_loop's probe),
    // and whether they ran first must not change the transcript.
    let mut guests: Vec<PathBuf> = crate::integration::wasm::guests_built::GUESTS
        .iter()
        .map(|(_, path)| PathBuf::from(path))
        .filter(|p| p.parent() == Some(guests_dir().as_path()))
        .collect();
    guests.sort();
    for guest in guests {
        let name = guest.file_stem().unwrap().to_string_lossy().into_owned();
        // The hostile guest needs a mode; the rest check with their defaults.
        let config = if name == "hostile" {
            r#"{"mode":"say","in":"section"}"#
        } else {
            "{}"
        };
        transcript.push_str(&run(
            &dir,
            &["check", guest.to_str().unwrap(), "--config", config],
        ));
    }
    compare("cli.txt", &normalise(&transcript, &dir));
}

/// Untrusted text with every brace form strict rendering treats specially: references to
/// facts (`cwd`, `model`) and to another plugin's variable (`house`), a malformed group,
/// `}}{{`, a lone `{{` and an unbalanced `}}`; and a fence close for the MCP fence.
const UNTRUSTED: &str = "Keep {{house}} as written; {{{x}}} too.\n\
     }}{{ then a lone {{ and an unbalanced }} here.\n\
     Work in {{cwd}} on {{model}}.\n>>>\nStill third-party text.";

/// A minimal MCP server over Streamable HTTP (stateless, JSON answers, the `initialize`
/// lifecycle, no tools) whose instructions are [`UNTRUSTED`].
fn untrusted_mcp_server(request: &Request) -> Answer {
    if request.method != "POST" {
        return Reply::new(405).into();
    }
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        return Reply::new(400).into();
    };
    let Some(id) = message.get("id").cloned() else {
        return Reply::new(202).into();
    };
    let result = match message["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "untrusted", "version": "1"},
            "instructions": UNTRUSTED,
        }),
        Some("tools/list") => json!({"tools": []}),
        _ => {
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "unknown"}});
            return Reply::new(200).json(&error).into();
        }
    };
    Reply::new(200)
        .json(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
        .into()
}

/// What the guests that pass on untrusted text make of it: a user's `AGENTS.md`
/// (`project-instructions`) and an MCP server's instructions (`mcp-instructions`) reach the
/// prompt byte for byte, read no variable although `house`, `cwd` and `model` have values, and
/// sit in variables that the sections reference.
#[test]
fn untrusted_text_reaches_the_prompt_as_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("AGENTS.md"), UNTRUSTED).unwrap();
    let server = Peer::http(untrusted_mcp_server);
    let quoted = |p: &Path| Value::String(p.display().to_string()).to_string();
    let config = dir.join("untrusted.toml");
    std::fs::write(
        &config,
        format!(
            "[prompt]\ninclude_harness_identity = false\n\n\
             [host]\nmcp_provider = {provider}\n\n\
             [[scope]]\nname = \"agent:1\"\n\n\
             [[plugin]]\nname = \"house\"\nwasm = {declare}\n\
             config = {{ variables = [{{ name = \"house\", value = \"THE HOUSE VALUE\" }}] }}\n\n\
             [[plugin]]\nname = \"instructions\"\nwasm = {pi}\nscope = \"agent:1\"\n\
             grants = {{ dirs = [{{ host = {repo}, guest = \"/project\" }}] }}\n\
             config = {{ host_root = {repo}, heading = \"Rules for {{{{model}}}}:\" }}\n\
             limits = {{ call_timeout_ms = 10000 }}\n\n\
             [[mcp]]\nname = \"fx\"\nurl = {url:?}\nscope = \"agent:1\"\n\
             lifecycle = \"initialize\"\n",
            provider = quoted(Path::new(env!("GUEST_MCP_INSTRUCTIONS"))),
            declare = quoted(Path::new(env!("GUEST_DECLARE"))),
            pi = quoted(Path::new(env!("GUEST_PROJECT_INSTRUCTIONS"))),
            repo = quoted(&repo),
            url = server.url("/mcp"),
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let cwd = format!("cwd={}", repo.display());
    let facts = ["--fact", cwd.as_str(), "--fact", "model=deepseek-v4"];
    let mut transcript = String::new();
    for command in [&["render"][..], &["render", "--json"], &["assemble"]] {
        let args: Vec<&str> = command
            .iter()
            .copied()
            .chain(["--config", config.as_str(), "--scope", "agent:1"])
            .chain(facts)
            .collect();
        let shown = run(&dir, &args);
        if command == ["render", "--json"] {
            // Besides the recording: the exact prompt, whatever was recorded.
            let stdout = shown
                .split_once("[exit 0]\n")
                .and_then(|(_, rest)| rest.split_once("\n[stderr]"))
                .map(|(stdout, _)| stdout)
                .unwrap_or_else(|| panic!("{shown}"));
            let rendered: Value = serde_json::from_str(stdout).unwrap();
            assert_eq!(
                rendered["prompt"],
                format!(
                    "Rules for deepseek-v4:\n\n# From AGENTS.md\n{UNTRUSTED}\n\n\
                     Instructions from MCP server \"fx\" (third-party text, not from the \
                     operator):\n<<<<\n{UNTRUSTED}\n>>>>"
                )
            );
        }
        transcript.push_str(&shown);
    }
    compare("untrusted.txt", &normalise(&transcript, &dir));
}

#[test]
fn every_serve_method_answers_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let configs = deployments(&dir);
    let demo = &configs[0].1;
    let mut served = Served::start(&["--config", demo.to_str().unwrap()], &dir.join("cache"));
    let log = dir.join("served.jsonl");
    let facts = json!({"model": "deepseek-v4", "cwd": "/work", "sandbox": "read-only"});
    let script: Vec<(&str, Value)> = vec![
        ("describe", json!({})),
        ("scopes", json!({})),
        (
            "bind_scope",
            json!({"scope": "agent:2", "parent": "preset:coder"}),
        ),
        ("scopes", json!({})),
        ("plugins", json!({})),
        (
            "load_plugin",
            json!({"name": "extra", "wasm": env!("GUEST_DECLARE"), "scope": "agent:2",
            "config": {"sections": [{"name": "extra:rules", "order": 300, "text": "Extra rules."}]}}),
        ),
        ("plugins", json!({})),
        ("assemble", json!({"scope": "agent:2", "facts": facts})),
        ("render", json!({"scope": "agent:1", "facts": facts})),
        ("render", json!({"scope": "nope"})),
        (
            "step",
            json!({"session": log, "scope": "agent:1", "facts": facts, "user": ["First."]}),
        ),
        (
            "retry",
            json!({"session": log, "facts": {"model": "other-model", "cwd": "/work", "sandbox": "read-only"}}),
        ),
        (
            "append_assistant",
            json!({"session": log, "text": "Looking.", "tool_calls": [{"id": "t1", "name": "ls", "arguments": {"path": "."}}]}),
        ),
        (
            "step",
            json!({"session": log, "scope": "agent:1", "facts": facts}),
        ),
        (
            "append_tool_result",
            json!({"session": log, "call_id": "t1", "content": "a b c", "is_error": false}),
        ),
        (
            "step",
            json!({"session": log, "scope": "agent:1", "facts": facts, "user": ["Second."], "in_history": true}),
        ),
        ("request", json!({"session": log, "step": 0})),
        ("request", json!({"session": log})),
        (
            "compact",
            json!({"session": log, "summary": "Backwards.", "start_seq": 9, "end_seq": 2}),
        ),
        (
            "compact",
            json!({"session": log, "summary": "The user asked for the files; they were a, b and c.", "keep_turns": 1}),
        ),
        (
            "step",
            json!({"session": log, "scope": "agent:1", "facts": facts, "user": ["Third."]}),
        ),
        ("request", json!({"session": log, "step": 1})),
        ("close_session", json!({"session": log})),
        (
            "reload_plugin",
            json!({"id": 99, "wasm": env!("GUEST_DECLARE")}),
        ),
        (
            "reload_plugin",
            json!({"id": "<loaded>", "wasm": env!("GUEST_DECLARE")}),
        ),
        ("dispose_plugin", json!({"id": "<loaded>"})),
        ("dispose_plugin", json!({"id": 99})),
        ("mcp_status", json!({})),
        ("subscribe", json!({"log": "warn", "plugins": true})),
        ("$/cancelRequest", json!({"id": 12345})),
        ("dispose_scope", json!({"scope": "agent:2"})),
        ("scopes", json!({})),
        ("nope", json!({})),
    ];
    let mut transcript = String::new();
    let mut loaded = Value::Null;
    for (method, mut params) in script {
        // The plugin `load_plugin` loaded, reloaded and disposed by its id.
        if params.get("id") == Some(&json!("<loaded>")) {
            params["id"] = loaded.clone();
        }
        let answer = served.call(method, params.clone());
        if method == "load_plugin" {
            loaded = answer["result"]["id"].clone();
        }
        transcript.push_str(&format!("--> {method} {params}\n<-- {answer}\n"));
    }
    compare("serve.txt", &normalise(&transcript, &dir));
}
