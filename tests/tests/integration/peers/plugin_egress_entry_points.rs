//! The hostile requests a plugin can make and the hostile answers it can get, tried through
//! `serve` and the library in a tokio runtime as well as the command line (`plugin_egress`):
//! one `hostile` plugin asks for a granted document with a forged `authorization`, a
//! redirect to another origin, a URL on an origin not granted (where the secret would go), a
//! gzip bomb, a 1 GB body and a granted name that resolves to loopback; a second one loops
//! requests against the call's deadline. Each is refused or bounded the same way at every
//! entry point, and the secret appears in nothing the plugin or the caller sees.

use serde_json::{json, Value};

use super::plugin_egress::{
    a_name_for_loopback, gzipped_zeros, hostile_section, quoted, toml_inline, TOKEN,
};
use crate::integration::support::hostile_peer::{redirect, Peer, Reply};
use crate::integration::support::serve::{memory_of, Served};

const GRANTED_TEXT: &str = "the granted document";

/// What the attacks need: the granted peer (routes below), a peer on an origin not granted,
/// the compressed bomb's size, and a name that resolves to loopback (if this machine has
/// one), granted beside the peer's origin.
struct Attack {
    granted: Peer,
    elsewhere: Peer,
    bomb_bytes: u64,
    loopback_name: Option<String>,
}

impl Attack {
    fn new(test: &str) -> Attack {
        let elsewhere = Peer::http_at("127.0.0.2", |_| Reply::new(200).text("collected").into());
        let collect = elsewhere.url("/collect");
        // 64 MiB of zeros, gzipped: about 64 KB on the wire.
        let bomb = gzipped_zeros(64);
        let bomb_bytes = bomb.len() as u64;
        let granted = Peer::https(move |request| match request.path() {
            "/team.md" => Reply::new(200).text(GRANTED_TEXT).into(),
            "/redirect" => redirect(307, &collect),
            "/bomb" => Reply::new(200)
                .header("content-encoding", "gzip")
                .body(bomb.clone())
                .into(),
            "/huge" => Reply::new(200).sized(1 << 30, false).into(),
            _ => Reply::new(404).into(),
        });
        let loopback_name = a_name_for_loopback();
        if loopback_name.is_none() {
            crate::integration::sessions::attacked::skip(
                test,
                "(its loopback part) no host name here resolves to a loopback address alone",
            );
        }
        Attack {
            granted,
            elsewhere,
            bomb_bytes,
            loopback_name,
        }
    }

    /// The origin granted for the loopback name (the granted peer's port).
    fn loopback_origin(&self) -> Option<String> {
        self.loopback_name
            .as_ref()
            .map(|name| format!("https://{name}:{}", self.granted.port()))
    }

    /// The probe plugin's grants: the peer's origin with the token header and its CA, and
    /// the loopback name's origin likewise. `env` is how the token is referenced.
    fn grants(&self, env: &str) -> Value {
        let ca = self.granted.ca_pem().unwrap();
        let mut origins = vec![self.granted.origin()];
        origins.extend(self.loopback_origin());
        let http: Vec<Value> = origins
            .into_iter()
            .map(|origin| {
                json!({"origin": origin,
                       "headers": {"authorization": format!("Bearer ${{env:{env}}}")},
                       "ca_file": ca})
            })
            .collect();
        json!({ "http": http })
    }

    /// The probe plugin's config: every attack, in order, with a forged `authorization`.
    fn probe_config(&self) -> Value {
        let mut urls = vec![
            self.granted.url("/team.md"),
            self.granted.url("/redirect"),
            self.elsewhere.url("/collect"),
            self.granted.url("/bomb"),
            self.granted.url("/huge"),
        ];
        urls.extend(self.loopback_origin().map(|o| format!("{o}/team.md")));
        json!({"mode": "http_probe", "urls": urls,
               "headers": {"authorization": "Bearer forged", "accept-encoding": "gzip"}})
    }

    /// The looping plugin's config.
    fn loop_config(&self) -> Value {
        json!({"mode": "http_loop", "url": self.granted.url("/team.md")})
    }

    /// Check what the probe saw (its section's text) and what the peers got.
    fn check(&self, text: &str, entry: &str) {
        assert!(!text.contains(TOKEN), "{entry}: {text}");
        let seen: Value = serde_json::from_str(text).unwrap();
        let at = |i: usize| &seen["requests"][i];
        assert_eq!(at(0)["status"], 200, "{entry}: {seen}");
        assert_eq!(at(0)["body_head"], GRANTED_TEXT, "{entry}");
        // The redirect comes back to the plugin; nothing follows it.
        assert_eq!(at(1)["status"], 307, "{entry}: {seen}");
        assert!(self.elsewhere.requests().is_empty(), "{entry}: followed");
        assert_eq!(
            at(2)["error"],
            "response: ErrorCode::HttpRequestDenied",
            "{entry}"
        );
        // The bomb arrives as the bytes sent; the host inflates nothing.
        assert_eq!(at(3)["body_bytes"], json!(self.bomb_bytes), "{entry}");
        let huge = at(4)["body_bytes"].as_u64().unwrap();
        assert!(huge <= 4 << 20, "{entry}: read {huge} bytes");
        assert!(
            at(4)["body_error"]
                .as_str()
                .unwrap_or_default()
                .contains("body size exceeds limit: 4194304 bytes"),
            "{entry}: {seen}"
        );
        if self.loopback_name.is_some() {
            assert!(
                at(5)["error"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("DestinationIpProhibited"),
                "{entry}: {seen}"
            );
        }
        assert_eq!(seen["env"], json!([]), "{entry}");
        // Every request that reached the granted peer carried the host's token, once, in
        // place of the forged one.
        let requests = self.granted.requests();
        assert_eq!(
            requests.len(),
            4,
            "{entry}: the loopback name reached nothing"
        );
        for request in requests {
            let authorizations: Vec<&(String, String)> = request
                .headers
                .iter()
                .filter(|(n, _)| n == "authorization")
                .collect();
            assert_eq!(
                authorizations,
                [&("authorization".to_owned(), format!("Bearer {TOKEN}"))],
                "{entry}"
            );
        }
    }
}

#[test]
fn every_egress_attack_is_refused_or_bounded_through_serve() {
    let attack = Attack::new(concat!(
        module_path!(),
        "::every_egress_attack_is_refused_or_bounded_through_serve"
    ));
    let cache = tempfile::tempdir().unwrap();
    let mut served = Served::start_with_env(&[], cache.path(), &[("DOCS_TOKEN", TOKEN)]);
    served.ok("bind_scope", json!({"scope": "agent:1"}));
    served.ok("bind_scope", json!({"scope": "agent:2"}));
    served.ok("bind_scope", json!({"scope": "agent:3"}));
    for (name, scope, config, timeout) in [
        ("prober", "agent:1", attack.probe_config(), 20_000),
        ("looper", "agent:2", attack.loop_config(), 1_000),
    ] {
        let loaded = served.call(
            "load_plugin",
            json!({"name": name, "wasm": env!("GUEST_HOSTILE"), "scope": scope,
                   "grants": attack.grants("DOCS_TOKEN"), "config": config,
                   "limits": {"call_timeout_ms": timeout}}),
        );
        assert!(loaded.get("result").is_some(), "{name}: {loaded}");
    }
    let assembled = served.ok("assemble", json!({"scope": "agent:1"}));
    attack.check(&hostile_section(&assembled), "serve");
    let looped = served.call("render", json!({"scope": "agent:2"}));
    assert!(
        looped.to_string().contains("deadline of 1000 ms exceeded"),
        "{looped}"
    );
    // The server goes on: another scope renders, and its memory stayed bounded.
    let other = served.ok("render", json!({"scope": "agent:3"}));
    assert!(other.get("prompt").is_some(), "{other}");
    let peak = memory_of(served.pid(), "VmHWM");
    assert!(peak < 400 << 20, "serve's peak memory: {peak} bytes");
    assert!(!served.stderr().contains(TOKEN));
}

#[test]
fn every_egress_attack_is_refused_or_bounded_in_the_library() {
    let attack = Attack::new(concat!(
        module_path!(),
        "::every_egress_attack_is_refused_or_bounded_in_the_library"
    ));
    // SAFETY (of the test): the variable is this test's own, read by the host at load.
    std::env::set_var("PROMPT_HOST_TEST_EGRESS_ATTACK_TOKEN", TOKEN);
    let grants = toml_inline(&attack.grants("PROMPT_HOST_TEST_EGRESS_ATTACK_TOKEN"));
    let host_for = |dir: &std::path::Path, config: Value, timeout: u64| {
        let toml = format!(
            "[prompt]\ninclude_harness_identity = false\n\n\
             [[plugin]]\nname = \"prober\"\nwasm = {wasm}\ngrants = {grants}\n\
             config = {config}\nlimits = {{ call_timeout_ms = {timeout} }}\n",
            wasm = quoted(env!("GUEST_HOSTILE")),
            config = toml_inline(&config),
        );
        std::fs::write(dir.join("host.toml"), toml).unwrap();
        let config = prompt_host::config::HostConfig::load(&dir.join("host.toml")).unwrap();
        prompt_host::Host::from_config(
            &config,
            prompt_host::RuntimeConfig::with_cache_dir(dir.join("cache")),
        )
        .unwrap()
    };
    let probe_dir = tempfile::tempdir().unwrap();
    let loop_dir = tempfile::tempdir().unwrap();
    let prober = host_for(probe_dir.path(), attack.probe_config(), 20_000);
    let looper = host_for(loop_dir.path(), attack.loop_config(), 1_000);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let assembly = prober
            .assemble(None, prompt_host::Facts::new())
            .await
            .unwrap();
        let text = assembly
            .sections
            .iter()
            .find(|s| s.name == "hostile")
            .map(|s| s.text.clone())
            .expect("the hostile section");
        attack.check(&text, "library");
        let looped = looper
            .render(None, prompt_host::Facts::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(looped.contains("deadline of 1000 ms exceeded"), "{looped}");
        assert!(!looped.contains(TOKEN));
    });
}
