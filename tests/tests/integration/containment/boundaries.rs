//! Every request is answered and the command line never dies of a panic: a panic while a
//! `serve` method runs is that request's `internal` error (-32603) and the server goes on;
//! one in a command is one escaped line on stderr and status 1, never Rust's 101. The panic
//! is injected (`PROMPT_HOST_INJECT_PANIC`, honoured by debug builds only): once the defects
//! that caused panics are fixed, no input is known to cause one, and the boundary must hold
//! for the ones not yet found.

use std::time::Duration;

use serde_json::json;

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

const VARIABLE: &str = "PROMPT_HOST_INJECT_PANIC";

fn rules_toml() -> &'static str {
    "[[plugin]]\nname = \"rules\"\nwasm = \"{DECLARE}\"\nconfig = { sections = [{ name = \"rules\", order = 100, text = \"I am Ada.\" }] }\n"
}

#[test]
fn a_panic_in_a_serve_method_is_that_requests_internal_error_and_the_server_goes_on() {
    let d = Deployment::new(rules_toml());
    let config = d.config();
    let mut served = Served::start_with_env(
        &["--config", config.to_str().unwrap()],
        &d.path("cache"),
        &[(VARIABLE, "render")],
    );
    let answer = served.call("render", json!({}));
    let error = &answer["error"];
    assert_eq!(error["code"], -32603, "{answer}");
    assert_eq!(error["data"], json!({"kind": "internal"}), "{answer}");
    assert_eq!(
        error["message"],
        "internal error: render failed inside the host (a panic injected at render (PROMPT_HOST_INJECT_PANIC)); the request was not completed and the server goes on"
    );
    // The same server answers what comes next, in flight or after.
    assert!(served.ok("describe", json!({}))["protocol"].is_string());
    let assembled = served.ok("assemble", json!({}));
    assert!(!assembled["sections"].as_array().unwrap().is_empty());
    let stderr = served.stderr_with("internal error", Duration::from_secs(10));
    assert!(
        stderr.contains("error: internal error at ")
            && stderr.contains("this is a defect of prompt-host"),
        "{stderr}"
    );
}

#[test]
fn a_panic_in_a_session_request_names_the_session_and_its_log_reads_back() {
    let d = Deployment::new(rules_toml());
    let config = d.config();
    let session = d.path("s.jsonl");
    let session = session.to_str().unwrap();
    let mut served = Served::start_with_env(
        &["--config", config.to_str().unwrap()],
        &d.path("cache"),
        &[(VARIABLE, "request")],
    );
    let first = served.ok("step", json!({"session": session, "user": ["hi"]}));
    let answer = served.call("request", json!({"session": session}));
    let error = &answer["error"];
    assert_eq!(error["code"], -32603, "{answer}");
    assert_eq!(
        error["data"],
        json!({"kind": "internal", "session": session}),
        "{answer}"
    );
    assert_eq!(
        error["message"],
        format!("internal error: request on session log {session} failed inside the host (a panic injected at request (PROMPT_HOST_INJECT_PANIC)); the request was not completed and the server goes on")
    );
    // The session's state was dropped; the next requests read the log again and go on
    // from where it stands.
    served.ok(
        "append_assistant",
        json!({"session": session, "text": "hello"}),
    );
    let second = served.ok("step", json!({"session": session, "user": ["again"]}));
    assert_eq!(
        second["step"].as_u64(),
        first["step"].as_u64().map(|n| n + 1),
        "{second}"
    );
}

#[test]
fn a_panic_in_a_command_is_one_escaped_line_and_status_1_never_101() {
    let d = Deployment::new(rules_toml());
    let config = d.config();
    let run = std::process::Command::new(crate::integration::support::cli::bin())
        .args(["render", "--config", config.to_str().unwrap()])
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .env(VARIABLE, "cli:render")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(run.stdout.is_empty());
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("error: internal error at host/cli/src/lib.rs:"),
        "{stderr}"
    );
    assert!(
        lines[0].ends_with(": a panic injected at cli:render (PROMPT_HOST_INJECT_PANIC); this is a defect of prompt-host, please report it with the command that caused it"),
        "{stderr}"
    );
    // Without the variable, the same command renders.
    assert!(d
        .run(&["render", "--config", config.to_str().unwrap()])
        .ok()
        .contains("Ada"));
}
