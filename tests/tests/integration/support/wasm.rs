//! Shared helpers of the Wasm tests: a runtime on a temp cache dir, the guest components,
//! a registry, and assemble/render shortcuts.

use std::path::Path;
use std::sync::{Arc, Mutex};

use prompt_host::policy::PluginSpec;
use prompt_host::prompt::{render_prompt, AssembleContext, Assembly, PromptConfig, Registry};
use prompt_host::wasm::{PluginLog, RuntimeConfig, WasmRuntime};

/// A runtime whose compiled-code cache lives in `dir`.
pub fn runtime(dir: &Path) -> WasmRuntime {
    WasmRuntime::new(RuntimeConfig::with_cache_dir(dir)).expect("runtime")
}

/// A runtime that also records every plugin log line.
pub fn runtime_with_log(dir: &Path) -> (WasmRuntime, Arc<Mutex<Vec<PluginLog>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let config = RuntimeConfig::with_cache_dir(dir).log_sink(Arc::new(move |l: &PluginLog| {
        sink.lock().unwrap().push(l.clone());
    }));
    (WasmRuntime::new(config).expect("runtime"), lines)
}

/// The bytes of the `declare` guest.
pub fn declare() -> Vec<u8> {
    std::fs::read(env!("GUEST_DECLARE")).expect("declare guest")
}

/// A registry with the default config.
pub fn registry() -> Arc<Registry> {
    Registry::new(PromptConfig::default()).expect("registry")
}

/// A registry with a config.
pub fn registry_with(config: PromptConfig) -> Arc<Registry> {
    Registry::new(config).expect("registry")
}

/// A `declare` plugin spec with a config.
pub fn spec(name: &str, scope: Option<&str>, config: serde_json::Value) -> PluginSpec {
    let spec = PluginSpec::new(name).config(config);
    match scope {
        Some(s) => spec.scope(s),
        None => spec,
    }
}

/// Assemble for `scope` with no facts.
pub fn assemble(reg: &Registry, scope: Option<&str>) -> Assembly {
    reg.assemble_blocking(scope, AssembleContext::default())
        .unwrap_or_else(|e| panic!("assemble {scope:?}: {e}"))
}

/// Assemble and render the system prompt.
pub fn render(reg: &Registry, scope: Option<&str>) -> String {
    render_prompt(&assemble(reg, scope)).expect("render")
}

/// Section names other than the built-ins.
pub fn contributed(a: &Assembly) -> Vec<String> {
    a.sections
        .iter()
        .filter(|s| s.name != "harness:identity" && s.name != "deployment:persona")
        .map(|s| s.name.clone())
        .collect()
}

/// Flip a byte in the middle of every compiled-code file in `cache` (in its code, before the
/// trailer), written in place, as another program of the same user could.
pub fn tamper_with_artifacts(cache: &Path) {
    let mut tampered = 0;
    for entry in std::fs::read_dir(cache).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cwasm") {
            let mut bytes = std::fs::read(&path).unwrap();
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0xff;
            std::fs::write(&path, bytes).unwrap();
            tampered += 1;
        }
    }
    assert!(tampered > 0, "no compiled-code file in {}", cache.display());
}
