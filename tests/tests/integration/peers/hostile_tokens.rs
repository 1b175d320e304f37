//! The MCP client against a hostile OAuth token endpoint, through the library
//! (multi-thread and current-thread runtimes) and `serve`: `expires_in` at its extremes
//! (`0`, `-1`, `2^64-1`, `1e400`, a string) neither panics nor loops; a token response that
//! is huge, endless or trickled is bounded in bytes and time; an access token with a line
//! break is refused by name; a redirect takes neither the client secret nor a configured
//! header anywhere; plain `http://` off loopback is refused before anything is sent.

use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use prompt_host::mcp::{ClientCredentials, McpState, RemoteServer, Secret};
use serde_json::{json, Value};

use crate::integration::mcp::client::serial;
use crate::integration::mcp::prompt::wait_status;
use crate::integration::peers::hostile_mcp::{
    connect, first_failure, grant, host, mcp_answer, spec, status, token_endpoint, token_with,
    Case, CLIENT_SECRET,
};
use crate::integration::support::hostile_peer::{redirect, Answer, Peer, Reply};

async fn a_token_living_2_64_seconds_is_used_and_renewed_within_a_day() {
    let server = Peer::http(mcp_answer);
    let (token, fetched) = token_endpoint(|| token_with("18446744073709551615"));
    let host = host();
    let id = connect(
        &host,
        spec(RemoteServer::new(server.url("/mcp")).oauth(grant(&token))),
    );
    let up = wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    assert_eq!((up.state, up.failures), (McpState::Up, 0), "{up:?}");
    assert_eq!(fetched.load(Ordering::SeqCst), 1);
    let sent = server.requests();
    assert!(sent
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer tok-1")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expires_in_2_64_minus_1_neither_panics_nor_stalls_multi_thread() {
    let _serial = serial().await;
    a_token_living_2_64_seconds_is_used_and_renewed_within_a_day().await;
}

#[tokio::test(flavor = "current_thread")]
async fn expires_in_2_64_minus_1_neither_panics_nor_stalls_current_thread() {
    let _serial = serial().await;
    a_token_living_2_64_seconds_is_used_and_renewed_within_a_day().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expires_in_0_renews_no_sooner_than_the_floor() {
    let _serial = serial().await;
    let server = Peer::http(mcp_answer);
    let (token, fetched) = token_endpoint(|| token_with("0"));
    let host = host();
    let id = connect(
        &host,
        spec(RemoteServer::new(server.url("/mcp")).oauth(grant(&token))),
    );
    wait_status(&host, id, "published", |s| s.live_generation == Some(1)).await;
    let before = fetched.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = fetched.load(Ordering::SeqCst) - before;
    // The floor is 5 s: at most one renewal in any 3 s (about 36 before it).
    assert!(during <= 1, "{during} tokens fetched in 3 s");
    let now = status(&host, id);
    assert_eq!((now.state, now.failures), (McpState::Up, 0), "{now:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expires_in_that_is_no_whole_number_of_seconds_is_a_failure_naming_it() {
    let _serial = serial().await;
    let server = Peer::http(mcp_answer);
    for (expires, why) in [
        ("-1", "answered a token response whose `expires_in` is not a whole number of seconds (0 to 2^64-1)"),
        ("\"3600\"", "answered a token response whose `expires_in` is not a whole number of seconds (0 to 2^64-1)"),
        ("18446744073709551616", "answered a token response whose `expires_in` is not a whole number of seconds (0 to 2^64-1)"),
        ("1e400", "answered something that is not JSON (number out of range at line 1 column 64)"),
    ] {
        let (token, fetched) = token_endpoint(move || token_with(expires));
        let host = host();
        let id = connect(&host, spec(RemoteServer::new(server.url("/mcp")).oauth(grant(&token))));
        let error = first_failure(&host, id).await;
        assert_eq!(
            error,
            format!(
                "mcp-client(fx): {}: the token endpoint {} {why}",
                server.url("/mcp"),
                token.url("/token")
            ),
            "{expires}"
        );
        // Retried after its delay, and not in a loop.
        wait_status(&host, id, "retried", |s| s.failures >= 2).await;
        assert!(fetched.load(Ordering::SeqCst) < 30, "{expires}");
    }
    assert!(
        server.requests().is_empty(),
        "no token, no request to the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_endless_or_trickled_token_response_is_bounded_in_bytes_and_time() {
    let _serial = serial().await;
    let server = Peer::http(mcp_answer);
    let too_large = "the token response is larger than 65536 bytes";
    let late = "did not answer within 1500 ms";
    let cases: Vec<Case> = vec![
        (
            "1 GiB declared",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .sized(1 << 30, true)
                    .into()
            },
            too_large,
        ),
        (
            "1 GiB chunked",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .sized(1 << 30, false)
                    .into()
            },
            too_large,
        ),
        (
            "endless",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .endless()
                    .into()
            },
            too_large,
        ),
        (
            "trickled",
            || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .trickle(
                        br#"{"access_token":"tok-1","token_type":"Bearer"}"#.to_vec(),
                        Duration::from_secs(1),
                    )
                    .into()
            },
            late,
        ),
        ("never answered", || Answer::Hang, late),
    ];
    for (what, answer, expected) in cases {
        let (token, _) = token_endpoint(answer);
        let host = host();
        let started = Instant::now();
        let id = connect(
            &host,
            spec(RemoteServer::new(server.url("/mcp")).oauth(grant(&token))),
        );
        let error = first_failure(&host, id).await;
        let took = started.elapsed();
        let endpoint = token.url("/token");
        let expected = if expected == late {
            format!("the token endpoint {endpoint} {expected}")
        } else {
            format!("the token endpoint {endpoint}: {expected}")
        };
        assert_eq!(
            error,
            format!("mcp-client(fx): {}: {expected}", server.url("/mcp")),
            "{what}"
        );
        assert!(
            token.body_bytes_sent() < 32 << 20,
            "{what}: {} bytes sent",
            token.body_bytes_sent()
        );
        // The timeout (1.5 s) and a loaded machine; a trickled 47 bytes would take 47 s.
        assert!(took < Duration::from_secs(15), "{what}: {took:?}");
    }
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_access_token_with_a_line_break_is_refused_by_name() {
    let _serial = serial().await;
    let server = Peer::http(mcp_answer);
    for access_token in ["tok\nX-Injected: 1", "tok\r\n", "", "tok\u{0}"] {
        let body = json!({"access_token": access_token, "token_type": "Bearer", "expires_in": 60});
        let (token, _) = token_endpoint(move || Reply::new(200).json(&body).into());
        let host = host();
        let id = connect(
            &host,
            spec(RemoteServer::new(server.url("/mcp")).oauth(grant(&token))),
        );
        let error = first_failure(&host, id).await;
        let why = if access_token.is_empty() {
            "answered an empty access token"
        } else {
            "answered an access token that cannot be sent in a header (it holds a line break or another control character)"
        };
        assert_eq!(
            error,
            format!(
                "mcp-client(fx): {}: the token endpoint {} {why}",
                server.url("/mcp"),
                token.url("/token")
            ),
            "{access_token:?}"
        );
    }
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_takes_neither_the_client_secret_nor_a_header_elsewhere() {
    let _serial = serial().await;
    let elsewhere = Peer::http(|_| Reply::new(200).into());
    let other_host = Peer::http_at("127.0.0.2", |_| Reply::new(200).into());
    // The token endpoint redirects: the secret (Basic auth) is not sent again.
    for target in [elsewhere.url("/token"), other_host.url("/token")] {
        let (token, fetched) = token_endpoint(move || redirect(307, &target));
        let server = Peer::http(mcp_answer);
        let host = host();
        let id = connect(
            &host,
            spec(RemoteServer::new(server.url("/mcp")).oauth(grant(&token))),
        );
        let error = first_failure(&host, id).await;
        assert_eq!(
            error,
            format!(
                "mcp-client(fx): {}: the token endpoint {}: answered 307 Temporary Redirect, a \
                 redirect, which is not followed (the client secret goes to the configured \
                 token endpoint only)",
                server.url("/mcp"),
                token.url("/token")
            )
        );
        assert!(fetched.load(Ordering::SeqCst) >= 1);
        let asked = token.requests();
        assert!(asked[0]
            .header("authorization")
            .is_some_and(|a| a.starts_with("Basic ")));
    }
    // The server redirects: no configured header (an API key, not Authorization) follows.
    for status in [307, 308, 302] {
        let target = other_host.url("/mcp");
        let server = Peer::http(move |_| redirect(status, &target));
        let host = host();
        let remote =
            RemoteServer::new(server.url("/mcp")).header("X-Api-Key", Secret::new("api-key-6d0c"));
        let id = connect(&host, spec(remote));
        let error = first_failure(&host, id).await;
        assert!(
            error.starts_with(&format!("mcp-client(fx): {}: ", server.url("/mcp")))
                && error.contains(&status.to_string()),
            "{error}"
        );
        assert!(!error.contains("api-key-6d0c"), "{error}");
        assert_eq!(
            server.requests()[0].header("x-api-key"),
            Some("api-key-6d0c")
        );
    }
    assert!(
        elsewhere.requests().is_empty(),
        "{:?}",
        elsewhere.requests()
    );
    assert!(
        other_host.requests().is_empty(),
        "{:?}",
        other_host.requests()
    );
}

/// A server whose `initialize` is answered with a JSON-RPC error of forged text.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_off_loopback_is_refused_before_anything_is_sent() {
    let _serial = serial().await;
    let server = Peer::http(mcp_answer);
    let host = host();
    let grant = ClientCredentials::new(
        "http://auth.invalid/token",
        "prompt-host",
        Secret::new(CLIENT_SECRET),
    );
    let id = connect(
        &host,
        spec(RemoteServer::new(server.url("/mcp")).oauth(grant)),
    );
    assert_eq!(
        first_failure(&host, id).await,
        format!(
            "mcp-client(fx): {}: the token endpoint is plain http on a host that is not \
             loopback; use https:// (secrets would cross the network in clear text)",
            server.url("/mcp")
        )
    );
    assert!(server.requests().is_empty());
    drop(host);
    let host = self::host();
    let remote = RemoteServer::new("http://mcp.invalid/mcp")
        .header("X-Api-Key", Secret::new("api-key-6d0c"));
    let id = connect(&host, spec(remote));
    assert_eq!(
        first_failure(&host, id).await,
        "mcp-client(fx): http://mcp.invalid/mcp: the server's endpoint is plain http on a host \
         that is not loopback; use https:// (secrets would cross the network in clear text)"
    );
}

#[test]
fn serve_keeps_a_token_of_no_life_or_endless_life_up_without_a_loop() {
    let _serial = crate::integration::mcp::client::serial_blocking();
    let server = Peer::http(mcp_answer);
    let (zero, zero_fetched) = token_endpoint(|| token_with("0"));
    let (endless, endless_fetched) = token_endpoint(|| token_with("18446744073709551615"));
    let entry = |name: &str, token: &Peer| {
        format!(
            "[[mcp]]\nname = \"{name}\"\nurl = {url:?}\nlifecycle = \"initialize\"\n\
             timeout_ms = 1500\noauth = {{ token_url = {token:?}, client_id = \"prompt-host\", \
             client_secret = \"{CLIENT_SECRET}\" }}\n\n",
            url = server.url("/mcp"),
            token = token.url("/token"),
        )
    };
    let toml = format!(
        "[host]\nmcp_provider = {:?}\n\n{}{}",
        env!("GUEST_MCP_INSTRUCTIONS"),
        entry("zero", &zero),
        entry("endless", &endless)
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("host.toml"), toml).unwrap();
    let mut serve = Command::new(crate::integration::support::cli::bin())
        .args(["serve", "--config", "host.toml"])
        .current_dir(dir.path())
        .env("PROMPT_HOST_CACHE_DIR", dir.path().join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = serve.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(serve.stdout.take().unwrap());
    // Owns serve's input: dropping it closes the input, and serve ends.
    let mut ask = move |id: u32| -> Value {
        use std::io::{BufRead, Write};
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"mcp_status","params":{{"wait_ms":20000}}}}"#
        )
        .unwrap();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "serve ended");
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == id {
                return value["result"].clone();
            }
        }
    };
    let states = |result: &Value| -> Vec<(String, String, u64)> {
        let mut servers: Vec<_> = result
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["server"].as_str().unwrap().to_owned(),
                    s["state"].as_str().unwrap().to_owned(),
                    s["failures"].as_u64().unwrap(),
                )
            })
            .collect();
        servers.sort();
        servers
    };
    let expected = vec![
        ("endless".to_owned(), "up".to_owned(), 0),
        ("zero".to_owned(), "up".to_owned(), 0),
    ];
    assert_eq!(states(&ask(1)), expected);
    let before = zero_fetched.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(states(&ask(2)), expected);
    let during = zero_fetched.load(Ordering::SeqCst) - before;
    assert!(during <= 1, "{during} tokens fetched in 3 s");
    assert_eq!(endless_fetched.load(Ordering::SeqCst), 1);
    drop(ask);
    let deadline = Instant::now() + Duration::from_secs(30);
    while serve.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = serve.kill();
            panic!("serve did not end within 30 s of its input closing");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = serve.wait_with_output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
