//! The MCP client against hostile peers, and what its attacks share: a minimal MCP server
//! over Streamable HTTP for the hostile-peer kit, a token endpoint that counts what it is
//! asked, and a host with one remote server in `agent:1`. The attacks: answers bounded in
//! bytes and time (here), the token service at its extremes ([`crate::integration::peers::hostile_tokens`]),
//! and what a peer says shown escaped ([`crate::integration::peers::hostile_text`]).
//!
//! A remote server's answer that is endless, 1 GiB, a line of an event that never ends,
//! trickled or never given, or 10,000 headers, costs that server a failure naming it within
//! its timeout, whether it is the answer to `initialize` or to `tools/list` after a good
//! start.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prompt_host::mcp::{
    ClientCredentials, McpLifecycle, McpServerSpec, McpStatus, ReconnectPolicy, RemoteServer,
    Secret,
};
use prompt_host::prompt::PromptConfig;
use prompt_host::{Host, McpId, McpSpec, RuntimeConfig};
use serde_json::{json, Value};

use crate::integration::mcp::client::serial;
use crate::integration::mcp::prompt::wait_status;
use crate::integration::support::hostile_peer::{
    shows_no_raw_control, Answer, Peer, Reply, Request,
};

/// [`forged_text`] as every message shows it.
pub(crate) const FORGED_SHOWN: &str = "\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{1b}[31mred\\rwarning: \
     forged\\nerror: forged line\\n\\u{202e}txt.exe\\u{2066}x\\u{2069}";

/// One attack: what it is, the answer that makes it, and what the error must say.
pub(crate) type Case = (&'static str, fn() -> Answer, &'static str);

pub(crate) const FAST_RETRY: ReconnectPolicy =
    ReconnectPolicy::new(Duration::from_millis(100), Duration::from_millis(500));
pub(crate) const TIMEOUT: Duration = Duration::from_millis(1500);
pub(crate) const CLIENT_SECRET: &str = "client-secret-3f9a";

/// A minimal MCP server over Streamable HTTP at any path: stateless, JSON answers, the
/// `initialize` lifecycle, no tools.
pub(crate) fn mcp_answer(request: &Request) -> Answer {
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
            "serverInfo": {"name": "hostile", "version": "1"},
            "instructions": "Fine.",
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

/// A token endpoint answering every request with `answer`, counting them.
pub(crate) fn token_endpoint(
    answer: impl Fn() -> Answer + Send + Sync + 'static,
) -> (Peer, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    let peer = Peer::http(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        answer()
    });
    (peer, count)
}

/// A token response with `expires_in` written as `expires` (raw JSON).
pub(crate) fn token_with(expires: &str) -> Answer {
    Reply::new(200)
        .header("content-type", "application/json")
        .body(format!(
            r#"{{"access_token":"tok-1","token_type":"Bearer","expires_in":{expires}}}"#
        ))
        .into()
}

pub(crate) fn host() -> Host {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("peers-hostile-cache");
    let host = Host::new(
        PromptConfig::default(),
        RuntimeConfig::with_cache_dir(cache),
    )
    .unwrap();
    host.bind_scope("agent:1", None).unwrap();
    host
}

pub(crate) fn spec(remote: RemoteServer) -> McpServerSpec {
    McpServerSpec::remote("fx", remote)
        .timeout(TIMEOUT)
        .lifecycle(McpLifecycle::Initialize)
}

pub(crate) fn grant(token: &Peer) -> ClientCredentials {
    ClientCredentials::new(
        token.url("/token"),
        "prompt-host",
        Secret::new(CLIENT_SECRET),
    )
}

pub(crate) fn connect(host: &Host, server: McpServerSpec) -> McpId {
    host.connect_mcp(
        McpSpec::new(server, env!("GUEST_MCP_INSTRUCTIONS"))
            .scope("agent:1")
            .reconnect(FAST_RETRY),
    )
    .unwrap()
}

pub(crate) fn status(host: &Host, id: McpId) -> McpStatus {
    host.mcp_status()
        .into_iter()
        .find(|k| k.id == id)
        .unwrap()
        .status
}

/// The first failure of the server behind `token`, within a bound; its error.
pub(crate) async fn first_failure(host: &Host, id: McpId) -> String {
    let down = wait_status(host, id, "a failure", |s| s.failures >= 1).await;
    assert_eq!(down.live_generation, None, "{down:?}");
    down.last_error.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_s_huge_endless_or_trickled_answer_is_bounded_in_bytes_and_time() {
    let _serial = serial().await;
    let cases: Vec<Case> = vec![
        (
            "an endless JSON body",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .endless()
                    .into()
            },
            "4194304",
        ),
        (
            "a 1 GiB JSON body, declared",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .sized(1 << 30, true)
                    .into()
            },
            "4194304",
        ),
        (
            // A line that never ends: the event it is part of cannot end either.
            "an event that never ends",
            || {
                Reply::new(200)
                    .header("content-type", "text/event-stream")
                    .endless()
                    .into()
            },
            "",
        ),
        (
            "a trickled answer",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .trickle(vec![b' '; 600], Duration::from_millis(100))
                    .into()
            },
            "no answer to initialize within 1500 ms",
        ),
        (
            "no answer",
            || Answer::Hang,
            "no answer to initialize within 1500 ms",
        ),
        (
            "10,000 headers",
            || Reply::new(200).many_headers(10_000).into(),
            "",
        ),
    ];
    for (what, answer, expected) in cases {
        let server = Peer::http(move |_| answer());
        let host = host();
        let started = Instant::now();
        let id = connect(&host, spec(RemoteServer::new(server.url("/mcp"))));
        let error = first_failure(&host, id).await;
        let took = started.elapsed();
        assert!(
            error.starts_with("mcp-client(fx): ") && error.contains(expected),
            "{what}: {error}"
        );
        assert!(shows_no_raw_control(&error), "{what}: {error:?}");
        assert!(
            server.body_bytes_sent() < 40 << 20,
            "{what}: {} bytes sent",
            server.body_bytes_sent()
        );
        // The timeout (1.5 s) and a loaded machine; the trickle alone is a minute.
        assert!(took < Duration::from_secs(15), "{what}: {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_answer_trickled_or_endless_is_bounded_after_a_good_start() {
    let _serial = serial().await;
    let cases: Vec<Case> = vec![
        (
            "trickled",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .trickle(vec![b' '; 600], Duration::from_millis(100))
                    .into()
            },
            "mcp-client(fx): no answer to tools/list within 1500 ms",
        ),
        (
            "never answered",
            || Answer::Hang,
            "mcp-client(fx): no answer to tools/list within 1500 ms",
        ),
        (
            "endless",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .endless()
                    .into()
            },
            "4194304",
        ),
    ];
    for (what, answer, expected) in cases {
        let server = Peer::http(move |request| {
            let message: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            match message["method"].as_str() {
                Some("tools/list") => answer(),
                _ => mcp_answer(request),
            }
        });
        let host = host();
        let started = Instant::now();
        let id = connect(&host, spec(RemoteServer::new(server.url("/mcp"))));
        let error = first_failure(&host, id).await;
        let took = started.elapsed();
        assert!(error.contains(expected), "{what}: {error}");
        assert!(
            server.body_bytes_sent() < 40 << 20,
            "{what}: {} bytes sent",
            server.body_bytes_sent()
        );
        assert!(took < Duration::from_secs(15), "{what}: {took:?}");
    }
}
