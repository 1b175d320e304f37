//! MCP servers configured in host.toml: `Host::from_config` needs a Tokio runtime, and the
//! real `prompt-host render` waits for a server's first generation so its instructions are
//! in the one-shot prompt.

use std::time::Instant;

use prompt_host::{Host, RuntimeConfig};

use crate::integration::mcp::client::{fixtures, python, python_mcp_available};
use crate::integration::mcp::prompt::FENCED;
use crate::integration::support::cli::Deployment;

#[test]
fn from_config_outside_a_tokio_runtime_is_refused_naming_the_server() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[host]\nmcp_provider = {provider:?}\n[[mcp]]\nname = \"fx\"\ncommand = \"unused\"\n",
        provider = env!("GUEST_MCP_INSTRUCTIONS")
    );
    let config = prompt_host::HostConfig::parse(&text, "host.toml", dir.path()).unwrap();
    let runtime = RuntimeConfig::with_cache_dir(dir.path());
    let error = match Host::from_config(&config, runtime) {
        Ok(_) => panic!("from_config without a Tokio runtime must fail"),
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains("MCP server \"fx\" (global)") && error.contains("Tokio runtime"),
        "{error}"
    );
}

/// A deployment with the fixture MCP server `fx` in `agent:1` (and an unrelated `agent:2`).
fn fx_deployment() -> Deployment {
    let text = format!(
        "[host]\nmcp_provider = {provider:?}\n\
         [[scope]]\nname = \"agent:1\"\n[[scope]]\nname = \"agent:2\"\n\
         [[mcp]]\nname = \"fx\"\ncommand = {python:?}\nscope = \"agent:1\"\ntimeout_ms = 20000\n\
         args = [{server:?}, \"--instructions\", \"Use echo to repeat text.\"]\n",
        provider = env!("GUEST_MCP_INSTRUCTIONS"),
        python = python(),
        server = fixtures().join("server.py").display().to_string(),
    );
    Deployment::new(&text)
}

#[test]
fn the_cli_renders_the_instructions_of_a_configured_server() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let deployment = fx_deployment();
    let config = deployment.config().display().to_string();
    let render = |scope: &str| {
        let started = Instant::now();
        let run = deployment.run(&["render", "--config", &config, "--scope", scope]);
        eprintln!(
            "mcp prompt: `prompt-host render --scope {scope}` took {:?}",
            started.elapsed()
        );
        run
    };
    let run = render("agent:1");
    assert!(
        run.ok().contains(FENCED),
        "{}\n--- stderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let run = render("agent:2");
    assert!(!run.ok().contains("MCP server"), "{}", run.stdout);
}

/// `serve`'s `mcp_status` reports every configured server; with `wait_ms` it first waits for
/// the servers' first generation, so the next `render` has their instructions.
#[test]
fn serve_reports_mcp_status_and_waits_for_the_first_generation() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let deployment = fx_deployment();
    let config = deployment.config().display().to_string();
    // Requests run concurrently; a batch runs its requests in order, so the render waits
    // for the status call that waits for the first generation.
    let input = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"mcp_status\",\"params\":{\"wait_ms\":30000}},\
                  {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"render\",\"params\":{\"scope\":\"agent:1\"}}]\n\
                 {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"mcp_status\",\"params\":{\"wait\":1}}\n";
    let run = deployment.run_with_input(&["serve", "--config", &config], input);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Responses by id (a batch is answered as one array line, in any order with the rest).
    let mut responses = vec![serde_json::Value::Null; 3];
    for line in run.stdout.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let items = match value {
            serde_json::Value::Array(items) => items,
            one => vec![one],
        };
        for item in items {
            let id = item["id"].as_u64().unwrap_or_else(|| panic!("{item}"));
            responses[id as usize - 1] = item;
        }
    }
    assert!(responses.iter().all(|r| !r.is_null()), "{}", run.stdout);
    let status = &responses[0]["result"];
    assert_eq!(status.as_array().map(Vec::len), Some(1), "{status}");
    let fx = &status[0];
    assert_eq!(fx["server"], "fx");
    assert_eq!(fx["scope"], "agent:1");
    assert_eq!(fx["plugin"], "mcp:fx");
    assert_eq!(fx["state"], "up", "{fx}");
    assert!(fx["published"].as_u64() >= Some(1), "{fx}");
    assert!(fx["live_generation"].is_u64(), "{fx}");
    let prompt = responses[1]["result"]["prompt"]
        .as_str()
        .unwrap_or_default();
    assert!(prompt.contains(FENCED), "{prompt}");
    assert_eq!(responses[2]["error"]["code"], -32602, "{}", responses[2]);
}

/// Relative paths in an `[[mcp]]` entry mean "next to host.toml", like every path there:
/// run from another directory, the server script given as `server.py` is still found.
#[test]
fn relative_server_arguments_resolve_against_host_toml() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let deployment = Deployment::new(&format!(
        "[host]\nmcp_provider = {provider:?}\n\
         [[mcp]]\nname = \"fx\"\ncommand = {python:?}\ntimeout_ms = 20000\n\
         args = [\"server.py\", \"--instructions\", \"Relative works.\"]\n",
        provider = env!("GUEST_MCP_INSTRUCTIONS"),
        python = python(),
    ));
    std::fs::copy(fixtures().join("server.py"), deployment.path("server.py")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(crate::integration::support::cli::bin())
        .args(["render", "--config", deployment.config().to_str().unwrap()])
        .current_dir(elsewhere.path())
        .env("PROMPT_HOST_CACHE_DIR", deployment.path("cache"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Relative works."),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
