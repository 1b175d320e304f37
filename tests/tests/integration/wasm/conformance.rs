//! A subset of the core's conformance cases (`host/src/prompt/tests.rs`), with every entry
//! registered by a Wasm plugin (the `declare` guest) instead of a native closure.

use serde_json::{json, Value};

use crate::integration::support::wasm::*;
use prompt_host::prompt::{
    render_context_snapshot, AssembleContext, PromptConfig, Registry, CONTEXT_SNAPSHOT_PREFIX,
    DEFAULT_IDENTITY,
};
use prompt_host::wasm::{LoadedPlugin, WasmError, WasmRuntime};

struct World {
    rt: WasmRuntime,
    reg: std::sync::Arc<Registry>,
    _dir: tempfile::TempDir,
    n: usize,
}

impl World {
    fn new(config: PromptConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            rt: runtime(dir.path()),
            reg: registry_with(config),
            _dir: dir,
            n: 0,
        }
    }

    fn load(&mut self, scope: Option<&str>, config: Value) -> Result<LoadedPlugin, WasmError> {
        self.n += 1;
        self.rt.load(
            &self.reg,
            &spec(&format!("p{}", self.n), scope, config),
            &declare(),
        )
    }

    fn texts(&self, scope: Option<&str>) -> Vec<(String, String)> {
        let a = assemble(&self.reg, scope);
        a.sections
            .into_iter()
            .filter(|s| s.name != "harness:identity" && s.name != "deployment:persona")
            .map(|s| (s.name, s.text))
            .collect()
    }
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn case_08_duplicate_section_keeps_the_first() {
    let mut w = World::new(PromptConfig::default());
    let _a = w
        .load(
            None,
            json!({"sections": [{"name": "dup", "order": 0, "text": "first"}]}),
        )
        .unwrap();
    let err = w
        .load(
            None,
            json!({"sections": [{"name": "dup", "order": 1, "text": "second"}]}),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("prompt section \"dup\" is already registered"),
        "{err}"
    );
    assert_eq!(w.texts(None), pairs(&[("dup", "first")]));
}

#[test]
fn cases_09_to_11_invalid_registrations() {
    let mut w = World::new(PromptConfig::default());
    for (config, text) in [
        (
            json!({"sections": [{"name": "bad-order", "order": "NaN", "text": "x"}]}),
            "prompt section \"bad-order\" order must be a finite number",
        ),
        (
            json!({"sections": [{"name": "bad-order", "order": "inf", "text": "x"}]}),
            "prompt section \"bad-order\" order must be a finite number",
        ),
        (
            json!({"contexts": [{"name": "bad", "order": "NaN", "text": "x"}]}),
            "prompt context \"bad\" order must be a finite number",
        ),
        (
            json!({"variables": [{"name": "Not Valid", "value": "x"}]}),
            "invalid prompt variable name \"Not Valid\" (must match /^[a-z][a-z0-9_]*$/)",
        ),
    ] {
        let err = w.load(None, config).unwrap_err();
        assert!(err.to_string().contains(text), "{err}");
    }
    let _p = w.load(None, json!({"contexts": [{"name": "policy", "order": 1, "text": "first"}], "variables": [{"name": "model", "value": "m1"}]})).unwrap();
    let err = w
        .load(
            None,
            json!({"contexts": [{"name": "policy", "order": 1, "text": "second"}]}),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("prompt context \"policy\" is already registered"),
        "{err}"
    );
    let err = w
        .load(
            None,
            json!({"variables": [{"name": "model", "value": "m2"}]}),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("prompt variable \"model\" is already registered"),
        "{err}"
    );
    let a = assemble(&w.reg, None);
    assert_eq!(a.contexts.len(), 1);
    assert_eq!(a.contexts[0].text, "first");
    assert_eq!(
        a.variables,
        vec![("model".to_string(), Some("m1".to_string()))]
    );
    assert!(w.texts(None).is_empty());
}

#[test]
fn case_12_scoped_duplicates_use_the_scoped_wording() {
    let mut w = World::new(PromptConfig::default());
    let _a = w.load(Some("S"), json!({"sections": [{"name": "y", "order": 1, "text": "a"}], "contexts": [{"name": "policy", "order": 1, "text": "a"}], "variables": [{"name": "v", "value": "a"}]})).unwrap();
    for (config, text) in [
        (
            json!({"sections": [{"name": "y", "order": 1, "text": "b"}]}),
            "prompt section \"y\" is already registered in this scope",
        ),
        (
            json!({"contexts": [{"name": "policy", "order": 1, "text": "b"}]}),
            "prompt context \"policy\" is already registered in this scope",
        ),
        (
            json!({"variables": [{"name": "v", "value": "b"}]}),
            "prompt variable \"v\" is already registered in this scope",
        ),
    ] {
        let err = w.load(Some("S"), config).unwrap_err();
        assert!(err.to_string().contains(text), "{err}");
    }
    let err = w
        .load(
            None,
            json!({"sections": [{"name": "deployment:persona", "order": 0, "text": "imposter"}]}),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("register it in that agent's scope instead"),
        "{err}"
    );
}

#[test]
fn case_15_ordering_and_render() {
    let mut w = World::new(PromptConfig::default().persona("You are DeepSeek Harness."));
    let _p = w
        .load(
            None,
            json!({"sections": [
        {"name": "cwd", "order": 20, "text": {"dynamic": "cwd: /tmp"}},
        {"name": "rules", "order": 10, "text": "Be precise."}]}),
        )
        .unwrap();
    assert_eq!(
        render(&w.reg, None),
        format!("{DEFAULT_IDENTITY}\n\nYou are DeepSeek Harness.\n\nBe precise.\n\ncwd: /tmp")
    );
}

#[test]
fn case_16_context_snapshot_order() {
    let mut w = World::new(PromptConfig::default());
    let _p = w
        .load(
            None,
            json!({"contexts": [
        {"name": "later", "order": 20, "text": "context 2"},
        {"name": "earlier", "order": 10, "text": {"dynamic": "context 1"}}]}),
        )
        .unwrap();
    let a = assemble(&w.reg, None);
    assert_eq!(
        render_context_snapshot(&a).unwrap(),
        format!("{CONTEXT_SNAPSHOT_PREFIX}\n\ncontext 1\n\ncontext 2")
    );
}

#[test]
fn cases_17_18_ties_keep_registration_order_and_shadows_keep_their_slot() {
    let mut w = World::new(PromptConfig::default());
    let _g = w.load(None, json!({"sections": [{"name": "b", "order": 5, "text": "B"}, {"name": "a", "order": 5, "text": "A"}]})).unwrap();
    assert_eq!(w.texts(None), pairs(&[("b", "B"), ("a", "A")]));
    let mut w = World::new(PromptConfig::default());
    let _g = w.load(None, json!({"sections": [{"name": "x", "order": 5, "text": "gx"}, {"name": "y", "order": 5, "text": "gy"}]})).unwrap();
    let _s = w
        .load(
            Some("S"),
            json!({"sections": [{"name": "x", "order": 5, "text": "sx"}]}),
        )
        .unwrap();
    assert_eq!(w.texts(Some("S")), pairs(&[("x", "sx"), ("y", "gy")]));
}

#[test]
fn case_20_dynamic_text_sees_each_assembly() {
    let mut w = World::new(PromptConfig::default());
    let _p = w.load(None, json!({"sections": [{"name": "s", "order": 1, "text": {"dynamic": "call ${call} for ${fact:who}"}}]})).unwrap();
    let a = w
        .reg
        .assemble_blocking(None, AssembleContext::with_facts([("who", "alice")]))
        .unwrap();
    assert_eq!(a.sections.last().unwrap().text, "call 1 for alice");
    let a = assemble(&w.reg, None);
    assert_eq!(a.sections.last().unwrap().text, "call 2 for ");
}

#[test]
fn case_23_a_variable_without_a_value_fails_rendering() {
    let mut w = World::new(PromptConfig::default());
    let _p = w.load(None, json!({"variables": [{"name": "who", "dynamic": "${fact:who}"}, {"name": "none", "dynamic": null}],
        "sections": [{"name": "s", "order": 1, "text": "{{none}}"}]})).unwrap();
    let a = assemble(&w.reg, None);
    assert_eq!(a.variable("none"), Some(None));
    let err = prompt_host::prompt::render_prompt(&a).unwrap_err();
    assert!(
        err.to_string().contains("has no value for this assembly"),
        "{err}"
    );
}

#[test]
fn cases_27_multiple_complete_sections_are_rejected() {
    let mut w = World::new(PromptConfig::default());
    let _p = w.load(None, json!({"sections": [{"name": "first", "order": 10, "text": "1", "complete": true}, {"name": "second", "order": 20, "text": "2", "complete": true}]})).unwrap();
    let err = w
        .reg
        .assemble_blocking(None, AssembleContext::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "multiple complete prompt sections are active: \"first\", \"second\""
    );
}

#[test]
fn cases_30_31_suppression_by_scope_and_parent() {
    let mut w = World::new(PromptConfig::default());
    w.reg.bind_scope_parent("S", "P").unwrap();
    let _g = w
        .load(
            None,
            json!({"contexts": [{"name": "policy", "order": 1, "text": "global policy"}]}),
        )
        .unwrap();
    let sup = w
        .load(Some("P"), json!({"suppress_runtime_context": true}))
        .unwrap();
    assert!(assemble(&w.reg, Some("S")).contexts.is_empty());
    assert!(assemble(&w.reg, Some("P")).contexts.is_empty());
    assert_eq!(assemble(&w.reg, None).contexts[0].text, "global policy");
    drop(sup);
    assert_eq!(
        assemble(&w.reg, Some("S")).contexts[0].text,
        "global policy"
    );
}

#[test]
fn cases_32_36_tool_order_and_reserved_names() {
    let mut w = World::new(PromptConfig::default());
    let _a = w.load(None, json!({"tools": [{"schemas": [{"name": "charlie"}, {"name": "alpha"}], "dynamic": true}]})).unwrap();
    let _b = w
        .load(None, json!({"tools": [{"schemas": [{"name": "bravo"}]}]}))
        .unwrap();
    let names: Vec<_> = assemble(&w.reg, None)
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["alpha", "bravo", "charlie"]);

    let mut w = World::new(PromptConfig::default().tool_order(vec![
        "todo_write".into(),
        "<unlisted-tools>".into(),
        "bash".into(),
    ]));
    let _a = w.load(None, json!({"tools": [{"schemas": [{"name": "bash"}, {"name": "echo_b"}, {"name": "todo_write"}, {"name": "echo_a"}]}]})).unwrap();
    let names: Vec<_> = assemble(&w.reg, None)
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["todo_write", "echo_a", "echo_b", "bash"]);

    let mut w = World::new(PromptConfig::default());
    let _a = w
        .load(
            None,
            json!({"tools": [{"schemas": [{"name": "<unlisted-tools>"}], "dynamic": true}]}),
        )
        .unwrap();
    let err = w
        .reg
        .assemble_blocking(None, AssembleContext::default())
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("tool provider returned reserved tool name \"<unlisted-tools>\""),
        "{err}"
    );
}

#[test]
fn case_37_known_names_validate_tool_order() {
    let mut w = World::new(
        PromptConfig::default().tool_order(vec!["basj".into(), "<unlisted-tools>".into()]),
    );
    let _a = w.load(None, json!({"tools": [{"schemas": [{"name": "read"}], "known_names": ["read", "bash"], "dynamic": true}]})).unwrap();
    let err = w
        .reg
        .assemble_blocking(None, AssembleContext::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "toolOrder lists unregistered tool \"basj\"; known tools: bash, read"
    );
}

#[test]
fn cases_43_45_47_waterfall() {
    let mut w = World::new(PromptConfig::default());
    let _base = w
        .load(
            None,
            json!({"sections": [{"name": "base", "order": 1, "text": "{{extra}}"}]}),
        )
        .unwrap();
    let _a = w.load(None, json!({"listener": {"key": "a", "steps": [{"push_section": {"name": "from-a", "text": "A"}}, {"set_variable": {"name": "extra", "value": "from-waterfall"}}, {"next": true}]}})).unwrap();
    let _s = w.load(Some("S"), json!({"listener": {"key": "s", "steps": [{"next": true}, {"push_section": {"name": "listener:extra", "text": "E"}}]}})).unwrap();
    let names: Vec<_> = w.texts(Some("S")).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["base", "from-a", "listener:extra"]);
    let names: Vec<_> = w.texts(None).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["base", "from-a"]);
    assert!(render(&w.reg, None).starts_with(&format!("{DEFAULT_IDENTITY}\n\nfrom-waterfall")));
}

#[test]
fn case_44_an_empty_short_circuit() {
    let mut w = World::new(PromptConfig::default());
    let _a = w
        .load(
            None,
            json!({"listener": {"key": "a", "steps": [{"clear": true}]}}),
        )
        .unwrap();
    assert!(assemble(&w.reg, None).sections.is_empty());
}

#[test]
fn cases_49_51_disposal_removes_everything_and_keeps_builtins() {
    let mut w = World::new(PromptConfig::default());
    let p = w
        .load(
            Some("S"),
            json!({
        "sections": [{"name": "child:extra", "order": 50, "text": "x"}],
        "contexts": [{"name": "c", "order": 1, "text": "c"}],
        "variables": [{"name": "v", "value": "x"}],
        "tools": [{"schemas": [{"name": "t"}]}]}),
        )
        .unwrap();
    assert_eq!(w.texts(Some("S")).len(), 1);
    assert!(w.texts(None).is_empty());
    w.reg.dispose_scope("S");
    let a = assemble(&w.reg, Some("S"));
    assert!(a.contexts.is_empty() && a.tools.is_empty() && a.variables.is_empty());
    assert_eq!(a.sections.len(), 2);
    drop(p);
    let a = assemble(&w.reg, Some("S"));
    assert_eq!(a.sections.len(), 2);
}
