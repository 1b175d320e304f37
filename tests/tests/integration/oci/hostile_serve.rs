//! A hostile registry against `serve`'s `load_plugin` and the library: a token with a line
//! break is an answer, not a silent request; `$/cancelRequest` ends a load whose component
//! trickles, and the connection with it; a closed input ends the server within the total
//! bound; 32 loads of one new reference at once all succeed; and in the library, inside
//! a current-thread or a multi-thread runtime, a trickled pull ends by `total_timeout` and
//! a dropped one closes its connection.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::support::fake_registry::{
    honest, reference, registry, token_service, Artifact, Auth, Site, ENDED,
};
use crate::integration::support::hostile_peer::{Peer, Reply};
use crate::integration::support::serve::Served;

/// `load_plugin`'s params for plugin `name` from `r`, its section named after it.
fn greeter(r: &str, name: &str) -> Value {
    json!({
        "name": name,
        "wasm": r,
        "config": {"sections": [{"name": name, "order": 10, "text": "Hello from the registry."}]},
    })
}

/// `serve --config host.toml` in `site`.
fn serve(site: &Site) -> Served {
    let config = site.path("host.toml");
    let home = site.path("home");
    let docker = site.path("docker");
    Served::start_with_env(
        &["--config", config.to_str().unwrap()],
        &site.path("cache"),
        &[
            ("HOME", home.to_str().unwrap()),
            ("DOCKER_CONFIG", docker.to_str().unwrap()),
        ],
    )
}

/// A registry whose component arrives one byte every 200 ms (about 15 hours in all).
fn trickling(artifact: &std::sync::Arc<Artifact>) -> Peer {
    let blob = artifact.blob_path();
    let bytes = artifact.component.clone();
    registry(
        artifact.clone(),
        Auth::Anonymous,
        Box::new(move |r| {
            (r.path() == blob).then(|| {
                Reply::new(200)
                    .trickle(bytes.clone(), Duration::from_millis(200))
                    .into()
            })
        }),
    )
}

/// Wait (up to [`ENDED`]) until `peer` has been asked for the component.
fn until_downloading(peer: &Peer, artifact: &Artifact) {
    let started = Instant::now();
    while !peer
        .requests()
        .iter()
        .any(|r| r.path() == artifact.blob_path())
    {
        assert!(
            started.elapsed() < ENDED,
            "the component was never asked for"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `peer` stopped sending: its count of body bytes holds over two seconds.
fn stopped_sending(peer: &Peer) -> bool {
    std::thread::sleep(Duration::from_secs(2));
    let before = peer.body_bytes_sent();
    std::thread::sleep(Duration::from_secs(2));
    peer.body_bytes_sent() == before
}

#[test]
fn load_plugin_is_answered_when_the_token_holds_a_line_break() {
    let tokens = token_service(
        false,
        Box::new(|_| {
            Some(
                Reply::new(200)
                    .json(&json!({"token": "abc\r\nX-Injected: 1"}))
                    .into(),
            )
        }),
    );
    let peer = registry(
        Artifact::declare(None),
        Auth::Bearer(tokens.url("/token")),
        honest(),
    );
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\", \"{}\"]",
            peer.host_port(),
            tokens.host_port()
        ),
        &[],
    );
    let mut served = serve(&site);
    let r = reference(&peer);
    let message = served.err("load_plugin", greeter(&r, "greeter"));
    assert_eq!(
        message,
        format!("{r}: the token service of the registry {} sent a token that is not valid in an HTTP header (a control character or a line break); refused", peer.host_port())
    );
    // Still serving.
    assert_eq!(served.ok("plugins", json!({})), json!([]));
    assert!(peer
        .requests()
        .iter()
        .all(|r| r.header("x-injected").is_none()));
}

#[test]
fn cancel_request_ends_a_trickling_load_plugin_and_its_connection() {
    let artifact = Artifact::declare(None);
    let peer = trickling(&artifact);
    let site = Site::new(&format!("plain_http = [\"{}\"]", peer.host_port()), &[]);
    let mut served = serve(&site);
    let r = reference(&peer);
    let load = json!({"jsonrpc": "2.0", "id": 7, "method": "load_plugin", "params": greeter(&r, "greeter")});
    served.send_line(load.to_string().as_bytes());
    until_downloading(&peer, &artifact);
    let cancelled_at = Instant::now();
    served.send_line(br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}"#);
    let answer = served.answer();
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32800, "{answer}");
    assert_eq!(answer["error"]["data"]["kind"], "cancelled", "{answer}");
    assert!(cancelled_at.elapsed() < ENDED);
    assert!(stopped_sending(&peer), "the registry is still sending");
    assert!(served.alive());
}

#[test]
fn serve_ends_within_the_total_bound_when_its_input_closes_during_a_pull() {
    let artifact = Artifact::declare(None);
    let peer = trickling(&artifact);
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\"]\ntotal_timeout_ms = 3000",
            peer.host_port()
        ),
        &[],
    );
    let r = reference(&peer);
    let mut child = site
        .command(&["serve", "--config", "host.toml"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let load = json!({"jsonrpc": "2.0", "id": 1, "method": "load_plugin", "params": greeter(&r, "greeter")});
    writeln!(stdin, "{load}").unwrap();
    until_downloading(&peer, &artifact);
    let closed_at = Instant::now();
    drop(stdin);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let answer: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let status = child.wait().unwrap();
    assert!(closed_at.elapsed() < ENDED, "{:?}", closed_at.elapsed());
    assert!(status.success());
    assert_eq!(
        answer["error"]["message"],
        format!("{r}: the pull did not complete within total_timeout_ms = 3000 (the whole exchange with the registry {}); stopped", peer.host_port())
    );
}

#[test]
fn loads_of_one_new_reference_at_once_all_succeed() {
    let artifact = Artifact::declare(None);
    let peer = registry(artifact.clone(), Auth::Anonymous, honest());
    let site = Site::new(&format!("plain_http = [\"{}\"]", peer.host_port()), &[]);
    let mut served = serve(&site);
    let r = reference(&peer);
    const LOADS: u64 = 32;
    let mut batch = Vec::new();
    for id in 1..=LOADS {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "load_plugin", "params": greeter(&r, &format!("greeter-{id}"))});
        batch.extend_from_slice(line.to_string().as_bytes());
        batch.push(b'\n');
    }
    batch.pop();
    served.send_line(&batch);
    let mut failed = Vec::new();
    for _ in 0..LOADS {
        let answer = served.answer();
        if answer["result"]["component"] != artifact.component_digest.as_str() {
            failed.push(answer);
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {LOADS} failed: {failed:?}",
        failed.len()
    );
}

fn runtimes() -> [tokio::runtime::Runtime; 2] {
    [
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap(),
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    ]
}

fn library_registry(peer: &Peer, total: Duration) -> prompt_host::oci::Registry {
    prompt_host::oci::Registry::new(prompt_host::oci::RegistrySettings {
        plain_http: vec![peer.host_port()],
        total_timeout: total,
        ..Default::default()
    })
    .unwrap()
}

#[test]
fn the_library_ends_a_trickled_pull_by_its_total_bound_in_either_runtime() {
    let artifact = Artifact::declare(None);
    for runtime in runtimes() {
        let peer = trickling(&artifact);
        let r = prompt_host::oci::OciReference::parse(&reference(&peer)).unwrap();
        let registry = library_registry(&peer, Duration::from_secs(2));
        let started = Instant::now();
        let err = runtime
            .block_on(registry.pull(&r, None))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            err,
            format!("{r}: the pull did not complete within total_timeout_ms = 2000 (the whole exchange with the registry {}); stopped", peer.host_port())
        );
        assert!(started.elapsed() < ENDED);
        assert!(stopped_sending(&peer), "the registry is still sending");
    }
}

#[test]
fn a_dropped_pull_closes_its_connection_in_either_runtime() {
    let artifact = Artifact::declare(None);
    for runtime in runtimes() {
        let peer = trickling(&artifact);
        let r = prompt_host::oci::OciReference::parse(&reference(&peer)).unwrap();
        let registry = library_registry(&peer, Duration::from_secs(3600));
        runtime.block_on(async {
            let pull = registry.pull(&r, None);
            tokio::pin!(pull);
            loop {
                tokio::select! {
                    _ = &mut pull => panic!("a trickled pull of 15 hours ended"),
                    () = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
                if peer
                    .requests()
                    .iter()
                    .any(|q| q.path() == artifact.blob_path())
                {
                    break;
                }
            }
            // `pull` is dropped here, mid-download.
        });
        // Watched while the runtime runs, as an embedder's does: the abort of the
        // exchange's task, and the close of its connection, happen on the runtime.
        let stopped = std::thread::scope(|scope| {
            let watching = scope.spawn(|| stopped_sending(&peer));
            runtime.block_on(async {
                while !watching.is_finished() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            });
            watching.join().unwrap_or(false)
        });
        assert!(stopped, "the registry is still sending");
    }
}

#[test]
fn the_library_refuses_a_token_with_a_line_break_in_either_runtime() {
    for runtime in runtimes() {
        let tokens = token_service(
            false,
            Box::new(|_| {
                Some(
                    Reply::new(200)
                        .json(&json!({"access_token": "a\nb"}))
                        .into(),
                )
            }),
        );
        let peer = registry(
            Artifact::declare(None),
            Auth::Bearer(tokens.url("/token")),
            honest(),
        );
        let mut settings = prompt_host::oci::RegistrySettings {
            plain_http: vec![peer.host_port(), tokens.host_port()],
            ..Default::default()
        };
        settings.timeout = Duration::from_secs(30);
        let registry = prompt_host::oci::Registry::new(settings).unwrap();
        let r = prompt_host::oci::OciReference::parse(&reference(&peer)).unwrap();
        let err = runtime
            .block_on(registry.pull(&r, None))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            err,
            format!("{r}: the token service of the registry {} sent a token that is not valid in an HTTP header (a control character or a line break); refused", peer.host_port())
        );
    }
}
