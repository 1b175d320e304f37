//! The hostile matrix through `prompt-host serve`, over its stdio: one server loads every
//! (mode, phase) pair into a scope of its own, and after each the benign `agent:ok` (from
//! `serve --config`) must still answer with the same bytes. Also: the declare guest's
//! amplification, detection times per hostile class (for docs/threat-model.md), and the server
//! itself staying up.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::integration::support::cli::Deployment;
use crate::integration::support::hostile_matrix::{
    cases, declare_amplifier, deployment_toml, Case, Expect,
};
use crate::integration::support::serve::Served;

fn start(d: &Deployment) -> Served {
    Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    )
}

#[test]
fn hostile_matrix_through_serve() {
    let d = Deployment::new(&deployment_toml(None));
    let mut served = start(&d);
    let baseline = served.ok("render", json!({"scope": "agent:ok"}))["prompt"].clone();
    let mut slowest: Vec<(Duration, String)> = Vec::new();
    for (index, case) in cases().into_iter().enumerate() {
        let scope = format!("agent:h{index}");
        served.ok("bind_scope", json!({"scope": scope}));
        let started = Instant::now();
        let load = served.call(
            "load_plugin",
            json!({
                "name": "hostile",
                "wasm": env!("GUEST_HOSTILE"),
                "scope": scope,
                "config": case.config(),
                "limits": Case::limits(),
            }),
        );
        match (case.expect, load.get("error")) {
            (Expect::FailsInit, Some(error)) => {
                case.assert_error(error["message"].as_str().unwrap(), &scope)
            }
            (Expect::FailsInit, None) => panic!("{}: init should fail: {load}", case.label()),
            (_, Some(error)) => panic!("{}: load failed: {error}", case.label()),
            (expect, None) => {
                let render = served.call("render", json!({"scope": scope}));
                match (expect, render.get("error")) {
                    (Expect::Ok, None) => {}
                    (Expect::Ok, Some(e)) => panic!("{}: {e}", case.label()),
                    (_, None) => panic!("{}: rendering should fail: {render}", case.label()),
                    (_, Some(e)) => case.assert_error(e["message"].as_str().unwrap(), &scope),
                }
            }
        }
        slowest.push((started.elapsed(), case.label()));
        let again = served.ok("render", json!({"scope": "agent:ok"}));
        assert_eq!(again["prompt"], baseline, "{}", case.label());
        served.ok("dispose_scope", json!({"scope": scope}));
    }
    assert!(served.alive());
    slowest.sort();
    eprintln!(
        "slowest hostile cases through serve (load + render): {:?}",
        &slowest[slowest.len().saturating_sub(8)..]
    );
}

#[test]
fn declare_amplification_through_serve() {
    let d = Deployment::new(&deployment_toml(None));
    let mut served = start(&d);
    let baseline = served.ok("render", json!({"scope": "agent:ok"}));
    served.ok("bind_scope", json!({"scope": "agent:amp"}));
    served.ok(
        "load_plugin",
        json!({"name": "declare", "wasm": env!("GUEST_DECLARE"), "scope": "agent:amp", "config": declare_amplifier()}),
    );
    let started = Instant::now();
    let error = served.err("render", json!({"scope": "agent:amp"}));
    let took = started.elapsed();
    assert!(
        error.contains("would exceed max_prompt_bytes = 8388608 bytes at section \"amp\""),
        "{error}"
    );
    assert!(error.contains("variable \"v\" is from plugin \"declare\" (scope agent:amp)"));
    eprintln!("amplification refused through serve in {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(served.ok("render", json!({"scope": "agent:ok"})), baseline);
}

/// Detection time of each hostile class, measured from the render request to its error
/// through `serve` with the default limits (50 ms per call, 1 s for init). Printed for
/// docs/threat-model.md; the bound asserted is loose (a shared machine), the figures are what count.
#[test]
fn detection_times_through_serve() {
    let d = Deployment::new(&deployment_toml(None));
    let mut served = start(&d);
    let classes = [
        ("busy loop", json!({"mode": "loop"})),
        ("WASI sleep", json!({"mode": "sleep"})),
        ("ready poll", json!({"mode": "poll_instant"})),
        ("memory bomb", json!({"mode": "memory"})),
        ("stack overflow", json!({"mode": "recursion"})),
        ("panic", json!({"mode": "panic"})),
        ("handle leak", json!({"mode": "handles"})),
        ("log spam", json!({"mode": "log_spam"})),
        ("100 MB text", json!({"mode": "huge_text"})),
        (
            "64 MiB + 1 random bytes",
            json!({"mode": "random", "bytes": (64u64 << 20) + 1}),
        ),
        (
            "240 MiB random bytes (256 MiB memory)",
            json!({"mode": "random", "bytes": 240u64 << 20}),
        ),
    ];
    let mut report = Vec::new();
    for (index, (class, config)) in classes.iter().enumerate() {
        let scope = format!("agent:t{index}");
        served.ok("bind_scope", json!({"scope": scope}));
        let limits = if config["bytes"].as_u64() == Some(240 << 20) {
            json!({"memory_bytes": 256u64 << 20})
        } else {
            json!({})
        };
        served.ok(
            "load_plugin",
            json!({"name": "hostile", "wasm": env!("GUEST_HOSTILE"), "scope": scope, "config": config, "limits": limits}),
        );
        // One warm-up failure (the instance is then replaced), then the measured one.
        let mut times = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            let response = served.call("render", json!({"scope": scope}));
            times.push(started.elapsed());
            let message = response["error"]["message"]
                .as_str()
                .unwrap_or_else(|| panic!("{class}: should fail: {response}"));
            assert!(
                message.contains("plugin \"hostile\" export \"section-text\""),
                "{message}"
            );
        }
        times.sort();
        let median = times[1];
        assert!(median < Duration::from_secs(2), "{class}: {median:?}");
        report.push(format!("{class}: {:.1} ms", median.as_secs_f64() * 1e3));
        served.ok("dispose_scope", json!({"scope": scope}));
    }
    eprintln!(
        "detection times through serve (median of 3): {}",
        report.join("; ")
    );
}
