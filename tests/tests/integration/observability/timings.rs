//! Where the time goes, through every entry point: `inspect --timings` (each plugin call,
//! the phases, each plugin's instantiation and `init`, the compile cache's hits and misses),
//! serve's `render`/`step` with `"timings": true`, and `Facts::timings` in the library.
//! Fixed texts are not calls; dynamic sections, contexts, variables and listeners are.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

/// A dynamic section and context in `agent:1`, a fixed section beside them, and a global
/// pass-through listener.
pub(crate) const DEPLOYMENT: &str = r#"
[[scope]]
name = "agent:1"

[[plugin]]
name = "dyn"
wasm = "{DECLARE}"
scope = "agent:1"
config = { sections = [{ name = "live", order = 150, text = { dynamic = "Live text." } }, { name = "fixed", order = 160, text = "Fixed." }], contexts = [{ name = "where", order = 10, text = { dynamic = "cwd: /tmp" } }] }

[[plugin]]
name = "pass"
wasm = "{DECLARE}"
config = { listener = { key = "l", steps = [{ next = true }] } }
"#;

/// The calls one assembly of DEPLOYMENT for `agent:1` makes: (kind, name, plugin, layer).
pub(crate) fn expected_calls() -> BTreeSet<(String, String, String, String)> {
    let call = |kind: &str, name: &str, plugin: &str, layer: &str| {
        (kind.into(), name.into(), plugin.into(), layer.into())
    };
    [
        call("variable", "provider", "prompt-host", "global"),
        call("variable", "model", "prompt-host", "global"),
        call("variable", "cwd", "prompt-host", "global"),
        call("section", "live", "dyn", "agent:1"),
        call("context", "where", "dyn", "agent:1"),
        call("listener", "l", "pass", "global"),
    ]
    .into_iter()
    .collect()
}

fn calls_of(timings: &Value) -> BTreeSet<(String, String, String, String)> {
    timings["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| {
            assert!(c["micros"].as_f64().expect("micros") >= 0.0, "{c}");
            let text = |k: &str| c[k].as_str().unwrap_or("-").to_string();
            (text("kind"), text("name"), text("plugin"), text("layer"))
        })
        .collect()
}

fn phases_of(timings: &Value) -> Vec<String> {
    timings["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .map(|p| {
            assert!(p["micros"].as_f64().expect("micros") >= 0.0, "{p}");
            p["phase"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn inspect_timings_lists_each_plugin_call_each_load_and_the_compile_cache() {
    let d = Deployment::new(DEPLOYMENT);
    let config = d.config();
    let config = config.to_str().unwrap();
    let args = [
        "inspect",
        "--timings",
        "--config",
        config,
        "--scope",
        "agent:1",
    ];
    let cold = d.run(&args).ok().to_string();
    let line = |text: &str, start: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?}:\n{text}"))
            .to_string()
    };
    let timings = line(&cold, "timings: assemble ");
    assert!(timings.contains("(plugin calls ") && timings.contains(", 6 calls), render "));
    for (name, kind, plugin, layer) in [
        ("live", "section", "dyn", "agent:1"),
        ("where", "context", "dyn", "agent:1"),
        ("l", "listener", "pass", "global"),
        ("model", "variable", "prompt-host", "global"),
    ] {
        // The CALL table follows its header (the SECTION table above has rows of the same
        // names).
        let calls = &cold[cold.find("\nCALL ").expect("a CALL table")..];
        let row = line(calls, &format!("{name} "));
        let words: Vec<&str> = row.split_whitespace().collect();
        // `tool provider` is the only two-word kind; these are one word.
        assert_eq!(&words[1..4], [kind, plugin, layer], "{row}");
        assert!(words[4].parse::<f64>().is_ok(), "{row}");
    }
    assert!(
        !cold
            .lines()
            .any(|l| l.starts_with("fixed ") && l.contains("section")),
        "a fixed text is not a call:\n{cold}"
    );
    let loads = &cold[cold.find("\nPLUGIN LOAD ").expect("a PLUGIN LOAD table")..];
    for plugin in ["dyn ", "pass "] {
        let row = line(loads, plugin);
        let figures: Vec<&str> = row.split_whitespace().skip(2).collect();
        assert_eq!(figures.len(), 2, "{row}");
        assert!(figures.iter().all(|f| f.parse::<f64>().is_ok()), "{row}");
    }
    // One file for both plugins: compiled once; the next run loads it from the disk cache.
    // On Linux the code from the disk cache runs from the file itself.
    assert_eq!(
        line(&cold, "compile cache: "),
        "compile cache: 1 compiled, 0 from disk (0 run from the file), 0 from memory, 0 disk entries unusable",
        "{cold}"
    );
    let warm = d.run(&args).ok().to_string();
    assert_eq!(
        line(&warm, "compile cache: "),
        "compile cache: 0 compiled, 1 from disk (1 run from the file), 0 from memory, 0 disk entries unusable",
        "{warm}"
    );
    // Without --timings, nothing of it.
    let plain = d
        .run(&["inspect", "--config", config, "--scope", "agent:1"])
        .ok()
        .to_string();
    assert!(
        !plain.contains("timings:") && !plain.contains("PLUGIN LOAD"),
        "{plain}"
    );
}

#[test]
fn serve_reports_timings_on_request_for_render_and_step() {
    let d = Deployment::new(DEPLOYMENT);
    let mut s = Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    );
    let plain = s.ok("render", json!({"scope": "agent:1"}));
    assert!(plain.get("timings").is_none(), "{plain}");
    let timed = s.ok("render", json!({"scope": "agent:1", "timings": true}));
    assert_eq!(phases_of(&timed["timings"]), ["assemble", "render"]);
    assert_eq!(calls_of(&timed["timings"]), expected_calls());
    assert_eq!(timed["prompt"], plain["prompt"]);

    let log = d.path("session.jsonl");
    let step = s.ok(
        "step",
        json!({"session": log, "scope": "agent:1", "facts": {"model": "m1"}, "timings": true}),
    );
    assert_eq!(
        phases_of(&step["timings"]),
        ["assemble", "render", "commit"]
    );
    assert_eq!(calls_of(&step["timings"]), expected_calls());
    let untimed = s.ok(
        "step",
        json!({"session": log, "scope": "agent:1", "facts": {"model": "m1"}}),
    );
    assert!(untimed.get("timings").is_none());
    let response = s.call("render", json!({"timings": "yes"}));
    assert_eq!(response["error"]["code"], -32602, "{response}");
}

#[test]
fn the_library_records_calls_and_phases_in_both_tokio_runtimes() {
    let d = Deployment::new(DEPLOYMENT);
    let config = prompt_host::config::HostConfig::load(&d.config()).unwrap();
    let multi = tokio::runtime::Runtime::new().unwrap();
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for runtime in [&multi, &current] {
        runtime.block_on(async {
            let mut options = prompt_host::wasm::RuntimeConfig::default();
            options.cache_dir = Some(d.path("cache"));
            let host = prompt_host::Host::from_config(&config, options).unwrap();
            let timings = prompt_host::prompt::Timings::new();
            let facts = prompt_host::Facts::new().timings(std::sync::Arc::clone(&timings));
            host.render(Some("agent:1"), facts).await.unwrap();
            let report = serde_json::to_value(timings.report()).unwrap();
            assert_eq!(phases_of(&report), ["assemble", "render"]);
            assert_eq!(calls_of(&report), expected_calls());
            // Loads are timed too.
            for plugin in host.plugins() {
                assert!(
                    plugin.load.instantiate > std::time::Duration::ZERO,
                    "{plugin:?}"
                );
            }
            // Without a collector, nothing is recorded anywhere.
            host.render(Some("agent:1"), prompt_host::Facts::new())
                .await
                .unwrap();
            assert_eq!(timings.report().calls.len(), 6);
        });
    }
}
