//! Containment of misbehaving plugins that `declare` can imitate: oversized output, memory
//! limits, failing providers and listeners, and the `on_error = "skip"` policy.

use serde_json::json;

use crate::integration::support::wasm::*;
use prompt_host::policy::{Limits, OnError, PluginOptions};
use prompt_host::prompt::{AssembleContext, AssembleError, ProviderErrorKind};

fn provider_kind(err: &AssembleError) -> ProviderErrorKind {
    match err {
        AssembleError::Provider { error, .. } => error.kind.clone(),
        other => panic!("not a provider error: {other:?}"),
    }
}

#[test]
fn a_huge_dynamic_text_fails_with_a_limit_error_and_other_scopes_still_assemble() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let big = "x".repeat(2 << 20);
    let _p = rt
        .load(
            &reg,
            &spec(
                "big",
                Some("agent:1"),
                json!({
                "sections": [{"name": "huge", "order": 1, "text": {"dynamic": big}}]}),
            ),
            &declare(),
        )
        .unwrap();
    let err = reg
        .assemble_blocking(Some("agent:1"), AssembleContext::default())
        .unwrap_err();
    assert_eq!(provider_kind(&err), ProviderErrorKind::Limit);
    let msg = err.to_string();
    assert!(
        msg.contains("plugin \"big\" export \"section-text\" (scope agent:1)"),
        "{msg}"
    );
    assert!(msg.contains("output limit"), "{msg}");
    assemble(&reg, Some("agent:2"));
    assemble(&reg, None);
}

#[test]
fn oversized_static_declarations_fail_init() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let big = "y".repeat(2 << 20);
    let err = rt
        .load(
            &reg,
            &spec(
                "bigstatic",
                None,
                json!({"sections": [{"name": "s", "order": 1, "text": big}]}),
            ),
            &declare(),
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("plugin \"bigstatic\" export \"init\""),
        "{msg}"
    );
    assert!(msg.contains("output limit"), "{msg}");
    assert!(contributed(&assemble(&reg, None)).is_empty());
}

#[test]
fn a_memory_limit_hit_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let options = PluginOptions::default().limits(Limits::default().memory_bytes(4 << 20));
    // Receiving an 8 MiB config needs more than 4 MiB of linear memory.
    let big = "z".repeat(8 << 20);
    let err = rt
        .load(
            &reg,
            &spec(
                "hungry",
                Some("agent:1"),
                json!({"sections": [{"name": "s", "order": 1, "text": big}]}),
            )
            .options(options),
            &declare(),
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("plugin \"hungry\""), "{msg}");
    assert!(msg.contains("memory limit"), "{msg}");
    assemble(&reg, Some("agent:1"));
}

#[test]
fn skip_policy_drops_contributions_and_quarantines_after_repeated_failures() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let options = PluginOptions::default()
        .on_error(OnError::Skip)
        .quarantine_after(3);
    let p = rt
        .load(
            &reg,
            &spec(
                "flaky",
                None,
                json!({
                    "sections": [{"name": "ok", "order": 1, "text": "fixed stays"},
                                 {"name": "bad", "order": 2, "text": {"fail": "down"}}],
                    "variables": [{"name": "v", "fail": "down"}],
                    "tools": [{"schemas": [{"name": "t"}], "dynamic": true}]
                }),
            )
            .options(options),
            &declare(),
        )
        .unwrap();
    // Each failed entry is left out as if it were not registered (no section, no
    // variable); the fixed section stays, and so does the working tool provider until the
    // plugin is quarantined (its third consecutive failure, during round 3): then it is no
    // longer called at all.
    for round in 1..=4 {
        let a = assemble(&reg, None);
        assert_eq!(
            a.sections.iter().find(|s| s.name == "ok").unwrap().text,
            "fixed stays"
        );
        assert!(a.sections.iter().all(|s| s.name != "bad"), "round {round}");
        assert_eq!(a.variable("v"), None, "round {round}");
        let tools = if round < 3 { 1 } else { 0 };
        assert_eq!(a.tools.len(), tools, "round {round}");
    }
    let health = p.health();
    assert!(health.quarantined, "{health:?}");
    assert!(health.consecutive_failures >= 3, "{health:?}");
}

#[test]
fn listener_failures_fail_loudly_or_pass_through_under_skip() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let _inner = rt
        .load(
            &reg,
            &spec(
                "inner",
                None,
                json!({"listener": {"key": "inner", "steps": [
            {"push_section": {"name": "inner-ran", "text": "i"}}, {"next": true}]}}),
            ),
            &declare(),
        )
        .unwrap();
    let fail = rt
        .load(
            &reg,
            &spec(
                "outer",
                None,
                json!({"listener": {"key": "outer", "prepend": true, "steps": [
            {"push_section": {"name": "outer-edit", "text": "o"}}, {"fail": "listener broke"}]}}),
            ),
            &declare(),
        )
        .unwrap();
    let err = reg
        .assemble_blocking(None, AssembleContext::default())
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("plugin \"outer\" export \"on-assemble\" (global)"),
        "{msg}"
    );
    assert!(msg.contains("listener broke"), "{msg}");
    drop(fail);

    let options = PluginOptions::default().on_error(OnError::Skip);
    let _skip = rt
        .load(
            &reg,
            &spec(
                "outer2",
                None,
                json!({"listener": {"key": "outer2", "prepend": true, "steps": [
            {"push_section": {"name": "outer-edit", "text": "o"}}, {"fail": "listener broke"}]}}),
            )
            .options(options),
            &declare(),
        )
        .unwrap();
    let a = assemble(&reg, None);
    let names = contributed(&a);
    // The failing listener's own edit is dropped; the inner listener still ran.
    assert_eq!(names, ["inner-ran"]);
}

#[test]
fn an_inner_listener_failure_cannot_be_swallowed_by_an_outer_one() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let _outer = rt
        .load(
            &reg,
            &spec(
                "outer",
                None,
                json!({"listener": {"key": "o", "prepend": true, "steps": [{"next": true}]}}),
            ),
            &declare(),
        )
        .unwrap();
    let _inner = rt
        .load(
            &reg,
            &spec(
                "inner",
                None,
                json!({"listener": {"key": "i", "steps": [{"fail": "inner broke"}]}}),
            ),
            &declare(),
        )
        .unwrap();
    let err = reg
        .assemble_blocking(None, AssembleContext::default())
        .unwrap_err();
    assert_eq!(err.plugin(), Some("inner"), "{err}");
    assert!(err.to_string().contains("inner broke"), "{err}");
}

#[test]
fn a_call_past_its_deadline_is_interrupted_and_reported_as_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path());
    let reg = registry();
    let options = PluginOptions::default().limits(
        Limits::default()
            .init_timeout_ms(2)
            .max_output_bytes(64 << 20),
    );
    // Parsing ~2 MB of config JSON and declaring 20 000 sections takes well over 2 ms.
    let sections: Vec<_> = (0..20_000)
        .map(|i| json!({"name": format!("s{i}"), "order": i, "text": "some text here"}))
        .collect();
    let started = std::time::Instant::now();
    let err = rt
        .load(
            &reg,
            &spec("slow", Some("agent:1"), json!({"sections": sections})).options(options),
            &declare(),
        )
        .unwrap_err();
    let took = started.elapsed();
    let msg = err.to_string();
    assert!(
        msg.contains("plugin \"slow\" export \"init\" (scope agent:1)"),
        "{msg}"
    );
    assert!(msg.contains("deadline of 2 ms exceeded"), "{msg}");
    eprintln!("deadline 2 ms: init interrupted, load returned after {took:?} (config encoding, instantiation and disposal of what was declared included)");
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert!(contributed(&assemble(&reg, Some("agent:1"))).is_empty());
}
