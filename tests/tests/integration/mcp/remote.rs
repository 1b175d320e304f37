//! Remote MCP servers over Streamable HTTP, end to end: real servers on loopback (the
//! official Python SDK's `tests/fixtures/mcp/http_server.py` in stateful and stateless mode,
//! the npm reference "everything" server, and an OAuth authorization server from npm),
//! through the real `mcp-instructions` Wasm plugin into a host's scoped section.
//!
//! They show both lifecycles (2026-07-28 `server/discover` and the `initialize` fallback),
//! a time to live and a list change producing a new generation (and an unchanged refresh
//! none), instructions switched off leaving the tools, the faults a remote server has
//! (killed and restarted, 500s, too slow, 10 MB of instructions, never answering) with the
//! host serving other scopes meanwhile, and OAuth client credentials with tokens renewed.
//! Like the other MCP tests they need the Python `mcp` package (and, for the npm servers,
//! `npm ci` in `tests/fixtures/mcp-npm`), and fail saying so when it is missing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use prompt_host::mcp::{
    ClientCredentials, LifecycleUsed, McpServerSpec, McpState, ReconnectPolicy, RemoteServer,
    Secret,
};
use prompt_host::prompt::{PromptConfig, SectionDef, TextSource};
use prompt_host::{Facts, Host, McpId, McpSpec, RuntimeConfig};

use crate::integration::mcp::client::{fixtures, python, python_mcp_available, serial};
use crate::integration::mcp::prompt::wait_status;

const WAIT: Duration = Duration::from_secs(30);
const FAST_RETRY: ReconnectPolicy =
    ReconnectPolicy::new(Duration::from_millis(100), Duration::from_millis(500));
const SECTION: &str = "mcp:fx:instructions";

/// A server process on loopback, killed when dropped.
pub(crate) struct Served {
    child: Child,
    pub(crate) port: u16,
    /// Holds the port file while the server runs.
    _dir: tempfile::TempDir,
}

impl Served {
    /// Starts `command`, telling it to write its port to `port` in `dir` (with
    /// `port_file_arg`, or in the environment), and waits (bounded) for the port it writes
    /// once it listens; `dir` lives as long as the server.
    fn start(mut command: Command, port_file_arg: Option<&str>, dir: tempfile::TempDir) -> Served {
        let port_file = dir.path().join("port");
        if let Some(flag) = port_file_arg {
            command.arg(flag).arg(&port_file);
        }
        command
            .env("LISTEN_PORT_FILE", &port_file)
            .env("AS_PORT_FILE", &port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let child = command.spawn().expect("start the fixture server");
        let mut served = Served {
            child,
            port: 0,
            _dir: dir,
        };
        let started = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                if let Ok(port) = text.trim().parse() {
                    served.port = port;
                    return served;
                }
            }
            if let Ok(Some(status)) = served.child.try_wait() {
                panic!("the fixture server exited before listening: {status}");
            }
            assert!(
                started.elapsed() < WAIT,
                "the fixture server did not listen within {WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The Python fixture server with `args`; its control file is `control.json` beside it.
pub(crate) fn python_server(args: &[&str]) -> (Served, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let control = dir.path().join("control.json");
    let mut command = Command::new(python());
    command
        .arg(fixtures().join("http_server.py"))
        .arg("--control")
        .arg(&control)
        .args(args);
    (Served::start(command, Some("--port-file"), dir), control)
}

/// Replace the control file (atomically, as the server expects).
pub(crate) fn control(path: &Path, value: serde_json::Value) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, value.to_string()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn npm_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp-npm")
}

/// Whether the npm fixtures are installed: always `true`, or the test fails saying how.
fn npm_fixtures_installed() -> bool {
    let installed = npm_fixtures()
        .join("node_modules/@modelcontextprotocol/server-everything")
        .exists();
    assert!(
        installed,
        "the remote MCP tests need the npm fixtures; run `npm ci --prefix tests/fixtures/mcp-npm`"
    );
    installed
}

fn host() -> Host {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-remote-cache");
    let host = Host::new(
        PromptConfig::default(),
        RuntimeConfig::with_cache_dir(cache),
    )
    .unwrap();
    host.bind_scope("agent:1", None).unwrap();
    host.bind_scope("agent:2", None).unwrap();
    let native = host.native("native", Some("agent:2"));
    native
        .section(SectionDef::new(
            "native:other",
            100.0,
            TextSource::fixed("Another agent."),
        ))
        .unwrap();
    std::mem::forget(native);
    host
}

fn remote(url: &str) -> McpServerSpec {
    McpServerSpec::remote("fx", RemoteServer::new(url)).timeout(Duration::from_secs(5))
}

fn connect(host: &Host, server: McpServerSpec) -> McpId {
    host.connect_mcp(
        McpSpec::new(server, env!("GUEST_MCP_INSTRUCTIONS"))
            .scope("agent:1")
            .reconnect(FAST_RETRY),
    )
    .unwrap()
}

/// Section `name` of `scope` as rendered.
async fn section(host: &Host, scope: &str, name: &str) -> Option<String> {
    let rendered = host.render(Some(scope), Facts::new()).await.unwrap();
    crate::integration::mcp::prompt::section(&rendered, name)
}

async fn tools(host: &Host, scope: &str) -> Vec<String> {
    let rendered = host.render(Some(scope), Facts::new()).await.unwrap();
    rendered
        .assembly
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

/// The other scope renders, and quickly, whatever the server is doing.
async fn other_scope_serves(host: &Host) {
    let started = Instant::now();
    let text = section(host, "agent:2", "native:other").await;
    assert_eq!(text.as_deref(), Some("Another agent."));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "agent:2 took {:?}",
        started.elapsed()
    );
}

fn fenced(text: &str) -> String {
    format!("Instructions from MCP server \"fx\" (third-party text, not from the operator):\n<<<\n{text}\n>>>")
}

async fn instructions_reach_the_scope(stateless: bool) {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let args: &[&str] = if stateless { &["--stateless"] } else { &[] };
    let (server, _control) = python_server(args);
    let host = host();
    let spec = McpServerSpec::remote(
        "fx",
        RemoteServer::new(server.url()).header("X-Check", Secret::new("custom-header-arrived")),
    )
    .timeout(Duration::from_secs(5));
    let id = connect(&host, spec);
    let status = wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    assert_eq!(status.state, McpState::Up);
    assert_eq!(status.transport, "http");
    assert_eq!(status.lifecycle, Some(LifecycleUsed::Discover));
    assert_eq!(status.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(status.instructions_enabled);
    assert_eq!(status.instructions, "Use the echo tool to repeat text.");
    assert_eq!(
        section(&host, "agent:1", SECTION).await.as_deref(),
        Some(fenced("Use the echo tool to repeat text.").as_str())
    );
    assert_eq!(tools(&host, "agent:1").await, ["mcp__fx__echo"]);
    assert_eq!(
        section(&host, "agent:2", SECTION).await,
        None,
        "another scope sees nothing of it"
    );
    other_scope_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_http_server_s_instructions_reach_the_scoped_section_by_discover() {
    instructions_reach_the_scope(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_http_server_s_instructions_reach_the_scoped_section_by_discover() {
    instructions_reach_the_scope(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_knows_only_initialize_is_reached_by_the_fallback_over_http_and_stdio() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    for stateless in [false, true] {
        let mut args = vec!["--legacy-only", "--instructions", "Legacy server."];
        if stateless {
            args.push("--stateless");
        }
        let (server, _control) = python_server(&args);
        let host = host();
        let id = connect(&host, remote(&server.url()));
        let status = wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
        assert_eq!(
            status.lifecycle,
            Some(LifecycleUsed::Initialize),
            "stateless: {stateless}"
        );
        assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
        assert_eq!(
            section(&host, "agent:1", SECTION).await.as_deref(),
            Some(fenced("Legacy server.").as_str())
        );
    }
    // The stdio fixture over the same automatic choice, and the old handshake on request.
    for (lifecycle, expected) in [
        (prompt_host::mcp::McpLifecycle::Auto, None),
        (
            prompt_host::mcp::McpLifecycle::Initialize,
            Some(LifecycleUsed::Initialize),
        ),
    ] {
        let host = host();
        let spec = crate::integration::mcp::client::server(&["--instructions", "Over stdio."])
            .lifecycle(lifecycle);
        let id = connect(&host, spec);
        let status = wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
        assert_eq!(status.transport, "stdio");
        if let Some(expected) = expected {
            assert_eq!(status.lifecycle, Some(expected));
        }
        assert_eq!(
            section(&host, "agent:1", SECTION).await.as_deref(),
            Some(fenced("Over stdio.").as_str())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_to_live_rereads_the_server_and_only_a_change_makes_a_generation() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let (server, control_file) = python_server(&["--ttl-ms", "1000", "--instructions", "First."]);
    let host = host();
    let id = connect(&host, remote(&server.url()));
    wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    // Three refreshes that find nothing new: no new generation, the log would see nothing.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let status = host
        .mcp_status()
        .into_iter()
        .find(|k| k.id == id)
        .unwrap()
        .status;
    assert_eq!(
        (status.generations, status.live_generation, status.failures),
        (1, Some(1), 0),
        "{status:?}"
    );
    let before = host.render(Some("agent:1"), Facts::new()).await.unwrap();
    control(
        &control_file,
        serde_json::json!({"instructions": "Second."}),
    );
    let status = wait_status(&host, id, "the refreshed generation", |s| {
        s.live_generation == Some(2)
    })
    .await;
    assert_eq!(status.instructions, "Second.");
    assert_eq!(
        section(&host, "agent:1", SECTION).await.as_deref(),
        Some(fenced("Second.").as_str())
    );
    // The cache-prefix report names the server's section as where the prompt changed.
    let after = host.render(Some("agent:1"), Facts::new()).await.unwrap();
    use prompt_host::prompt::cache_prefix::{compare, section_spans};
    let (previous, _) = section_spans(&before.assembly, usize::MAX).unwrap();
    let (current, spans) = section_spans(&after.assembly, usize::MAX).unwrap();
    let report = compare(&previous, &current, &spans);
    assert_eq!(
        report.first_changed_section.as_deref(),
        Some(SECTION),
        "{report:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_makes_a_new_generation_in_both_lifecycles() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    // 2026-07-28: the change arrives on the subscriptions/listen stream; the handshake era:
    // on the stateful session's GET stream.
    for args in [&[][..], &["--stateless"][..], &["--legacy-only"][..]] {
        let (server, control_file) = python_server(args);
        let host = host();
        let id = connect(&host, remote(&server.url()));
        wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
        assert_eq!(tools(&host, "agent:1").await, ["mcp__fx__echo"]);
        // Let the listening stream settle before the change.
        tokio::time::sleep(Duration::from_millis(500)).await;
        control(
            &control_file,
            serde_json::json!({"tools": ["echo", "extra"]}),
        );
        wait_status(&host, id, "the changed list", |s| {
            s.live_generation == Some(2)
        })
        .await;
        assert_eq!(
            tools(&host, "agent:1").await,
            ["mcp__fx__echo", "mcp__fx__extra"],
            "{args:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_switched_off_leave_the_tools() {
    let _serial = serial().await;
    if !python_mcp_available() || !npm_fixtures_installed() {
        return;
    }
    for args in [&[][..], &["--stateless"][..]] {
        let (server, _control) = python_server(args);
        instructions_off_keeps_tools(&server.url(), &["mcp__fx__echo"]).await;
    }
    let mut command = Command::new(npm_fixtures().join("everything.sh"));
    command.env("PORT", "0");
    let everything = Served::start(command, None, tempfile::tempdir().unwrap());
    instructions_off_keeps_tools(&everything.url(), &[]).await;
}

/// Connected with its instructions off: no section, the tools (at least `tools`) still there.
async fn instructions_off_keeps_tools(url: &str, expected: &[&str]) {
    let host = host();
    let id = connect(&host, remote(url).instructions(false));
    let status = wait_status(&host, id, "published", |s| s.live_generation >= Some(1)).await;
    assert!(!status.instructions_enabled);
    assert_eq!(status.instructions, "");
    assert_eq!(section(&host, "agent:1", SECTION).await, None);
    let listed = tools(&host, "agent:1").await;
    assert!(listed.contains(&"mcp__fx__echo".to_owned()), "{listed:?}");
    if !expected.is_empty() {
        assert_eq!(listed, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_reported_and_its_restart_recovered_while_other_scopes_are_served() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let (mut server, _control) = python_server(&["--ttl-ms", "1000"]);
    let port = server.port.to_string();
    let host = host();
    let id = connect(&host, remote(&server.url()));
    wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    server.kill();
    let down = wait_status(&host, id, "down", |s| s.state == McpState::Down).await;
    let error = down.last_error.clone().unwrap();
    assert!(error.starts_with("mcp-client(fx): "), "{error}");
    // The last good generation stays in the prompt; other scopes are served.
    assert_eq!(tools(&host, "agent:1").await, ["mcp__fx__echo"]);
    other_scope_serves(&host).await;
    let (_again, _control) = python_server(&["--port", &port, "--instructions", "Back again."]);
    let up = wait_status(&host, id, "recovered", |s| {
        s.state == McpState::Up && s.instructions == "Back again."
    })
    .await;
    assert!(up.failures >= 1 && up.live_generation >= Some(2), "{up:?}");
    assert_eq!(
        section(&host, "agent:1", SECTION).await.as_deref(),
        Some(fenced("Back again.").as_str())
    );
}

/// A fault the control file turns on, reported naming the server with `expected` in its
/// error, the host serving other scopes meanwhile, and recovery once it is turned off.
async fn fault_then_recovery(args: &[&str], fault: serde_json::Value, expected: &str) {
    let (server, control_file) = python_server(args);
    let host = host();
    let spec = remote(&server.url()).timeout(Duration::from_millis(1500));
    let id = connect(&host, spec);
    wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    control(&control_file, fault);
    let down = wait_status(&host, id, "down", |s| s.state == McpState::Down).await;
    let error = down.last_error.clone().unwrap();
    assert!(
        error.starts_with("mcp-client(fx): ") && error.contains(expected),
        "{error}"
    );
    other_scope_serves(&host).await;
    assert_eq!(
        tools(&host, "agent:1").await,
        ["mcp__fx__echo"],
        "the last good generation stays"
    );
    control(
        &control_file,
        serde_json::json!({"instructions": "Recovered."}),
    );
    wait_status(&host, id, "recovered", |s| {
        s.state == McpState::Up && s.instructions == "Recovered."
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answering_500_is_reported_and_recovered() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    fault_then_recovery(
        &["--ttl-ms", "1000"],
        serde_json::json!({"fail": 500}),
        "500",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_than_the_timeout_is_reported_and_recovered() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    fault_then_recovery(
        &["--ttl-ms", "1000"],
        serde_json::json!({"delay_ms": 4000}),
        "within 1500 ms",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_reported_and_recovered() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    fault_then_recovery(
        &["--ttl-ms", "1000"],
        serde_json::json!({"hang": true}),
        "within 1500 ms",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_megabytes_of_instructions_are_refused_naming_the_server() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let (server, _control) = python_server(&["--instructions-bytes", "10485760"]);
    let host = host();
    let id = connect(&host, remote(&server.url()));
    let down = wait_status(&host, id, "refused", |s| s.failures >= 1).await;
    let error = down.last_error.unwrap();
    assert!(
        error.starts_with("mcp-client(fx): ")
            && error.contains("exceeded the maximum size of 4194304 bytes"),
        "{error}"
    );
    assert!(
        !error.contains("rmcp::"),
        "no type names in a message: {error}"
    );
    assert_eq!(down.live_generation, None);
    assert_eq!(section(&host, "agent:1", SECTION).await, None);
    other_scope_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_everything_reference_server_is_reached_over_streamable_http() {
    let _serial = serial().await;
    if !npm_fixtures_installed() {
        return;
    }
    let mut command = Command::new(npm_fixtures().join("everything.sh"));
    command.env("PORT", "0");
    let server = Served::start(command, None, tempfile::tempdir().unwrap());
    let host = host();
    let id = connect(&host, remote(&server.url()));
    let status = wait_status(&host, id, "published", |s| s.live_generation >= Some(1)).await;
    // It speaks only the handshake era: the automatic choice falls back.
    assert_eq!(status.lifecycle, Some(LifecycleUsed::Initialize));
    assert!(
        status.instructions.contains("Everything Server"),
        "{}",
        status.instructions
    );
    let text = section(&host, "agent:1", SECTION).await.unwrap();
    assert!(text.contains("Everything Server"), "{text}");
    assert!(tools(&host, "agent:1")
        .await
        .contains(&"mcp__fx__echo".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_client_credentials_reach_a_protected_server_and_are_renewed() {
    let _serial = serial().await;
    if !python_mcp_available() || !npm_fixtures_installed() {
        return;
    }
    let mut command = Command::new("node");
    command
        .arg(npm_fixtures().join("oauth_server.mjs"))
        .env("CLIENT_ID", "prompt-host-test")
        .env("CLIENT_SECRET", "client-secret-value-7c1f")
        .env("TOKEN_TTL_S", "6");
    let issuer = Served::start(command, Some("--port-file"), tempfile::tempdir().unwrap());
    let issuer_url = format!("http://127.0.0.1:{}", issuer.port);
    let auth_dir = tempfile::tempdir().unwrap();
    let auth_log = auth_dir.path().join("auth.jsonl");
    let (server, _control) = python_server(&[
        "--require-bearer",
        &issuer_url,
        "--log-auth",
        auth_log.to_str().unwrap(),
    ]);
    // Refused without a token, naming the server and what was answered.
    let host = host();
    let id = connect(&host, remote(&server.url()));
    let refused = wait_status(&host, id, "refused", |s| s.failures >= 1).await;
    assert!(
        refused
            .last_error
            .as_deref()
            .unwrap()
            .starts_with("mcp-client(fx): "),
        "{refused:?}"
    );
    drop(host);
    // A wrong secret: the authorization server's answer, never the secret.
    let host = self::host();
    let wrong = ClientCredentials::new(
        format!("{issuer_url}/token"),
        "prompt-host-test",
        Secret::new("wrong-secret-9d2e"),
    );
    let id = connect(
        &host,
        McpServerSpec::remote("fx", RemoteServer::new(server.url()).oauth(wrong)),
    );
    let refused = wait_status(&host, id, "refused", |s| s.failures >= 1).await;
    let error = refused.last_error.unwrap();
    assert!(
        error.contains("invalid_client") && !error.contains("wrong-secret-9d2e"),
        "{error}"
    );
    drop(host);
    // The right one: published, then the 6-second token is renewed without a failure, at
    // the 5-second floor (half its life would be 3 s).
    let host = self::host();
    let grant = ClientCredentials::new(
        format!("{issuer_url}/token"),
        "prompt-host-test",
        Secret::new("client-secret-value-7c1f"),
    );
    let id = connect(
        &host,
        McpServerSpec::remote("fx", RemoteServer::new(server.url()).oauth(grant))
            .timeout(Duration::from_secs(5)),
    );
    let status = wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    assert_eq!(status.failures, 0);
    tokio::time::sleep(Duration::from_secs(7)).await;
    let status = host
        .mcp_status()
        .into_iter()
        .find(|k| k.id == id)
        .unwrap()
        .status;
    assert_eq!(
        (status.state, status.failures, status.live_generation),
        (McpState::Up, 0, Some(1)),
        "{status:?}"
    );
    let tokens: std::collections::BTreeSet<String> = std::fs::read_to_string(&auth_log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["token_sha256"].as_str().map(str::to_owned))
        .collect();
    assert!(tokens.len() >= 2, "a renewed token was used: {tokens:?}");
    assert!(section(&host, "agent:1", SECTION).await.is_some());
}

/// A host.toml with one remote server `fx` in `agent:1` at `url`, its `Authorization`
/// header from `${env:PH_TEST_MCP_TOKEN}`.
fn remote_toml(url: &str, extra: &str) -> String {
    format!(
        "[host]\nmcp_provider = {provider:?}\n\n[[scope]]\nname = \"agent:1\"\n\n\
         [[mcp]]\nname = \"fx\"\nurl = {url:?}\nscope = \"agent:1\"\ntimeout_ms = 3000\n\
         headers = {{ Authorization = \"Bearer ${{env:PH_TEST_MCP_TOKEN}}\", X-Check = \"visible\" }}\n{extra}",
        provider = env!("GUEST_MCP_INSTRUCTIONS"),
    )
}

const TOKEN: &str = "tok-e0b1c9d27f4a4b8e-never-shown";

fn cli(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(crate::integration::support::cli::bin())
        .args(args)
        .current_dir(dir)
        .env("PH_TEST_MCP_TOKEN", TOKEN)
        .env("PROMPT_HOST_CACHE_DIR", dir.join("cache"))
        .stdin(Stdio::null())
        .output()
        .expect("run prompt-host")
}

#[test]
fn a_header_secret_reaches_the_server_and_no_output_log_or_session() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    if !python_mcp_available() {
        return;
    }
    let auth_dir = tempfile::tempdir().unwrap();
    let auth_log = auth_dir.path().join("auth.jsonl");
    let (server, control_file) = python_server(&["--log-auth", auth_log.to_str().unwrap()]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("host.toml");
    std::fs::write(&config, remote_toml(&server.url(), "")).unwrap();
    let config = config.to_str().unwrap();
    let log = dir.path().join("session.jsonl");
    let mut seen = String::new();
    let mut keep = |out: &std::process::Output| {
        seen.push_str(&String::from_utf8_lossy(&out.stdout));
        seen.push_str(&String::from_utf8_lossy(&out.stderr));
    };
    // A step, an inspect at the most detailed level, and a render while the server refuses.
    let step = cli(
        dir.path(),
        &[
            "step",
            "--config",
            config,
            "--scope",
            "agent:1",
            "--session",
            log.to_str().unwrap(),
            "--user",
            "hi",
            "--log-level",
            "trace",
        ],
    );
    assert!(
        step.status.success(),
        "{}",
        String::from_utf8_lossy(&step.stderr)
    );
    assert!(String::from_utf8_lossy(&step.stdout).contains("mcp__fx__echo"));
    keep(&step);
    let inspect = cli(
        dir.path(),
        &[
            "inspect",
            "--config",
            config,
            "--scope",
            "agent:1",
            "--log-level",
            "trace",
        ],
    );
    assert!(inspect.status.success());
    let shown = String::from_utf8_lossy(&inspect.stdout).into_owned();
    assert!(
        shown.contains("MCP SERVER") && shown.contains("http") && shown.contains("discover"),
        "{shown}"
    );
    keep(&inspect);
    control(&control_file, serde_json::json!({"fail": 401}));
    let refused = cli(
        dir.path(),
        &[
            "render",
            "--config",
            config,
            "--scope",
            "agent:1",
            "--log-level",
            "trace",
        ],
    );
    let warned = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(
        warned.contains("MCP server \"fx\" (scope agent:1)"),
        "{warned}"
    );
    keep(&refused);
    control(&control_file, serde_json::json!({}));
    // serve: the status and its own stderr.
    let mut serve = Command::new(crate::integration::support::cli::bin())
        .args(["serve", "--config", config])
        .env("PH_TEST_MCP_TOKEN", TOKEN)
        .env("PROMPT_HOST_CACHE_DIR", dir.path().join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = serve.stdin.take().unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":1,"method":"mcp_status","params":{{"wait_ms":20000}}}}"#
        )
        .unwrap();
    }
    let served = serve.wait_with_output().unwrap();
    let status = String::from_utf8_lossy(&served.stdout).into_owned();
    assert!(
        status.contains(r#""transport":"http""#) && status.contains(r#""lifecycle":"discover""#),
        "{status}"
    );
    keep(&served);
    // The token did reach the server (its hash is what the server logged) ...
    use sha2::Digest;
    let hash = format!("{:x}", sha2::Sha256::digest(TOKEN.as_bytes()));
    let auth = std::fs::read_to_string(&auth_log).unwrap();
    assert!(auth.contains(&hash), "the header was sent: {auth}");
    // ... and nowhere else: no output stream, no log line, not the session log.
    seen.push_str(&std::fs::read_to_string(&log).unwrap());
    assert!(
        !seen.contains(TOKEN) && !seen.contains("e0b1c9d27f4a4b8e"),
        "the secret leaked:\n{seen}"
    );
}

#[test]
fn remote_entries_are_checked_at_load_and_their_secrets_when_the_host_starts() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let provider = env!("GUEST_MCP_INSTRUCTIONS");
    let refused = |entry: &str| {
        let text = format!("[host]\nmcp_provider = {provider:?}\n[[mcp]]\nname = \"fx\"\n{entry}");
        prompt_host::config::HostConfig::parse(&text, "host.toml", base)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused("command = \"x\"\nurl = \"https://a.example/mcp\"\n"),
        "host.toml: mcp[0].url: expected `command` (a server over stdio) or `url` (a remote server), not both"
    );
    assert_eq!(
        refused(""),
        "host.toml: mcp[0].command: MCP server \"fx\" needs `command` (a server over stdio) or `url` (a remote server over Streamable HTTP)"
    );
    assert_eq!(
        refused("url = \"http://mcp.example.com/mcp\"\n"),
        "host.toml: mcp[0].url: the server's endpoint is plain http on a host that is not loopback; use https:// (secrets would cross the network in clear text)"
    );
    assert_eq!(
        refused("url = \"https://user:pw@mcp.example.com/mcp\"\n"),
        "host.toml: mcp[0].url: the server's endpoint must not carry credentials; put them in `headers` or [mcp.oauth]"
    );
    assert_eq!(
        refused("url = \"https://mcp.example.com/mcp\"\nheaders = { Mcp-Session-Id = \"x\" }\n"),
        "host.toml: mcp[0].headers.Mcp-Session-Id: this header is set by the MCP transport itself"
    );
    assert_eq!(
        refused("url = \"https://mcp.example.com/mcp\"\nheaders = { Authorization = \"Bearer ${TOKEN}\" }\n"),
        "host.toml: mcp[0].headers.Authorization: `${TOKEN}` is not a reference this host knows: write ${env:NAME}"
    );
    assert_eq!(
        refused("command = \"x\"\nheaders = { X = \"y\" }\n"),
        "host.toml: mcp[0].headers: only a remote server (`url`) takes this"
    );
    let lifecycle = refused("url = \"https://mcp.example.com/mcp\"\nlifecycle = \"sometimes\"\n");
    assert!(
        lifecycle.contains("unknown variant `sometimes`"),
        "{lifecycle}"
    );
    // A secret whose variable is not set: the host does not start, and says which.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("host.toml"),
        remote_toml("https://mcp.example.com/mcp", "")
            .replace("PH_TEST_MCP_TOKEN", "PH_TEST_UNSET_VARIABLE_7"),
    )
    .unwrap();
    let out = cli(
        dir.path(),
        &["render", "--config", "host.toml", "--scope", "agent:1"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("mcp[0].headers.Authorization: the environment variable PH_TEST_UNSET_VARIABLE_7 is not set"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_file_that_is_a_fifo_is_refused_at_load_and_when_swapped_in_later_never_hangs() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ca.pem");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // At load: refused, naming the key.
    let text = format!(
        "[host]\nmcp_provider = {:?}\n[[mcp]]\nname = \"fx\"\nurl = \"https://127.0.0.1:9/mcp\"\nca_file = \"ca.pem\"\n",
        env!("GUEST_MCP_INSTRUCTIONS")
    );
    let refused = prompt_host::config::HostConfig::parse(&text, "host.toml", dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        refused.starts_with("host.toml: mcp[0].ca_file: ")
            && refused.ends_with("expected a PEM file of CA certificates"),
        "{refused}"
    );
    // Swapped in after load (the library takes the path as given): that server fails at once,
    // naming it, and nothing waits for a writer that never comes.
    let (server, _control) = python_server(&[]);
    let host = host();
    let id = connect(
        &host,
        McpServerSpec::remote("fx", RemoteServer::new(server.url()).ca_file(&fifo)),
    );
    let down = wait_status(&host, id, "refused", |s| s.failures >= 1).await;
    let error = down.last_error.unwrap();
    assert!(
        error.starts_with("mcp-client(fx): ") && error.contains("cannot read ca_file"),
        "{error}"
    );
    other_scope_serves(&host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_to_live_of_one_millisecond_is_not_a_loop() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let requests = dir.path().join("headers.jsonl");
    let (server, _control) =
        python_server(&["--ttl-ms", "1", "--headers-log", requests.to_str().unwrap()]);
    let host = host();
    let id = connect(&host, remote(&server.url()));
    wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    let counted = |path: &Path| {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let before = counted(&requests);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = counted(&requests) - before;
    // One re-read a second at most (a discover and a list, each one request): a server's
    // 1 ms does not make the host hammer it.
    assert!(during <= 8, "{during} requests in 3 s");
    assert!(
        during >= 2,
        "the time to live is honoured at its floor: {during} requests in 3 s"
    );
    let status = host
        .mcp_status()
        .into_iter()
        .find(|k| k.id == id)
        .unwrap()
        .status;
    assert_eq!(status.generations, 1, "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_private_ca_needs_its_ca_file() {
    let _serial = serial().await;
    if !python_mcp_available() {
        return;
    }
    let tls = tempfile::tempdir().unwrap();
    let (server, _control) = python_server(&["--tls-dir", tls.path().to_str().unwrap()]);
    let url = format!("https://127.0.0.1:{}/mcp", server.port);
    // Not among the platform's roots: refused, naming the server.
    let host = host();
    let id = connect(&host, remote(&url));
    let refused = wait_status(&host, id, "refused", |s| s.failures >= 1).await;
    let error = refused.last_error.unwrap();
    assert!(
        error.starts_with(&format!("mcp-client(fx): {url}: ")),
        "{error}"
    );
    drop(host);
    // With its CA as `ca_file`: reached.
    let host = self::host();
    let spec = McpServerSpec::remote(
        "fx",
        RemoteServer::new(&url).ca_file(tls.path().join("ca.pem")),
    )
    .timeout(Duration::from_secs(5));
    let id = connect(&host, spec);
    let status = wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    assert_eq!(status.lifecycle, Some(LifecycleUsed::Discover));
    assert_eq!(tools(&host, "agent:1").await, ["mcp__fx__echo"]);
}
