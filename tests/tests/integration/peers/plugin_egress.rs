//! Plugins that reach the network through the host (`grants.http`): the
//! `remote-instructions` example fetching a document from a real HTTPS server on loopback
//! (a CA of the test's own) with a bearer token the host adds, and hostile servers and
//! grants — an origin not granted, a redirect to another origin, a body that never ends, a
//! huge one, one trickled a byte at a time, 10,000 headers — each bounded by the call's
//! deadline, through the command line, `serve` and the library.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::integration::support::cli::{bin, Deployment, QUIET_PROGRESS};
use crate::integration::support::hostile_peer::{
    redirect, run_measured, Answer, Measured, Peer, Reply,
};
use crate::integration::support::serve::{memory_of, Served};

pub(crate) const TOKEN: &str = "s3cr3t-docs-token";
const DOCUMENT: &str = "Team rules: review every change. {{not_a_variable}}";

pub(crate) fn quoted(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// A document server: `/team.md` with an `ETag`, answered `304` when the client has it.
fn document_server() -> Peer {
    Peer::https(|request| {
        if request.path() != "/team.md" {
            return Reply::new(404).into();
        }
        if request.header("if-none-match") == Some("\"v1\"") {
            return Reply::new(304).header("etag", "\"v1\"").into();
        }
        Reply::new(200)
            .header("etag", "\"v1\"")
            .header("content-type", "text/markdown")
            .text(DOCUMENT)
            .into()
    })
}

/// host.toml with the example plugin fetching `url`, granted `origin` with the token header
/// and the peer's CA, and `init_timeout_ms`.
fn host_toml(peer: &Peer, origin: &str, url: &str, init_timeout_ms: u64) -> String {
    format!(
        "[prompt]\ninclude_harness_identity = false\n\n\
         [[plugin]]\nname = \"team-rules\"\nwasm = {wasm}\n\
         grants = {{ http = [{{ origin = {origin}, headers = {{ authorization = \"Bearer ${{env:DOCS_TOKEN}}\" }}, ca_file = {ca} }}] }}\n\
         config = {{ url = {url}, heading = \"From the team:\" }}\n\
         limits = {{ init_timeout_ms = {init_timeout_ms}, call_timeout_ms = 5000 }}\n",
        wasm = quoted(env!("GUEST_REMOTE_INSTRUCTIONS")),
        origin = quoted(origin),
        ca = quoted(&peer.ca_pem().unwrap().display().to_string()),
        url = quoted(url),
    )
}

/// `prompt-host render --json` of `deployment`, with the token in the environment, killed
/// past `limit`.
fn render(deployment: &Deployment, limit: Duration) -> Measured {
    run_command(deployment, &["render", "--json"], limit)
}

/// `prompt-host <args> --config host.toml` of `deployment`, as [`render`].
fn run_command(deployment: &Deployment, args: &[&str], limit: Duration) -> Measured {
    let config = deployment.config();
    run_measured(
        Command::new(bin())
            .args(args)
            .arg("--config")
            .arg(&config)
            .env("PROMPT_HOST_CACHE_DIR", deployment.path("cache"))
            .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
            .env("DOCS_TOKEN", TOKEN),
        limit,
    )
}

#[test]
fn the_example_fetches_its_document_with_the_hosts_token_through_the_cli() {
    let peer = document_server();
    let deployment = Deployment::new(&host_toml(
        &peer,
        &peer.origin(),
        &peer.url("/team.md"),
        10_000,
    ));
    let run = render(&deployment, Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let rendered: Value = serde_json::from_str(&run.stdout).unwrap();
    // The document reaches the prompt byte for byte: `{{` in it is not a template.
    assert_eq!(rendered["prompt"], format!("From the team:\n\n{DOCUMENT}"));
    let requests = peer.requests();
    assert_eq!(requests.len(), 1, "one fetch, in init: {requests:?}");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    // The secret is in no output of the host's.
    assert!(!run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN));
}

#[test]
fn an_origin_not_granted_gets_no_request_and_the_load_fails_naming_it() {
    let granted = document_server();
    let other = Peer::http_at("127.0.0.2", |_| Reply::new(200).text("stolen").into());
    let deployment = Deployment::new(&host_toml(
        &granted,
        &granted.origin(),
        &other.url("/team.md"),
        10_000,
    ));
    let run = render(&deployment, Duration::from_secs(120));
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(other.requests().is_empty(), "{:?}", other.requests());
    assert!(
        run.stderr.contains(&format!(
            "plugin \"team-rules\": GET {}/team.md: {} is not among the origins this plugin is granted",
            other.origin(),
            other.origin()
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("HttpRequestDenied"), "{}", run.stderr);
    assert!(!run.stderr.contains(TOKEN));
}

#[test]
fn a_redirect_to_another_origin_is_answered_to_the_plugin_not_followed() {
    let elsewhere = Arc::new(AtomicUsize::new(0));
    let other = {
        let elsewhere = Arc::clone(&elsewhere);
        Peer::http_at("127.0.0.2", move |_| {
            elsewhere.fetch_add(1, Ordering::SeqCst);
            Reply::new(200).text("stolen").into()
        })
    };
    let target = other.url("/collect");
    let peer = Peer::https(move |_| redirect(302, &target));
    let deployment = Deployment::new(&host_toml(
        &peer,
        &peer.origin(),
        &peer.url("/team.md"),
        10_000,
    ));
    let run = render(&deployment, Duration::from_secs(120));
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(
        run.stderr.contains("the server answered 302"),
        "{}",
        run.stderr
    );
    assert_eq!(elsewhere.load(Ordering::SeqCst), 0);
    assert_eq!(peer.requests().len(), 1);
}

/// How a hostile server answers every request.
type AnswerWith = dyn Fn() -> Answer + Send + Sync;

/// Every hostile answer: those only the call's deadline ends (`slow`), and those the byte
/// limits stop — the host's (head, body) or the plugin's own `max_bytes`.
fn hostile_answers() -> Vec<(&'static str, bool, Box<AnswerWith>)> {
    vec![
        (
            "a body that never ends",
            false,
            Box::new(|| Reply::new(200).endless().into()),
        ),
        (
            "a 1 GB body",
            false,
            Box::new(|| Reply::new(200).sized(1 << 30, true).into()),
        ),
        (
            "a body trickled a byte a second",
            true,
            Box::new(|| {
                Reply::new(200)
                    .trickle(vec![b'x'; 100], Duration::from_secs(1))
                    .into()
            }),
        ),
        (
            "10,000 headers",
            false,
            Box::new(|| Reply::new(200).many_headers(10_000).text("x").into()),
        ),
        ("no answer at all", true, Box::new(|| Answer::Hang)),
    ]
}

/// Each hostile answer ends the plugin's `init` by its deadline (2 s) with the host's
/// memory bounded, and the command fails naming the plugin.
#[test]
fn hostile_answers_are_bounded_by_the_calls_deadline_and_the_limits() {
    for (what, _, answer) in hostile_answers() {
        let peer = Peer::https(move |_| answer());
        let deployment = Deployment::new(&host_toml(
            &peer,
            &peer.origin(),
            &peer.url("/team.md"),
            2_000,
        ));
        let run = render(&deployment, Duration::from_secs(60));
        assert!(!run.killed, "{what}: the command hung");
        assert_eq!(run.code, Some(1), "{what}: {}", run.stdout);
        assert!(run.stderr.contains("team-rules"), "{what}: {}", run.stderr);
        assert!(
            run.max_rss_kib < 400 * 1024,
            "{what}: peak memory {} KiB",
            run.max_rss_kib
        );
        eprintln!(
            "{what}: failed in {:?}, peak {} KiB: {}",
            run.elapsed,
            run.max_rss_kib,
            run.stderr.lines().last().unwrap_or("")
        );
    }
}

#[test]
fn serve_loads_a_plugin_with_an_origin_grant_and_refuses_one_without() {
    let peer = document_server();
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start_with_env(&[], cache.path(), &[("DOCS_TOKEN", TOKEN)]);
    let grant = json!({"http": [{
        "origin": peer.origin(),
        "headers": {"authorization": "Bearer ${env:DOCS_TOKEN}"},
        "ca_file": peer.ca_pem().unwrap(),
    }]});
    let load = |served: &mut Served, name: &str, grants: Value| {
        served.call(
            "load_plugin",
            json!({
                "name": name,
                "wasm": env!("GUEST_REMOTE_INSTRUCTIONS"),
                "grants": grants,
                "config": {"url": peer.url("/team.md"), "variable": name.replace('-', "_"),
                           "section": format!("{name}:text")},
                "limits": {"init_timeout_ms": 10_000, "call_timeout_ms": 5_000},
            }),
        )
    };
    let loaded = load(&mut served, "team-rules", grant);
    assert!(loaded.get("result").is_some(), "{loaded}");
    let rendered = served.ok("render", json!({}));
    assert!(
        rendered["prompt"].as_str().unwrap().ends_with(DOCUMENT),
        "{rendered}"
    );
    assert_eq!(
        peer.requests()[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    // `plugins` shows the grant as written: the reference, never the value.
    let plugins = served.ok("plugins", json!({}));
    assert_eq!(
        plugins[0]["grants"]["http"],
        json!([{"origin": peer.origin(),
                "headers": {"authorization": "Bearer ${env:DOCS_TOKEN}"},
                "ca_file": peer.ca_pem().unwrap()}])
    );
    let refused = load(&mut served, "ungranted", json!({}));
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("ungranted"), "{refused}");
    assert_eq!(
        peer.requests().len(),
        1,
        "the plugin without a grant sent nothing"
    );
    assert!(!served.stderr().contains(TOKEN));
}

#[test]
fn the_library_in_a_tokio_runtime_fetches_and_keeps_the_text_between_refreshes() {
    let peer = document_server();
    let dir = tempfile::tempdir().unwrap();
    // SAFETY (of the test): the variable is this test's own, read by the host at load.
    std::env::set_var("PROMPT_HOST_TEST_EGRESS_TOKEN", TOKEN);
    let toml = host_toml(&peer, &peer.origin(), &peer.url("/team.md"), 10_000)
        .replace("DOCS_TOKEN", "PROMPT_HOST_TEST_EGRESS_TOKEN");
    std::fs::write(dir.path().join("host.toml"), toml).unwrap();
    let config = prompt_host::config::HostConfig::load(&dir.path().join("host.toml")).unwrap();
    let host = prompt_host::Host::from_config(
        &config,
        prompt_host::RuntimeConfig::with_cache_dir(dir.path().join("cache")),
    )
    .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        for _ in 0..5 {
            let rendered = host.render(None, prompt_host::Facts::new()).await.unwrap();
            assert_eq!(rendered.prompt, format!("From the team:\n\n{DOCUMENT}"));
        }
    });
    // Five assemblies within the refresh: the one fetch of `init`.
    assert_eq!(peer.requests().len(), 1);
}

/// host.toml with the hostile plugin in `mode` (its `config` besides), in its section, granted
/// `granted`'s origin with the token header, each call given `call_timeout_ms`.
fn hostile_toml(granted: &Peer, config: Value, call_timeout_ms: u64) -> String {
    format!(
        "[prompt]\ninclude_harness_identity = false\n\n\
         [[plugin]]\nname = \"prober\"\nwasm = {wasm}\n\
         grants = {{ http = [{{ origin = {origin}, headers = {{ authorization = \"Bearer ${{env:DOCS_TOKEN}}\" }}, ca_file = {ca} }}] }}\n\
         config = {config}\n\
         limits = {{ call_timeout_ms = {call_timeout_ms} }}\n",
        wasm = quoted(env!("GUEST_HOSTILE")),
        origin = quoted(&granted.origin()),
        ca = quoted(&granted.ca_pem().unwrap().display().to_string()),
        config = toml_inline(&config),
    )
}

/// The hostile plugin's section text in `assemble`'s output (as the plugin gave it).
fn hostile_text(run: &Measured) -> String {
    hostile_section(&serde_json::from_str(&run.stdout).unwrap())
}

/// The `hostile` section's text in an assembly's JSON.
pub(crate) fn hostile_section(assembly: &Value) -> String {
    assembly["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "hostile")
        .and_then(|s| s["text"].as_str())
        .unwrap_or_else(|| panic!("no hostile section: {assembly}"))
        .to_owned()
}

/// A JSON object as a TOML inline table (strings, numbers, arrays of strings, objects).
pub(crate) fn toml_inline(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{} = {}", quoted(k), toml_inline(v)))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(toml_inline).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

#[test]
fn a_hostile_plugin_sees_no_secret_and_cannot_send_one_elsewhere() {
    let granted = document_server();
    let elsewhere = Peer::http_at("127.0.0.2", |_| Reply::new(200).text("collected").into());
    let deployment = Deployment::new(&hostile_toml(
        &granted,
        json!({
            "mode": "http_probe",
            "urls": [granted.url("/team.md"), granted.url("/missing"), elsewhere.url("/collect")],
            "headers": {"authorization": "Bearer forged", "x-probe": "1"},
        }),
        10_000,
    ));
    // `assemble`: the section's text as the plugin gave it (the document's `{{` unrendered).
    let run = run_command(&deployment, &["assemble"], Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let prompt = hostile_text(&run);
    let seen: Value = serde_json::from_str(&prompt).unwrap();
    // Everything the plugin could see: statuses, headers, errors, bodies, its environment.
    assert!(!prompt.contains(TOKEN), "{prompt}");
    assert_eq!(seen["requests"][0]["status"], 200, "{seen}");
    assert_eq!(seen["requests"][0]["body_head"], DOCUMENT);
    assert_eq!(seen["requests"][1]["status"], 404);
    assert_eq!(
        seen["requests"][2]["error"],
        "response: ErrorCode::HttpRequestDenied"
    );
    assert_eq!(
        seen["env"],
        json!([]),
        "the token's variable is not the plugin's"
    );
    // The granted origin got the host's header in place of the forged one, once.
    for request in granted.requests() {
        let authorizations: Vec<&(String, String)> = request
            .headers
            .iter()
            .filter(|(n, _)| n == "authorization")
            .collect();
        assert_eq!(
            authorizations,
            [&("authorization".to_owned(), format!("Bearer {TOKEN}"))]
        );
        assert_eq!(request.header("x-probe"), Some("1"));
    }
    assert!(elsewhere.requests().is_empty());
    assert!(!run.stderr.contains(TOKEN));
}

#[test]
fn the_hosts_body_limit_stops_a_plugin_that_reads_without_one() {
    let peer = Peer::https(|_| Reply::new(200).sized(1 << 30, false).into());
    let deployment = Deployment::new(&hostile_toml(
        &peer,
        json!({"mode": "http_probe", "urls": [peer.url("/huge")]}),
        20_000,
    ));
    let run = render(&deployment, Duration::from_secs(120));
    assert!(!run.killed);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let prompt = serde_json::from_str::<Value>(&run.stdout).unwrap()["prompt"]
        .as_str()
        .unwrap()
        .to_owned();
    let seen: Value = serde_json::from_str(&prompt).unwrap();
    let read = seen["requests"][0]["body_bytes"].as_u64().unwrap();
    assert!(
        read <= 4 << 20,
        "the plugin read {read} bytes past the 4 MiB limit"
    );
    assert!(
        seen["requests"][0]["body_error"]
            .as_str()
            .unwrap()
            .contains("body size exceeds limit: 4194304 bytes"),
        "{seen}"
    );
    assert!(run.max_rss_kib < 400 * 1024, "peak {} KiB", run.max_rss_kib);
    assert!(
        run.stderr
            .contains("the body passed 4194304 bytes; the rest is refused"),
        "{}",
        run.stderr
    );
}

/// `mib` MiB of zeros, gzipped: a bomb about a thousandth its size on the wire.
pub(crate) fn gzipped_zeros(mib: usize) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..mib {
        encoder.write_all(&zeros).unwrap();
    }
    encoder.finish().unwrap()
}

#[test]
fn a_gzip_bomb_reaches_the_plugin_as_the_bytes_sent() {
    // 256 MiB of zeros, gzipped: about 256 KB on the wire.
    let bomb = gzipped_zeros(256);
    let sent = bomb.len() as u64;
    let peer = Peer::https(move |_| {
        Reply::new(200)
            .header("content-encoding", "gzip")
            .body(bomb.clone())
            .into()
    });
    let deployment = Deployment::new(&hostile_toml(
        &peer,
        json!({"mode": "http_probe", "urls": [peer.url("/bomb")],
               "headers": {"accept-encoding": "gzip"}}),
        10_000,
    ));
    let run = run_command(&deployment, &["assemble"], Duration::from_secs(120));
    assert!(!run.killed);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let seen: Value = serde_json::from_str(&hostile_text(&run)).unwrap();
    // The host hands the plugin the compressed bytes: it never inflates a peer's body.
    assert_eq!(seen["requests"][0]["body_bytes"], json!(sent), "{seen}");
    assert!(run.max_rss_kib < 400 * 1024, "peak {} KiB", run.max_rss_kib);
}

#[test]
fn a_request_loop_ends_with_the_calls_deadline() {
    for (what, peer) in [
        (
            "quick answers",
            Peer::https(|_| Reply::new(200).text("x").into()),
        ),
        ("no answer", Peer::https(|_| Answer::Hang)),
    ] {
        let deployment = Deployment::new(&hostile_toml(
            &peer,
            json!({"mode": "http_loop", "url": peer.url("/again")}),
            1_000,
        ));
        let run = render(&deployment, Duration::from_secs(60));
        assert!(!run.killed, "{what}: hung");
        assert_eq!(run.code, Some(1), "{what}: {}", run.stdout);
        assert!(
            run.stderr.contains("deadline of 1000 ms exceeded"),
            "{what}: {}",
            run.stderr
        );
        eprintln!(
            "{what}: {} requests, ended after {:?}",
            peer.requests().len(),
            run.elapsed
        );
    }
}

/// A name that the system resolves to a loopback address (the machine's own host name, as
/// /etc/hosts has it), or `None`.
pub(crate) fn a_name_for_loopback() -> Option<String> {
    use std::net::ToSocketAddrs;
    let mut names = vec![
        "localhost.localdomain".to_owned(),
        "ip6-localhost".to_owned(),
    ];
    if let Ok(name) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        names.insert(0, name.trim().to_owned());
    }
    names.into_iter().find(|name| {
        (name.as_str(), 443).to_socket_addrs().is_ok_and(|mut a| {
            let all: Vec<_> = a.by_ref().collect();
            !all.is_empty() && all.iter().all(|a| a.ip().is_loopback())
        })
    })
}

#[test]
fn a_granted_name_that_resolves_to_loopback_is_refused() {
    let test = concat!(
        module_path!(),
        "::a_granted_name_that_resolves_to_loopback_is_refused"
    );
    let Some(name) = a_name_for_loopback() else {
        crate::integration::sessions::attacked::skip(
            test,
            "no host name here resolves to a loopback address alone",
        );
        return;
    };
    let peer = document_server();
    let origin = format!("https://{name}:{}", peer.port());
    let deployment = Deployment::new(&host_toml(
        &peer,
        &origin,
        &format!("{origin}/team.md"),
        10_000,
    ));
    let run = render(&deployment, Duration::from_secs(120));
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(peer.requests().is_empty());
    assert!(
        run.stderr.contains(&format!(
            "{origin}: {name} resolves to 127.0.0.1, a loopback address: refused (a grant that names the address itself allows it)"
        )) || run.stderr.contains(&format!("{name} resolves to ::1, a loopback address")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("DestinationIpProhibited"),
        "{}",
        run.stderr
    );
}

#[test]
fn serve_answers_other_scopes_while_a_plugins_request_hangs() {
    let hanging = Peer::https(|_| Answer::Hang);
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start_with_env(&[], cache.path(), &[("DOCS_TOKEN", TOKEN)]);
    served.ok("bind_scope", json!({"scope": "agent:1"}));
    served.ok("bind_scope", json!({"scope": "agent:2"}));
    let loaded = served.call(
        "load_plugin",
        json!({
            "name": "prober", "wasm": env!("GUEST_HOSTILE"), "scope": "agent:1",
            "grants": {"http": [{"origin": hanging.origin(), "ca_file": hanging.ca_pem().unwrap()}]},
            "config": {"mode": "http_probe", "urls": [hanging.url("/slow")]},
            "limits": {"call_timeout_ms": 4000},
        }),
    );
    assert!(loaded.get("result").is_some(), "{loaded}");
    // agent:1's render waits on the peer until its deadline; agent:2's is answered first.
    served.send_line(
        json!({"jsonrpc": "2.0", "id": 101, "method": "render", "params": {"scope": "agent:1"}})
            .to_string()
            .as_bytes(),
    );
    std::thread::sleep(Duration::from_millis(200));
    served.send_line(
        json!({"jsonrpc": "2.0", "id": 102, "method": "render", "params": {"scope": "agent:2"}})
            .to_string()
            .as_bytes(),
    );
    let first = served.answer();
    assert_eq!(first["id"], 102, "{first}");
    let second = served.answer();
    assert_eq!(second["id"], 101, "{second}");
    assert!(
        second.to_string().contains("deadline of 4000 ms exceeded"),
        "{second}"
    );
}

#[test]
fn hostile_answers_are_bounded_through_serve_which_goes_on() {
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start_with_env(&[], cache.path(), &[("DOCS_TOKEN", TOKEN)]);
    for (i, (what, slow, answer)) in hostile_answers().into_iter().enumerate() {
        let peer = Peer::https(move |_| answer());
        let started = std::time::Instant::now();
        let refused = served.call(
            "load_plugin",
            json!({
                "name": format!("team-rules-{i}"),
                "wasm": env!("GUEST_REMOTE_INSTRUCTIONS"),
                "grants": {"http": [{
                    "origin": peer.origin(),
                    "headers": {"authorization": "Bearer ${env:DOCS_TOKEN}"},
                    "ca_file": peer.ca_pem().unwrap(),
                }]},
                "config": {"url": peer.url("/team.md")},
                "limits": {"init_timeout_ms": 2_000},
            }),
        );
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("team-rules-{i}")) && (!slow || message.contains("2000 ms")),
            "{what}: {refused}"
        );
        eprintln!("{what}: refused in {:?}: {message}", started.elapsed());
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: {:?}",
            started.elapsed()
        );
    }
    // Its memory stayed bounded through all of them.
    let peak = memory_of(served.pid(), "VmHWM");
    assert!(peak < 400 << 20, "serve's peak memory: {peak} bytes");
    // The server went on: it answers, and holds no plugin of the failed loads.
    let plugins = served.ok("plugins", json!({}));
    assert_eq!(plugins, json!([]));
    assert!(!served.stderr().contains(TOKEN));
}

#[test]
fn hostile_answers_are_bounded_in_the_library() {
    // SAFETY (of the test): the variable is this test's own, read by the host at load.
    std::env::set_var("PROMPT_HOST_TEST_EGRESS_TOKEN", TOKEN);
    for (what, slow, answer) in hostile_answers() {
        let peer = Peer::https(move |_| answer());
        let dir = tempfile::tempdir().unwrap();
        let toml = host_toml(&peer, &peer.origin(), &peer.url("/team.md"), 2_000)
            .replace("DOCS_TOKEN", "PROMPT_HOST_TEST_EGRESS_TOKEN");
        std::fs::write(dir.path().join("host.toml"), toml).unwrap();
        let config = prompt_host::config::HostConfig::load(&dir.path().join("host.toml")).unwrap();
        let started = std::time::Instant::now();
        // From a blocking thread of a multi-thread runtime, as an async embedder calls it.
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let cache = dir.path().join("cache");
        let loaded = runtime.block_on(async move {
            tokio::task::spawn_blocking(move || {
                prompt_host::Host::from_config(
                    &config,
                    prompt_host::RuntimeConfig::with_cache_dir(cache),
                )
                .map(|_| ())
            })
            .await
            .unwrap()
        });
        let err = loaded.expect_err(what).to_string();
        assert!(
            err.contains("team-rules") && (!slow || err.contains("deadline of 2000 ms exceeded")),
            "{what}: {err}"
        );
        eprintln!("{what}: refused in {:?}: {err}", started.elapsed());
        assert!(!err.contains(TOKEN));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_server_whose_certificate_no_root_vouches_for_is_a_certificate_error() {
    let peer = document_server();
    let ca = quoted(&peer.ca_pem().unwrap().display().to_string());
    // The same grant without the test's CA: only the platform's roots.
    let toml = host_toml(&peer, &peer.origin(), &peer.url("/team.md"), 10_000)
        .replace(&format!(", ca_file = {ca}"), "");
    assert!(!toml.contains("ca_file"), "{toml}");
    let deployment = Deployment::new(&toml);
    let run = render(&deployment, Duration::from_secs(120));
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(peer.requests().is_empty(), "no request reached the server");
    assert!(
        run.stderr.contains("ErrorCode::TlsCertificateError"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("{}: TLS: invalid peer certificate", peer.origin())),
        "{}",
        run.stderr
    );
}

#[test]
fn a_plugins_own_timeouts_end_its_request_sooner_than_the_call() {
    // A server that never answers, and one that trickles its body a byte a second.
    let hanging = Peer::https(|_| Answer::Hang);
    let trickling = Peer::https(|_| {
        Reply::new(200)
            .trickle(vec![b'x'; 100], Duration::from_secs(1))
            .into()
    });
    for (what, peer, timeouts, expected) in [
        (
            "first byte",
            &hanging,
            json!({"first_byte": 300}),
            "ConnectionReadTimeout",
        ),
        (
            "between bytes",
            &trickling,
            json!({"between_bytes": 300}),
            // A stream error's text, as `wasi:io` gives it to the plugin.
            "connection read timeout",
        ),
    ] {
        let deployment = Deployment::new(&hostile_toml(
            peer,
            json!({"mode": "http_probe", "urls": [peer.url("/slow")], "timeouts_ms": timeouts}),
            20_000,
        ));
        let run = run_command(&deployment, &["assemble"], Duration::from_secs(120));
        // The call ended well before its 20 s deadline: the plugin's timeout ended the
        // request, and the plugin saw it as an error code and went on.
        assert_eq!(run.code, Some(0), "{what}: {}", run.stderr);
        let seen: Value = serde_json::from_str(&hostile_text(&run)).unwrap();
        let request = &seen["requests"][0];
        let error = request["error"]
            .as_str()
            .or(request["body_error"].as_str())
            .unwrap_or_default();
        assert!(error.contains(expected), "{what}: {seen}");
        let ms = request["ms"].as_u64().unwrap();
        assert!(ms < 15_000, "{what}: the request took {ms} ms");
        eprintln!("{what}: ended in {ms} ms with {error}");
    }
}

#[test]
fn a_plugins_timeouts_at_0_and_at_their_largest_neither_hang_nor_overflow() {
    let peer = Peer::https(|_| Reply::new(200).text("the document").into());
    // i64::MAX ms (TOML's largest integer): the guest saturates it to 2^64-1 ns.
    let largest = i64::MAX;
    for (what, timeouts, expected) in [
        (
            "2^64-1 ns each",
            json!({"connect": largest, "first_byte": largest, "between_bytes": largest}),
            None,
        ),
        (
            "0 each",
            json!({"connect": 0, "first_byte": 0, "between_bytes": 0}),
            Some("ConnectionTimeout"),
        ),
    ] {
        let deployment = Deployment::new(&hostile_toml(
            &peer,
            json!({"mode": "http_probe", "urls": [peer.url("/doc")], "timeouts_ms": timeouts}),
            10_000,
        ));
        let run = run_command(&deployment, &["assemble"], Duration::from_secs(120));
        assert!(!run.killed, "{what}: hung");
        assert_eq!(run.code, Some(0), "{what}: {}", run.stderr);
        let seen: Value = serde_json::from_str(&hostile_text(&run)).unwrap();
        let request = &seen["requests"][0];
        match expected {
            // The host's deadline bounds the request; the answer is whole.
            None => {
                assert_eq!(request["status"], 200, "{what}: {seen}");
                assert_eq!(request["body_head"], "the document", "{what}: {seen}");
            }
            // Nothing to wait for: the first phase ends at once.
            Some(code) => assert!(
                request["error"].as_str().unwrap_or_default().contains(code),
                "{what}: {seen}"
            ),
        }
    }
}
