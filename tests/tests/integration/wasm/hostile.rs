//! Every mode of the `hostile` guest is contained: the host survives, the error names the
//! plugin (and export and scope), and the next assembly of an unaffected scope succeeds.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::support::wasm::*;
use prompt_host::policy::{Limits, PluginOptions};
use prompt_host::prompt::{AssembleContext, AssembleError, ProviderErrorKind, Registry};
use prompt_host::wasm::{LoadedPlugin, WasmError, WasmRuntime};

fn hostile() -> Vec<u8> {
    std::fs::read(env!("GUEST_HOSTILE")).expect("hostile guest")
}

/// A registry with a well-behaved plugin in `agent:ok`, plus the runtime.
fn setup(dir: &std::path::Path) -> (WasmRuntime, std::sync::Arc<Registry>, LoadedPlugin) {
    let rt = runtime(dir);
    let reg = registry();
    let good = rt
        .load(
            &reg,
            &spec("good", Some("agent:ok"), json!({"sections": [{"name": "good", "order": 1, "text": {"dynamic": "fine ${call}"}}]})),
            &declare(),
        )
        .unwrap();
    (rt, reg, good)
}

fn load(
    rt: &WasmRuntime,
    reg: &std::sync::Arc<Registry>,
    config: Value,
) -> Result<LoadedPlugin, WasmError> {
    rt.load(reg, &spec("hostile", Some("agent:h"), config), &hostile())
}

fn unaffected_scope_still_works(reg: &Registry) {
    let a = assemble(reg, Some("agent:ok"));
    assert!(a
        .sections
        .iter()
        .any(|s| s.name == "good" && s.text.starts_with("fine")));
}

/// Run `mode` in a dynamic section; return the assembly error and how long detection took.
fn fail_in(phase: &str, mode: &str, extra: Value) -> (AssembleError, Duration) {
    fail_in_with(phase, mode, extra, PluginOptions::default())
}

/// [`fail_in`] with plugin options.
fn fail_in_with(
    phase: &str,
    mode: &str,
    extra: Value,
    options: PluginOptions,
) -> (AssembleError, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    let mut config = json!({"mode": mode, "in": phase});
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    let _p = rt
        .load(
            &reg,
            &spec("hostile", Some("agent:h"), config).options(options),
            &hostile(),
        )
        .unwrap_or_else(|e| panic!("{mode}: {e}"));
    let started = Instant::now();
    let err = reg
        .assemble_blocking(Some("agent:h"), AssembleContext::default())
        .expect_err(mode);
    let took = started.elapsed();
    let msg = err.to_string();
    assert_eq!(err.plugin(), Some("hostile"), "{mode}: {msg}");
    assert!(
        msg.contains("plugin \"hostile\" export \""),
        "{mode}: {msg}"
    );
    assert!(msg.contains("(scope agent:h)"), "{mode}: {msg}");
    unaffected_scope_still_works(&reg);
    // The trapped instance is replaced: the next assembly fails the same way, cleanly.
    reg.assemble_blocking(Some("agent:h"), AssembleContext::default())
        .expect_err(mode);
    unaffected_scope_still_works(&reg);
    eprintln!("hostile {mode} in {phase}: detected after {took:?}: {msg}");
    (err, took)
}

fn kind(err: &AssembleError) -> ProviderErrorKind {
    match err {
        AssembleError::Provider { error, .. } => error.kind.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn infinite_loop_times_out_near_the_deadline() {
    let (err, took) = fail_in("section", "loop", json!({}));
    assert_eq!(kind(&err), ProviderErrorKind::Timeout);
    assert!(
        err.to_string().contains("deadline of 50 ms exceeded"),
        "{err}"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn a_long_wasi_sleep_is_cut_at_the_deadline() {
    // 5 s, not the default hour: should the cap ever stop working, this fails instead of
    // hanging.
    let (err, took) = fail_in("section", "sleep", json!({"seconds": 5}));
    assert_eq!(kind(&err), ProviderErrorKind::Timeout);
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn runaway_recursion_traps() {
    // Rust's shadow stack lives in linear memory: overflowing it faults out of bounds before
    // the Wasm stack limit is reached. Either way it is a trap.
    let (err, _) = fail_in("section", "recursion", json!({}));
    assert_eq!(kind(&err), ProviderErrorKind::Trap);
    let msg = err.to_string();
    assert!(
        msg.contains("stack overflow") || msg.contains("out-of-bounds"),
        "{msg}"
    );
}

#[test]
fn a_panic_traps_and_the_message_carries_the_panic_text() {
    let (err, _) = fail_in("section", "panic", json!({}));
    assert_eq!(kind(&err), ProviderErrorKind::Trap);
    assert!(err.to_string().contains("wasm trap: unreachable"), "{err}");
    assert!(err.to_string().contains("panicked on purpose"), "{err}");
}

#[test]
fn unreachable_traps() {
    let (err, _) = fail_in("context", "trap", json!({}));
    assert_eq!(kind(&err), ProviderErrorKind::Trap);
    assert!(err.to_string().contains("export \"context-text\""), "{err}");
}

#[test]
fn a_memory_bomb_hits_the_memory_limit() {
    let (err, _) = fail_in("variable", "memory", json!({}));
    assert_eq!(kind(&err), ProviderErrorKind::Limit);
    assert!(err.to_string().contains("memory limit"), "{err}");
}

#[test]
fn leaking_handles_hits_the_handle_limit() {
    // A generous deadline, so the handle limit (not the clock) is what stops it even on a
    // loaded machine.
    let options = PluginOptions::default().limits(Limits::default().call_timeout_ms(5_000));
    let (err, _) = fail_in_with("section", "handles", json!({}), options);
    assert_eq!(kind(&err), ProviderErrorKind::Limit, "{err}");
}

#[test]
fn a_huge_text_is_refused() {
    // The limit under test is memory (then the output cap), not time: on a busy machine
    // the guest's few milliseconds of work can take longer than the default deadline, so
    // the deadline is moved out of the way.
    let mut patient = PluginOptions::default();
    patient.limits.call_timeout_ms = 30_000;
    let (err, _) = fail_in_with("section", "huge_text", json!({}), patient.clone());
    assert_eq!(kind(&err), ProviderErrorKind::Limit, "{err}");
    // 2 MiB fits in memory, so the output cap is what refuses it.
    let (err, _) = fail_in_with("tools", "huge_text", json!({"bytes": 2_000_000}), patient);
    assert_eq!(kind(&err), ProviderErrorKind::Limit);
    assert!(err.to_string().contains("output limit"), "{err}");
}

#[test]
fn log_and_stdout_spam_are_capped_and_the_loop_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, lines) = runtime_with_log(dir.path());
    let reg = registry();
    for mode in ["log_spam", "stdout_spam", "huge_log"] {
        let p = rt
            .load(
                &reg,
                &spec(mode, Some("agent:h"), json!({"mode": mode})),
                &hostile(),
            )
            .unwrap();
        let err = reg
            .assemble_blocking(Some("agent:h"), AssembleContext::default())
            .expect_err(mode);
        assert_eq!(err.plugin(), Some(mode), "{err}");
        drop(p);
    }
    let bytes: usize = lines.lock().unwrap().iter().map(|l| l.message.len()).sum();
    // Three plugins, each capped at 64 KiB per output buffer.
    assert!(bytes < 3 * 3 * (64 << 10), "{bytes}");
    assemble(&reg, Some("agent:h"));
}

#[test]
fn a_trapping_listener_is_named() {
    let (err, _) = fail_in("listener", "trap", json!({}));
    assert!(err.to_string().contains("export \"on-assemble\""), "{err}");
}

#[test]
fn a_trap_in_init_fails_the_load_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    for mode in ["trap", "panic", "loop", "memory"] {
        let err = load(&rt, &reg, json!({"mode": mode, "in": "init"})).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("plugin \"hostile\" export \"init\" (scope agent:h)"),
            "{mode}: {msg}"
        );
        assert!(contributed(&assemble(&reg, Some("agent:h"))).is_empty());
    }
    unaffected_scope_still_works(&reg);
}

#[test]
fn the_sandbox_has_no_files_network_stdin_or_environment() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    for mode in ["probe_fs", "probe_net", "probe_stdin", "probe_env"] {
        let p = load(&rt, &reg, json!({"mode": mode})).unwrap();
        let a = assemble(&reg, Some("agent:h"));
        let text = &a
            .sections
            .iter()
            .find(|s| s.name == "hostile")
            .unwrap()
            .text;
        eprintln!("{mode}: {text}");
        if mode == "probe_env" {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(v["args"], json!([]), "{text}");
            assert_eq!(v["env"], json!([]), "{text}");
        } else if mode == "probe_stdin" {
            // stdin is closed: reading yields end-of-file at once.
            assert!(
                text.contains("ok: 0 bytes") || text.contains("error"),
                "{text}"
            );
        } else {
            assert!(!text.contains(": ok"), "{mode}: {text}");
        }
        drop(p);
    }
}

#[test]
fn invalid_and_duplicate_declarations_are_refused_with_the_host_message() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    for mode in ["duplicate", "invalid"] {
        let p = load(&rt, &reg, json!({"mode": mode})).unwrap();
        let a = assemble(&reg, Some("agent:h"));
        let cases: Vec<_> = a
            .sections
            .iter()
            .filter(|s| s.name.starts_with("hostile:"))
            .collect();
        assert!(!cases.is_empty());
        for s in &cases {
            eprintln!("{mode}: {} = {}", s.name, s.text);
        }
        drop(p);
    }
}

#[test]
fn declaring_after_init_is_closed_and_next_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    let p = load(&rt, &reg, json!({"mode": "declare_after_init"})).unwrap();
    let a = assemble(&reg, Some("agent:h"));
    let text = &a
        .sections
        .iter()
        .find(|s| s.name == "hostile")
        .unwrap()
        .text;
    assert!(text.starts_with("closed:"), "{text}");
    assert!(!a.sections.iter().any(|s| s.name == "late"));
    drop(p);

    let _p = load(&rt, &reg, json!({"mode": "next_twice"})).unwrap();
    let a = assemble(&reg, Some("agent:h"));
    let text = &a
        .sections
        .iter()
        .find(|s| s.name == "hostile")
        .unwrap()
        .text;
    assert!(
        text.starts_with("first: ok; second: invalid-input:"),
        "{text}"
    );
}

#[test]
fn many_declarations_stop_at_the_declaration_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    let started = Instant::now();
    let err = load(&rt, &reg, json!({"mode": "many_sections"})).unwrap_err();
    assert!(
        err.to_string().contains("declaration limit of 1000"),
        "{err}"
    );
    eprintln!("many_sections refused after {:?}", started.elapsed());
    assert!(contributed(&assemble(&reg, Some("agent:h"))).is_empty());
}
