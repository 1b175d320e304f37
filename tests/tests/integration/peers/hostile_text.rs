//! What hostile peers say reaches `mcp_status`, the command line's stderr and `serve`
//! escaped and capped: a remote server's JSON-RPC error, a token endpoint's `error` and
//! `error_description`, a stdio server's stderr (its end kept). ESC, CR, bidi controls and
//! forged `warning:`/`error:` lines become escapes; 3 MiB becomes 512 bytes and a count.

use std::process::{Command, Stdio};

use prompt_host::mcp::{McpServerSpec, RemoteServer};
use serde_json::{json, Value};

use crate::integration::mcp::client::serial;
use crate::integration::peers::hostile_mcp::{
    connect, first_failure, grant, host, mcp_answer, spec, CLIENT_SECRET, FORGED_SHOWN, TIMEOUT,
};
use crate::integration::support::hostile_peer::{forged_text, shows_no_raw_control, Peer, Reply};

fn forging_server() -> Peer {
    Peer::http(|request| {
        let message: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        match (message.get("id"), message["method"].as_str()) {
            (Some(id), Some("initialize")) => Reply::new(200)
                .json(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": forged_text()}}))
                .into(),
            _ => mcp_answer(request),
        }
    })
}

/// A token endpoint refusing with forged `error` and `error_description`.
fn forging_token_endpoint() -> Peer {
    Peer::http(|_| {
        Reply::new(400)
            .json(&json!({"error": forged_text(), "error_description": forged_text()}))
            .into()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_server_or_token_endpoint_says_reaches_the_status_escaped() {
    let _serial = serial().await;
    let server = forging_server();
    let host = host();
    let id = connect(&host, spec(RemoteServer::new(server.url("/mcp"))));
    let error = first_failure(&host, id).await;
    // rmcp calls it `Mcp error` or `JSON-RPC error` depending on where it met it.
    assert!(
        error.starts_with(&format!("mcp-client(fx): {}: ", server.url("/mcp")))
            && error.ends_with(&format!(" error: -32603: {FORGED_SHOWN}")),
        "{error}"
    );
    drop(host);

    let token = forging_token_endpoint();
    let server = Peer::http(mcp_answer);
    let host = self::host();
    let id = connect(
        &host,
        spec(RemoteServer::new(server.url("/mcp")).oauth(grant(&token))),
    );
    let error = first_failure(&host, id).await;
    assert_eq!(
        error,
        format!(
            "mcp-client(fx): {}: the token endpoint {} refused the client credentials: \
             {FORGED_SHOWN} ({FORGED_SHOWN})",
            server.url("/mcp"),
            token.url("/token")
        )
    );
    drop(host);

    // 20 MB of a JSON-RPC error message: 512 bytes of it shown.
    let huge = Peer::http(|request| {
        let message: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let error = json!({"code": -32603, "message": "e".repeat(3 << 20)});
        Reply::new(200)
            .json(&json!({"jsonrpc": "2.0", "id": message["id"], "error": error}))
            .into()
    });
    let host = self::host();
    let id = connect(&host, spec(RemoteServer::new(huge.url("/mcp"))));
    let error = first_failure(&host, id).await;
    let (shown, more) = error
        .rsplit_once(" … (")
        .unwrap_or_else(|| panic!("not capped"));
    assert!(shown.ends_with(&"e".repeat(400)), "{shown}");
    let more: usize = more.trim_end_matches(" more bytes)").parse().unwrap();
    assert!(
        ((3 << 20) - 512..3 << 20).contains(&more),
        "{more} more bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_s_forged_stderr_is_shown_escaped_and_its_end_kept() {
    let _serial = serial().await;
    let host = host();
    let mut forged = McpServerSpec::new("fx", "sh").timeout(TIMEOUT);
    forged.args = vec!["-c".into(), "printf '%s' \"$FORGED\" >&2; exit 3".into()];
    forged.env.insert("FORGED".into(), forged_text());
    let id = connect(&host, forged);
    let error = first_failure(&host, id).await;
    assert_eq!(
        error,
        format!("mcp-client(fx): server exited (exit status: 3); stderr: {FORGED_SHOWN}")
    );
    drop(host);
    // 1 MB of it, then the line that says why: the end is what is kept.
    let host = self::host();
    let mut long = McpServerSpec::new("fx", "sh").timeout(TIMEOUT);
    long.args = vec![
        "-c".into(),
        "head -c 1000000 /dev/zero | tr '\\0' 'z' >&2; printf 'Error: the real reason\\n' >&2; exit 4".into(),
    ];
    let id = connect(&host, long);
    let error = first_failure(&host, id).await;
    assert!(
        error.starts_with(
            "mcp-client(fx): server exited (exit status: 4); stderr: (999511 earlier bytes) … zzz"
        ) && error.ends_with("zzzError: the real reason"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_s_forged_json_rpc_error_is_shown_escaped() {
    let _serial = serial().await;
    let host = host();
    // Answers the first request (`initialize`) with a JSON-RPC error, and stays up.
    let mut forged = McpServerSpec::new("fx", "sh")
        .timeout(TIMEOUT)
        .lifecycle(prompt_host::mcp::McpLifecycle::Initialize);
    forged.args = vec![
        "-c".into(),
        "read line; id=$(printf '%s' \"$line\" | sed 's/.*\"id\":\\([0-9]*\\).*/\\1/'); \
         printf '{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32603,\"message\":%s}}\\n' \"$id\" \"$MSG\"; \
         sleep 30"
            .into(),
    ];
    forged
        .env
        .insert("MSG".into(), serde_json::to_string(&forged_text()).unwrap());
    let id = connect(&host, forged);
    let error = first_failure(&host, id).await;
    assert!(
        error.starts_with("mcp-client(fx): initialize failed: ")
            && error.ends_with(&format!(" error: -32603: {FORGED_SHOWN}")),
        "{error}"
    );
}

/// Text written as it is by `{:?}`.
struct Raw(String);

impl std::fmt::Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A host.toml with three failing servers: a remote one that forges its JSON-RPC error, one
/// whose token endpoint forges its refusal, a stdio one that forges its stderr.
fn forging_toml(server: &Peer, plain: &Peer, token: &Peer) -> String {
    // TOML strings as JSON writes them (`\u001b`, `\r`): the same escapes.
    let quoted = |text: &str| serde_json::to_string(text).unwrap();
    format!(
        "[host]\nmcp_provider = {provider:?}\n\n[[scope]]\nname = \"agent:1\"\n\n\
         [[mcp]]\nname = \"rpc\"\nurl = {rpc:?}\nlifecycle = \"initialize\"\ntimeout_ms = 1500\nscope = \"agent:1\"\n\n\
         [[mcp]]\nname = \"tok\"\nurl = {plain:?}\nlifecycle = \"initialize\"\ntimeout_ms = 1500\nscope = \"agent:1\"\n\
         oauth = {{ token_url = {token:?}, client_id = \"prompt-host\", client_secret = \"{CLIENT_SECRET}\" }}\n\n\
         [[mcp]]\nname = \"err\"\ncommand = \"sh\"\nargs = [\"-c\", \"printf '%s' \\\"$FORGED\\\" >&2; exit 3\"]\n\
         env = {{ FORGED = {forged:?} }}\ntimeout_ms = 1500\nscope = \"agent:1\"\n",
        provider = env!("GUEST_MCP_INSTRUCTIONS"),
        rpc = server.url("/mcp"),
        plain = plain.url("/mcp"),
        token = token.url("/token"),
        forged = Raw(quoted(&forged_text())),
    )
}

#[test]
fn forged_peer_text_reaches_the_command_line_and_serve_escaped() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    let server = forging_server();
    let plain = Peer::http(mcp_answer);
    let token = forging_token_endpoint();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("host.toml");
    std::fs::write(&config, forging_toml(&server, &plain, &token)).unwrap();
    let cache = dir.path().join("cache");
    let out = Command::new(crate::integration::support::cli::bin())
        .args([
            "render",
            "--config",
            config.to_str().unwrap(),
            "--scope",
            "agent:1",
        ])
        .env("PROMPT_HOST_CACHE_DIR", &cache)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(shows_no_raw_control(&stderr), "{stderr:?}");
    for (start, end) in [
        (
            format!("warning: MCP server \"rpc\" (scope agent:1): mcp-client(rpc): {}: ", server.url("/mcp")),
            format!(" error: -32603: {FORGED_SHOWN}; assembling without it"),
        ),
        (
            format!("warning: MCP server \"tok\" (scope agent:1): mcp-client(tok): {}: the token endpoint {} refused the client credentials: {FORGED_SHOWN} ({FORGED_SHOWN})", plain.url("/mcp"), token.url("/token")),
            "; assembling without it".to_owned(),
        ),
        (
            format!("warning: MCP server \"err\" (scope agent:1): mcp-client(err): server exited (exit status: 3); stderr: {FORGED_SHOWN}"),
            "; assembling without it".to_owned(),
        ),
    ] {
        assert!(
            stderr.lines().any(|line| line.starts_with(&start) && line.ends_with(&end)),
            "{start} … {end}\n{stderr}"
        );
    }
    assert!(!stderr.contains(CLIENT_SECRET));

    // serve: mcp_status's last_error holds no raw control character once decoded.
    let mut serve = Command::new(crate::integration::support::cli::bin())
        .args(["serve", "--config", config.to_str().unwrap()])
        .env("PROMPT_HOST_CACHE_DIR", &cache)
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
    let stdout = String::from_utf8_lossy(&served.stdout);
    let answer: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == 1)
        .unwrap_or_else(|| panic!("no answer: {stdout}"));
    let servers = answer["result"].as_array().expect("an array of servers");
    assert_eq!(servers.len(), 3, "{answer}");
    for s in servers {
        let error = s["last_error"].as_str().unwrap_or_else(|| panic!("{s}"));
        assert!(error.contains(FORGED_SHOWN), "{error}");
        assert!(shows_no_raw_control(error), "{error:?}");
    }
    let stderr = String::from_utf8_lossy(&served.stderr);
    assert!(shows_no_raw_control(&stderr), "{stderr:?}");
}
