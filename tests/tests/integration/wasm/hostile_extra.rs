//! The rest of the hostile-plugin matrix (see `hostile.rs` for the first part): a
//! direct `poll` on a clock instant an hour ahead, a 100 MB string when memory allows it,
//! names full of control characters and odd code points, a component built against another
//! WIT version, and files that are not components at all. Each is contained, named, and the
//! host keeps serving other scopes; detection times are printed (`--nocapture`).

use prompt_host::wasm::CheckOptions;
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
            &spec(
                "good",
                Some("agent:ok"),
                json!({"sections": [{"name": "good", "order": 1, "text": {"dynamic": "fine ${call}"}}]}),
            ),
            &declare(),
        )
        .unwrap();
    (rt, reg, good)
}

fn load_with(
    rt: &WasmRuntime,
    reg: &std::sync::Arc<Registry>,
    config: Value,
    limits: Limits,
) -> Result<LoadedPlugin, WasmError> {
    let options = PluginOptions::default().limits(limits);
    rt.load(
        reg,
        &spec("hostile", Some("agent:h"), config).options(options),
        &hostile(),
    )
}

fn unaffected_scope_still_works(reg: &Registry) {
    let a = assemble(reg, Some("agent:ok"));
    assert!(a
        .sections
        .iter()
        .any(|s| s.name == "good" && s.text.starts_with("fine")));
}

/// Run `mode` in `phase` with `limits`; return the assembly error and the detection time.
fn fail_in(phase: &str, mode: &str, extra: Value, limits: Limits) -> (AssembleError, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    let mut config = json!({"mode": mode, "in": phase});
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    let _p = load_with(&rt, &reg, config, limits).unwrap_or_else(|e| panic!("{mode}: {e}"));
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
fn polling_a_clock_instant_an_hour_ahead_is_cut_at_the_deadline() {
    // `subscribe-instant` + `poll` directly (std's sleep uses `subscribe-duration`).
    let (err, took) = fail_in("section", "poll_instant", json!({}), Limits::default());
    assert_eq!(kind(&err), ProviderErrorKind::Timeout, "{err}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    // In `init` the init deadline applies, and a configured one is honoured.
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    let limits = Limits::default().init_timeout_ms(200);
    // Compile first, so the time measured is the plugin's init alone.
    drop(load_with(&rt, &reg, json!({"mode": "ok"}), Limits::default()).unwrap());
    let started = Instant::now();
    let err = load_with(
        &rt,
        &reg,
        json!({"mode": "poll_instant", "in": "init"}),
        limits,
    )
    .unwrap_err();
    let took = started.elapsed();
    eprintln!("hostile poll_instant in init (200 ms deadline): detected after {took:?}: {err}");
    assert!(err.to_string().contains("export \"init\""), "{err}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    unaffected_scope_still_works(&reg);
}

#[test]
fn a_100_mb_string_is_refused_by_the_output_cap_when_memory_allows_it() {
    // With the default 64 MiB memory the string never exists (`a_huge_text_is_refused`);
    // here the plugin may build it and the 1 MiB output cap is what refuses it.
    let limits = Limits::default()
        .memory_bytes(512 << 20)
        .call_timeout_ms(20_000);
    let (err, took) = fail_in("section", "huge_text", json!({}), limits);
    assert_eq!(kind(&err), ProviderErrorKind::Limit, "{err}");
    assert!(err.to_string().contains("output limit"), "{err}");
    eprintln!("100 MB string refused after {took:?}");
    // The default limits stop it earlier, at the memory cap.
    let (err, took) = fail_in("section", "huge_text", json!({}), Limits::default());
    assert_eq!(kind(&err), ProviderErrorKind::Limit, "{err}");
    eprintln!("100 MB string under default limits refused after {took:?}");
}

fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

#[test]
fn control_characters_and_bidi_controls_in_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    let started = Instant::now();
    let _p = load_with(&rt, &reg, json!({"mode": "odd_names"}), Limits::default()).unwrap();
    let a = assemble(&reg, Some("agent:h"));
    eprintln!(
        "odd_names declared and assembled in {:?}",
        started.elapsed()
    );
    let outcome = |case: &str| -> String {
        a.sections
            .iter()
            .find(|s| s.name == format!("hostile:{case}"))
            .unwrap_or_else(|| panic!("no outcome for {case}"))
            .text
            .clone()
    };
    // ODD_NAMES in the hostile guest: 0..=7 hold control characters or bidi controls, 8..=10
    // are odd but harmless.
    for i in 0..11 {
        for kind in ["section", "context", "tool"] {
            let text = outcome(&format!("odd-{kind}-{i}"));
            if i < 8 {
                assert!(text.starts_with("invalid: "), "{kind} {i}: {text}");
                assert!(text.contains("control character"), "{kind} {i}: {text}");
                // The message shows the name escaped, never the raw character.
                assert!(
                    !text.chars().any(|c| c.is_control() || is_bidi_control(c)),
                    "{text:?}"
                );
            } else {
                assert_eq!(text, "ok", "{kind} {i}");
            }
        }
    }
    let text = outcome("odd-listener-0");
    assert!(text.starts_with("invalid: listener key"), "{text}");
    // What was accepted assembles, renders and serialises; no refused name made it in.
    for s in a.sections.iter().chain(&a.contexts) {
        assert!(
            !s.name.chars().any(|c| c.is_control() || is_bidi_control(c)),
            "{:?}",
            s.name
        );
    }
    let odd: Vec<&str> = a
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !n.is_ascii())
        .collect();
    assert_eq!(odd.len(), 3, "{odd:?}");
    prompt_host::prompt::render_prompt(&a).unwrap();
    serde_json::to_string(&a.to_json()).unwrap();
    unaffected_scope_still_works(&reg);
}

#[test]
fn a_component_built_against_another_wit_version_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    let wasm = std::fs::read(env!("GUEST_WIT_FUTURE")).expect("wit-future guest");
    let started = Instant::now();
    let err = rt
        .load(&reg, &spec("wit-future", Some("agent:h"), json!({})), &wasm)
        .unwrap_err();
    eprintln!("wit 0.9.0 refused after {:?}: {err}", started.elapsed());
    assert!(matches!(err, WasmError::WitVersion { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("plugin \"wit-future\""), "{msg}");
    assert!(msg.contains("@0.9.0"), "{msg}");
    assert!(
        msg.contains("this host implements prompt-host:plugin@0.1.0, @0.2.0 and @0.3.0"),
        "{msg}"
    );
    assert!(contributed(&assemble(&reg, Some("agent:h"))).is_empty());
    let err = rt.check(&wasm, &CheckOptions::default()).unwrap_err();
    assert!(matches!(err, WasmError::WitVersion { .. }), "{err}");
    unaffected_scope_still_works(&reg);
}

#[test]
fn files_that_are_not_components_fail_the_load_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, reg, _good) = setup(dir.path());
    let good = hostile();
    let flipped = {
        let mut v = good.clone();
        for b in v.iter_mut().skip(64).step_by(97) {
            *b ^= 0x5a;
        }
        v
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("text", b"#!/bin/sh\necho hi\n".to_vec()),
        ("core-module", b"\0asm\x01\0\0\0".to_vec()),
        ("magic-only", b"\0asm".to_vec()),
        ("header-only", good[..8].to_vec()),
        ("truncated-half", good[..good.len() / 2].to_vec()),
        ("truncated-by-one", good[..good.len() - 1].to_vec()),
        ("flipped-bytes", flipped),
    ];
    for (name, bytes) in cases {
        let started = Instant::now();
        let err = rt
            .load(
                &reg,
                &spec(name, Some("agent:h"), json!({"mode": "ok"})),
                &bytes,
            )
            .unwrap_err();
        eprintln!("{name}: refused after {:?}: {err}", started.elapsed());
        assert!(
            matches!(
                err,
                WasmError::NotAComponent { .. }
                    | WasmError::Invalid { .. }
                    | WasmError::WrongWorld { .. }
            ),
            "{name}: {err:?}"
        );
        assert!(
            err.to_string().contains(&format!("plugin \"{name}\"")),
            "{name}: {err}"
        );
        assert!(contributed(&assemble(&reg, Some("agent:h"))).is_empty());
    }
    unaffected_scope_still_works(&reg);
    // The runtime still loads a good component afterwards.
    let _ok = load_with(&rt, &reg, json!({"mode": "ok"}), Limits::default()).unwrap();
    assert!(contributed(&assemble(&reg, Some("agent:h"))).contains(&"hostile".to_string()));
}

#[test]
fn a_listener_cannot_push_names_with_control_characters() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    for step in [
        json!({"push_section": {"name": "x\u{1b}[31mred", "text": "t"}}),
        json!({"push_context": {"name": "ctx\u{202e}evil", "text": "t"}}),
        json!({"set_sections": [{"name": "ok", "text": "t"}, {"name": "bad\u{7}", "text": "t"}]}),
        json!({"set_contexts": [{"name": "bad\u{2066}", "text": "t"}]}),
    ] {
        let config = json!({"listener": {"key": "l", "steps": [step, {"next": true}]}});
        let plugin = rt
            .load(&reg, &spec("pusher", Some("agent:1"), config), &declare())
            .expect("load");
        let err = reg
            .assemble_blocking(Some("agent:1"), AssembleContext::default())
            .expect_err("a control character in a pushed name fails the assembly");
        let text = err.to_string();
        assert!(text.contains("pusher"), "{text}");
        assert!(text.contains("control character"), "{text}");
        drop(plugin);
        // With the listener gone, the same scope assembles again.
        assert_eq!(
            render(&reg, Some("agent:1")),
            prompt_host::prompt::DEFAULT_IDENTITY
        );
    }
}
