//! Contract 0.3.0's `freshness.keep-for`: an answer the plugin asks the host to keep for a
//! time is reused, without a call, by every assembly until then whatever its context; with
//! `keep-until-context-changes` as well, only while the context also stays the same; after
//! the time, or once the instance is replaced, the plugin is called again. The
//! `freshness-probe` guest logs every call it gets (`call <entry> <n>`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::integration::support::cli::Deployment;
use prompt_host::wasm::{PluginLog, WitVersion};
use prompt_host::{Facts, Host, PluginSpec, PromptConfig, RuntimeConfig};

/// A host with scopes `a` and its child `a:child`, the probe loaded into `a` with `config`,
/// and the probe's `call …` log lines.
fn probe(cache: &std::path::Path, config: &str) -> (Host, impl Fn() -> Vec<String>) {
    let lines = Arc::new(Mutex::new(Vec::<PluginLog>::new()));
    let sink = lines.clone();
    let runtime = RuntimeConfig::with_cache_dir(cache).log_sink(Arc::new(move |l: &PluginLog| {
        sink.lock().unwrap().push(l.clone())
    }));
    let host = Host::new(PromptConfig::default(), runtime).unwrap();
    host.bind_scope("a", None).unwrap();
    host.bind_scope("a:child", Some("a")).unwrap();
    let plugin = host
        .load_plugin(
            PluginSpec::new("probe").scope("a").config(json!(config)),
            std::path::Path::new(env!("GUEST_FRESHNESS_PROBE")),
        )
        .unwrap();
    host.attach(plugin);
    let calls = move || super::wit_versions::probe_calls(&lines);
    (host, calls)
}

/// The probe's four entries all carry value `n` in `host`'s rendering for `scope`.
async fn renders(host: &Host, scope: &str, model: &str, n: u32) {
    let r = host
        .render(Some(scope), Facts::new().with("model", model))
        .await
        .unwrap();
    let a = &r.assembly;
    let label = format!("{scope} on {model}");
    let section = &a.sections.iter().find(|s| s.name == "s").unwrap().text;
    assert_eq!(section, &format!("section value {n}"), "{label}");
    let context = &a.contexts.iter().find(|c| c.name == "c").unwrap().text;
    assert_eq!(context, &format!("context value {n}"), "{label}");
    let value = format!("variable value {n}");
    assert_eq!(a.variable("v"), Some(Some(value.as_str())), "{label}");
    assert_eq!(a.tools[0].name, format!("tool_{n}"), "{label}");
}

/// `call s n`, `call c n`, `call v n`, `call t n`, sorted.
fn all(n: u32) -> Vec<String> {
    let mut calls: Vec<String> = ["c", "s", "t", "v"]
        .iter()
        .map(|e| format!("call {e} {n}"))
        .collect();
    calls.sort();
    calls
}

fn sorted(mut calls: Vec<String>) -> Vec<String> {
    calls.sort();
    calls
}

#[test]
fn a_plugin_that_keeps_answers_for_a_time_is_a_0_3_0_component() {
    let d = Deployment::new("");
    let out = d.run(&["check", env!("GUEST_FRESHNESS_PROBE"), "--config", "\"10\""]);
    assert!(
        out.ok().contains("wit:     prompt-host:plugin@0.3.0"),
        "{}",
        out.stdout
    );
    let rt = prompt_host::wasm::WasmRuntime::new(RuntimeConfig::with_cache_dir(d.path("cache")))
        .unwrap();
    for (name, wasm, version) in [
        ("probe", env!("GUEST_FRESHNESS_PROBE"), WitVersion::V0_3_0),
        (
            "remote",
            env!("GUEST_REMOTE_INSTRUCTIONS"),
            WitVersion::V0_3_0,
        ),
        // Built against the same SDK, but never asking: a 0.2.0 component.
        ("declare", env!("GUEST_DECLARE_V2"), WitVersion::V0_2_0),
    ] {
        let code = rt.compile(name, std::path::Path::new(wasm), None).unwrap();
        assert_eq!(code.wit_version(), version, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_kept_for_an_hour_serves_every_context_without_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let (host, calls) = probe(dir.path(), "3600000");
    renders(&host, "a", "m1", 1).await;
    assert_eq!(sorted(calls()), all(1));
    // Other facts, another scope chain: the same answers, no call.
    for (scope, model) in [("a", "m1"), ("a", "m2"), ("a:child", "m3"), ("a", "m1")] {
        renders(&host, scope, model, 1).await;
    }
    assert_eq!(
        sorted(calls()),
        all(1),
        "no call while the answers are kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_time_the_plugin_is_called_again() {
    let dir = tempfile::tempdir().unwrap();
    // 30 ms: each pause below is longer, however busy the machine.
    let (host, calls) = probe(dir.path(), "30");
    for n in 1..=3 {
        renders(&host, "a", "m1", n).await;
        std::thread::sleep(Duration::from_millis(60));
    }
    let mut expected: Vec<String> = (1..=3).flat_map(all).collect();
    expected.sort();
    assert_eq!(sorted(calls()), expected);
    // 0 keeps nothing: every assembly calls.
    let dir = tempfile::tempdir().unwrap();
    let (host, calls) = probe(dir.path(), "0");
    for n in 1..=3 {
        renders(&host, "a", "m1", n).await;
    }
    assert_eq!(calls().len(), 12, "{:?}", calls());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_keep_until_context_changes_both_must_hold() {
    let dir = tempfile::tempdir().unwrap();
    let (host, calls) = probe(dir.path(), "3600000 context");
    renders(&host, "a", "m1", 1).await;
    renders(&host, "a", "m1", 1).await;
    assert_eq!(sorted(calls()), all(1));
    // Another context: called again, and the new answer kept for it.
    renders(&host, "a", "m2", 2).await;
    renders(&host, "a", "m2", 2).await;
    let mut expected = all(1);
    expected.extend(all(2));
    expected.sort();
    assert_eq!(sorted(calls()), expected);
}
