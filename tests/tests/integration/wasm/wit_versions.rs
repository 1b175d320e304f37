//! Contract versions 0.1.0 and 0.2.0 side by side: both load into one host, a 0.1.0 plugin
//! and its 0.2.0 rebuild produce the same output, `check` names the version, and every
//! "unchanged" answer of 0.2.0 is re-used by the host until a changed value comes.

use std::path::Path;

use serde_json::json;

use crate::integration::support::cli::Deployment;
use prompt_host::policy::{Limits, PluginOptions};
use prompt_host::prompt::CancelToken;
use prompt_host::wasm::{PluginLog, WitVersion};
use prompt_host::{Facts, Host, PluginSpec, PromptConfig, RuntimeConfig};

fn host(cache: &Path) -> Host {
    let prompt = PromptConfig::default().include_harness_identity(false);
    let host = Host::new(prompt, RuntimeConfig::with_cache_dir(cache)).unwrap();
    for scope in ["v1", "v2", "v3"] {
        host.bind_scope(scope, None).unwrap();
    }
    host
}

fn load(host: &Host, name: &str, scope: &str, wasm: &str, config: serde_json::Value) {
    let plugin = host
        .load_plugin(
            PluginSpec::new(name).scope(scope).config(config),
            std::path::Path::new(wasm),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    host.attach(plugin);
}

/// The declare config both builds run: every kind of entry, dynamic, steady with the facts.
fn steady() -> serde_json::Value {
    json!({
        "sections": [{"name": "s", "order": 1, "text": {"dynamic": "section on ${fact:model} in ${scope}"}},
                     {"name": "uses", "order": 2, "text": "v={{v}}"}],
        "contexts": [{"name": "c", "order": 1, "text": {"dynamic": "context on ${fact:model}"}}],
        "variables": [{"name": "v", "dynamic": "value on ${fact:model}"}],
        "tools": [{"schemas": [{"name": "t", "description": "tool", "parameters": {"type": "object"}}], "dynamic": true}],
        "listener": {"key": "l", "steps": [{"next": true}, {"push_section": {"name": "after", "text": "listened"}}]},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_and_its_0_2_0_rebuild_render_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path());
    load(&host, "declare", "v1", env!("GUEST_DECLARE"), steady());
    load(&host, "declare", "v2", env!("GUEST_DECLARE_V2"), steady());
    // The 0.2.0 build asking the host to keep its answers until the context changes
    // (`Version::Context` in the SDK): the host stops calling, the output stays the same.
    let mut kept = steady();
    kept["keep_until_context_changes"] = json!(true);
    load(&host, "declare", "v3", env!("GUEST_DECLARE_V2"), kept);
    // Also other examples, each in both builds, in one deployment.
    load(
        &host,
        "persona",
        "v1",
        env!("GUEST_PERSONA"),
        json!({"text": "Persona on {{model}}."}),
    );
    load(
        &host,
        "persona",
        "v2",
        env!("GUEST_PERSONA_V2"),
        json!({"text": "Persona on {{model}}."}),
    );
    load(&host, "guide", "v1", env!("GUEST_TOOL_GUIDE"), json!({}));
    load(&host, "guide", "v2", env!("GUEST_TOOL_GUIDE_V2"), json!({}));
    for model in ["m1", "m1", "m2", "m2", "m1"] {
        let facts = || Facts::new().with("model", model).with("cwd", "/work");
        let one = host.render(Some("v1"), facts()).await.unwrap();
        let two = host.render(Some("v2"), facts()).await.unwrap();
        let three = host.render(Some("v3"), facts()).await.unwrap();
        assert_eq!(one.prompt.replace("v1", "v2"), two.prompt, "model {model}");
        assert_eq!(one.context, two.context);
        assert_eq!(one.assembly.tools, two.assembly.tools);
        // Only `declare` is in v3: its section, variable, context and tool, as in v1.
        assert!(three.prompt.contains(&format!("section on {model} in v3")));
        assert!(three.prompt.contains(&format!("v=value on {model}")));
        let context = |r: &prompt_host::Rendered| {
            r.assembly
                .contexts
                .iter()
                .find(|c| c.name == "c")
                .map(|c| c.text.clone())
        };
        assert_eq!(context(&three), context(&one), "kept, model {model}");
        assert_eq!(
            three.assembly.tools,
            one.assembly
                .tools
                .iter()
                .filter(|t| t.name == "t")
                .cloned()
                .collect::<Vec<_>>()
        );
        assert!(two.prompt.contains(&format!("section on {model} in v2")));
        assert!(two.prompt.contains(&format!("v=value on {model}")));
    }
}

#[test]
fn check_names_each_version() {
    let d = Deployment::new("");
    for (wasm, version) in [
        (env!("GUEST_DECLARE"), "0.1.0"),
        (env!("GUEST_DECLARE_V2"), "0.2.0"),
        (env!("GUEST_ANSWERS_PROBE"), "0.2.0"),
    ] {
        let out = d.run(&["check", wasm]);
        assert!(
            out.ok()
                .contains(&format!("wit:     prompt-host:plugin@{version}")),
            "{wasm}: {}",
            out.stdout
        );
    }
    let rt = prompt_host::wasm::WasmRuntime::new(RuntimeConfig::with_cache_dir(d.path("cache")))
        .unwrap();
    let code = rt
        .compile(
            "probe",
            std::path::Path::new(env!("GUEST_ANSWERS_PROBE")),
            None,
        )
        .unwrap();
    assert_eq!(code.wit_version(), WitVersion::V0_2_0);
}

/// The answers-probe's four entries (section `s`, context `c`, variable `v`, tool provider
/// `t`) all carry the probe's value `n`.
fn assert_probe_values(a: &prompt_host::prompt::Assembly, n: u32, label: &str) {
    assert_eq!(
        a.sections.iter().find(|s| s.name == "s").unwrap().text,
        format!("section value {n}"),
        "{label}"
    );
    assert_eq!(
        a.contexts.iter().find(|c| c.name == "c").unwrap().text,
        format!("context value {n}"),
        "{label}"
    );
    assert_eq!(
        a.variable("v"),
        Some(Some(format!("variable value {n}").as_str())),
        "{label}"
    );
    assert_eq!(a.tools.len(), 1, "{label}");
    assert_eq!(a.tools[0].name, format!("tool_{n}"), "{label}");
    assert_eq!(a.tools[0].description, format!("tool value {n}"), "{label}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_unchanged_answer_reuses_the_previous_value_until_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path());
    // Answers: call 1 a value, calls 2 and 4 "unchanged", call 3 and 6 a new value.
    load(
        &host,
        "probe",
        "v2",
        env!("GUEST_ANSWERS_PROBE"),
        json!("changes-every-3rd"),
    );
    let expected = [1, 1, 3, 3, 3, 6];
    for (step, n) in expected.iter().enumerate() {
        let rendered = host.render(Some("v2"), Facts::new()).await.unwrap();
        assert_probe_values(&rendered.assembly, *n, &format!("assembly {}", step + 1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_without_a_previous_answer_fails_naming_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path());
    load(
        &host,
        "probe",
        "v2",
        env!("GUEST_ANSWERS_PROBE"),
        json!("unchanged-first"),
    );
    let error = host
        .render(Some("v2"), Facts::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("plugin \"probe\" export \"variable\" (scope v2): answered \"unchanged\", but this instance has given no answer for this entry before"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_2_0_plugin_sees_the_cancellation() {
    let dir = tempfile::tempdir().unwrap();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<PluginLog>::new()));
    let sink = lines.clone();
    let runtime = RuntimeConfig::with_cache_dir(dir.path()).log_sink(std::sync::Arc::new(
        move |l: &PluginLog| sink.lock().unwrap().push(l.clone()),
    ));
    let host = Host::new(PromptConfig::default(), runtime).unwrap();
    host.bind_scope("v2", None).unwrap();
    let spec = PluginSpec::new("waiter")
        .scope("v2")
        .config(json!("wait-for-cancel"))
        .options(PluginOptions::default().limits(Limits::default().call_timeout_ms(10_000)));
    host.attach(
        host.load_plugin(spec, std::path::Path::new(env!("GUEST_ANSWERS_PROBE")))
            .unwrap(),
    );
    let token = CancelToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let error = host
        .render(Some("v2"), Facts::new().signal(token))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("cancelled"), "{error}");
    let lines = lines.lock().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.plugin == "waiter" && l.message == "saw the cancellation"),
        "{lines:?}"
    );
}

/// A host whose plugin log lines are collected, with scope `v2` and its child `v2:child`.
fn logging_host(cache: &Path) -> (Host, std::sync::Arc<std::sync::Mutex<Vec<PluginLog>>>) {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<PluginLog>::new()));
    let sink = lines.clone();
    let runtime =
        RuntimeConfig::with_cache_dir(cache).log_sink(std::sync::Arc::new(move |l: &PluginLog| {
            sink.lock().unwrap().push(l.clone())
        }));
    let host = Host::new(PromptConfig::default(), runtime).unwrap();
    host.bind_scope("v2", None).unwrap();
    host.bind_scope("v2:child", Some("v2")).unwrap();
    (host, lines)
}

/// The calls the plugin `probe` logged so far (`call <entry> <n>`), in order.
pub(crate) fn probe_calls(lines: &std::sync::Mutex<Vec<PluginLog>>) -> Vec<String> {
    lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.plugin == "probe" && l.message.starts_with("call "))
        .map(|l| l.message.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_answer_is_reused_without_a_call_until_the_context_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (host, lines) = logging_host(dir.path());
    load(
        &host,
        "probe",
        "v2",
        env!("GUEST_ANSWERS_PROBE"),
        json!("keep"),
    );
    let calls = || probe_calls(&lines);
    let all = |n: u32| {
        ["s", "c", "v", "t"]
            .iter()
            .map(|e| format!("call {e} {n}"))
            .collect::<Vec<_>>()
    };
    let check = |rendered: &prompt_host::Rendered, n: u32, label: &str| {
        assert_probe_values(&rendered.assembly, n, label)
    };
    let m = |model: &str| Facts::new().with("model", model);

    // Three assemblies with one context: one call per entry, then none.
    for i in 0..3 {
        let r = host.render(Some("v2"), m("m1")).await.unwrap();
        check(&r, 1, &format!("m1, assembly {}", i + 1));
    }
    let mut expected = all(1);
    assert_eq!(calls().len(), 4, "{:?}", calls());
    // Other facts: called again, the new values are picked up, then kept.
    for _ in 0..2 {
        let r = host.render(Some("v2"), m("m2")).await.unwrap();
        check(&r, 2, "m2");
    }
    expected.extend(all(2));
    // Another scope chain is another context too.
    let r = host.render(Some("v2:child"), m("m2")).await.unwrap();
    check(&r, 3, "child scope");
    expected.extend(all(3));
    let mut sorted = calls();
    sorted.sort();
    expected.sort();
    assert_eq!(sorted, expected);

    // A trap replaces the instance: its kept answers are not reused, the new instance is
    // called (and counts from 1 again).
    let error = host
        .render(Some("v2"), m("m2").with("trap", "now"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("trap"), "{error}");
    let before = calls().len();
    let r = host.render(Some("v2:child"), m("m2")).await.unwrap();
    check(&r, 1, "after the trap");
    assert_eq!(calls().len(), before + 4, "{:?}", calls());
}
