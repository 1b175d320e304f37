//! MCP servers while the host starts, through the entry points where it shows: a `step` on
//! the same log after a restart whose servers answer the other way round commits nothing
//! (the command line); `serve`'s first step has every tool and section of a server that is
//! still starting (its start wait); a server that is down says why once and is left out, or
//! fails every assembly when it is `required` (the command line, `serve`).

use std::path::Path;

use serde_json::{json, Value};

use crate::integration::mcp::client::{fixtures, python, python_mcp_available};
use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

const ID: &str = "You are an AI agent powered by the DeepSeek Harness SDK.";

/// An `[[mcp]]` entry for the fixture server `name`, which says "`name` rules." and takes
/// `more` arguments.
fn fixture_entry(name: &str, more: &[&str], rest: &str) -> String {
    let mut args = vec![
        fixtures().join("server.py").display().to_string(),
        "--instructions".to_owned(),
        format!("{name} rules."),
    ];
    args.extend(more.iter().map(|a| (*a).to_owned()));
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = {python:?}\nargs = {args:?}\ntimeout_ms = 20000\n{rest}\n",
        python = python(),
    )
}

fn deployment(entries: &str) -> Deployment {
    Deployment::new(&format!(
        "[host]\nmcp_provider = {:?}\n\n{entries}",
        env!("GUEST_MCP_INSTRUCTIONS")
    ))
}

fn fenced(server: &str) -> String {
    format!(
        "Instructions from MCP server \"{server}\" (third-party text, not from the operator):\n<<<\n{server} rules.\n>>>"
    )
}

fn tool_names(request: &Value) -> Vec<&str> {
    request["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {request}"))
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap_or_default())
        .collect()
}

fn system_messages(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap()
        .matches("\"type\":\"system/message\"")
        .count()
}

/// The same host.toml, run twice on one log: first `alpha` answers two seconds before
/// `beta`, then `beta` two seconds before `alpha`. Both sections are at order 190; both
/// steps send the same system prompt, alpha's first, and the second commits nothing.
#[test]
fn a_step_after_a_restart_whose_servers_answer_the_other_way_round_commits_nothing() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let d = deployment(&format!(
        "{}{}",
        fixture_entry("alpha", &["--start-delay-file", "alpha.delay"], ""),
        fixture_entry("beta", &["--start-delay-file", "beta.delay"], "")
    ));
    let config = d.config().display().to_string();
    let log = d.path("log.jsonl");
    let mut systems = Vec::new();
    for (alpha, beta) in [("0", "2"), ("2", "0")] {
        std::fs::write(d.path("alpha.delay"), alpha).unwrap();
        std::fs::write(d.path("beta.delay"), beta).unwrap();
        let run = d.run(&[
            "step",
            "--config",
            &config,
            "--session",
            log.to_str().unwrap(),
            "--fact",
            "model=m1",
            "--user",
            "hi",
        ]);
        assert_eq!(run.stderr, "", "alpha delayed {alpha} s");
        let request = run.json();
        assert_eq!(
            tool_names(&request),
            [
                "mcp__alpha__add",
                "mcp__alpha__echo",
                "mcp__beta__add",
                "mcp__beta__echo"
            ]
        );
        systems.push(request["messages"][0].clone());
    }
    let want = format!("{ID}\n\n{}\n\n{}", fenced("alpha"), fenced("beta"));
    assert_eq!(systems[0], json!({"role": "system", "content": want}));
    assert_eq!(systems[1], systems[0]);
    assert_eq!(system_messages(&log), 1);
}

/// `serve` steps at once, with no `mcp_status` first: the step waits for the server that is
/// still starting, so request 0 has its tools and its section, and step 1 commits nothing.
#[test]
fn serve_s_first_step_has_every_tool_and_section_of_a_server_still_starting() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let d = deployment(&fixture_entry("fx", &["--start-delay", "1"], ""));
    let log = d.path("log.jsonl");
    let mut serve = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let params = json!({"session": log, "facts": {"model": "m1"}, "user": ["hi"]});
    let first = serve.ok("step", params.clone());
    assert_eq!(
        (first["step"].as_u64(), first["commits"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(
        tool_names(&first["request"]),
        ["mcp__fx__add", "mcp__fx__echo"]
    );
    assert_eq!(
        first["request"]["messages"][0]["content"],
        format!("{ID}\n\n{}", fenced("fx"))
    );
    let second = serve.ok("step", params);
    assert_eq!(second["commits"], 0, "{second}");
    assert_eq!(system_messages(&log), 1);
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn down_entry(port: u16, rest: &str) -> String {
    format!(
        "[[mcp]]\nname = \"down\"\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout_ms = 5000\n{rest}\n"
    )
}

/// A server that is down: `render` says once why (the connection was refused) and renders
/// without it; marked `required`, it fails the command instead, naming it.
#[test]
fn a_server_down_at_start_is_left_out_once_with_why_or_fails_the_command_when_required() {
    let port = closed_port();
    let why = refused(port);

    let d = deployment(&down_entry(port, ""));
    let config = d.config().display().to_string();
    let run = d.run(&["render", "--config", &config]);
    assert_eq!(run.ok(), ID);
    assert_eq!(
        run.stderr,
        format!("warning: MCP server \"down\" (global): {why}; assembling without it\n")
    );

    let d = deployment(&down_entry(port, "required = true\nstart_wait_ms = 1500"));
    let config = d.config().display().to_string();
    let run = d.run(&["render", "--config", &config]);
    run.fails(1, &[]);
    assert_eq!(
        run.stderr,
        format!("error: MCP server \"down\" (global) is required (required = true) and published nothing within 1500 ms of its start: {why}\n")
    );
}

/// Through `serve`: a required server that is down fails each step with an `mcp` error,
/// and nothing is written to the log.
#[test]
fn serve_refuses_a_step_without_a_required_server() {
    let port = closed_port();
    let d = deployment(&down_entry(port, "required = true\nstart_wait_ms = 1500"));
    let log = d.path("log.jsonl");
    let mut serve = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    for _ in 0..2 {
        let answer = serve.call(
            "step",
            json!({"session": log, "facts": {"model": "m1"}, "user": ["hi"]}),
        );
        assert_eq!(
            answer["error"],
            json!({
                "code": -32000,
                "message": format!("MCP server \"down\" (global) is required (required = true) and published nothing within 1500 ms of its start: {}", refused(port)),
                "data": {"kind": "mcp"},
            })
        );
    }
    assert!(!log.exists() || system_messages(&log) == 0);
}

/// `$/cancelRequest` reaches a step that waits for a required server: the answer is the
/// cancellation, not the server's error at the end of its minute-long wait.
#[test]
fn a_cancelled_step_stops_waiting_for_a_server() {
    let port = closed_port();
    let d = deployment(&down_entry(port, "required = true\nstart_wait_ms = 60000"));
    let log = d.path("log.jsonl");
    let mut serve = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let step = json!({"jsonrpc": "2.0", "id": 7, "method": "step",
                      "params": {"session": log, "facts": {"model": "m1"}}});
    serve.send_line(step.to_string().as_bytes());
    let cancel = json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}});
    serve.send_line(cancel.to_string().as_bytes());
    let answer = serve.answer();
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    assert_eq!(answer["error"]["data"]["kind"], "cancelled", "{answer}");
    assert!(!log.exists());
}

/// Why the server `down` at `port` has nothing: rmcp's words for the request that failed,
/// and the cause they leave out.
fn refused(port: u16) -> String {
    let url = format!("http://127.0.0.1:{port}/mcp");
    format!(
        "mcp-client(down): {url}: Client error: error sending request for url ({url}), when send discover request: connection refused"
    )
}
