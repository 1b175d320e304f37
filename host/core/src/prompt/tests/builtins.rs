//! Cases 1–7: built-ins and configuration.

use super::*;

#[test]
fn case01_default_config() {
    let r = reg();
    let a = assemble(&r, None);
    assert_eq!(names(&a.sections), [IDENTITY_SECTION, PERSONA_SECTION]);
    assert_eq!(render_prompt(&a).unwrap(), ID);
}

#[test]
fn case02_persona() {
    let r = reg_with(|c| c.persona = "You are DeepSeek Harness.".into());
    let a = assemble(&r, None);
    assert_eq!(
        render_prompt(&a).unwrap(),
        format!("{ID}\n\nYou are DeepSeek Harness.")
    );
}

#[test]
fn case03_no_identity() {
    let r = reg_with(|c| {
        c.include_harness_identity = false;
        c.persona = "P1".into();
    });
    let a = assemble(&r, None);
    assert_eq!(names(&a.sections), [PERSONA_SECTION]);
    assert_eq!(render_prompt(&a).unwrap(), "P1");
}

#[test]
fn identity_override_is_used_as_id() {
    let r = reg_with(|c| c.identity = Some("You are a test agent.".into()));
    let a = assemble(&r, None);
    assert_eq!(render_prompt(&a).unwrap(), "You are a test agent.");
    assert_eq!(a.sections[0].name, IDENTITY_SECTION);
}

#[test]
fn case04_persona_name_taken_globally_only() {
    let r = reg();
    let global = r.fiber("imposter", None);
    let e = global
        .section(fixed(PERSONA_SECTION, 0.0, "imposter"))
        .unwrap_err();
    assert!(e
        .to_string()
        .contains("prompt section \"deployment:persona\" is already registered"));
    let e = global
        .section(fixed(IDENTITY_SECTION, 0.0, "imposter"))
        .unwrap_err();
    assert!(matches!(e, RegisterError::Duplicate { scoped: false, .. }));
    // A scoped shadow is allowed (duplicates are per layer).
    let scoped = r.fiber("scoped", S);
    scoped.section(fixed(PERSONA_SECTION, 0.0, "mine")).unwrap();
}

#[test]
fn case05_runtime_context_off() {
    let r = reg_with(|c| c.include_runtime_context = false);
    let calls = counter();
    let c2 = Arc::clone(&calls);
    let f = r.fiber("p", None);
    f.context(dynamic("policy", 0.0, move |_| {
        bump(&c2);
        Ok("policy".into())
    }))
    .unwrap();
    f.listener(
        listen(|a, _, next| {
            a.contexts.push(NamedText::new("late", "late context"));
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    let a = assemble(&r, None);
    assert_eq!(a.contexts, vec![]);
    assert_eq!(count(&calls), 0);
    // Nobody can remove the built-in suppressor.
    r.dispose_scope("global");
    f.dispose();
    assert!(r
        .entries()
        .iter()
        .any(|e| e.kind == EntryKind::Suppressor && e.owner == BUILT_IN_OWNER));
}

#[test]
fn case06_missing_rest_entry() {
    let text = "toolOrder must contain the \"<unlisted-tools>\" rest entry (where unlisted tools are inserted)";
    for order in [vec![], vec!["bash".to_string(), "todo_write".to_string()]] {
        let e = Registry::new(PromptConfig::default().tool_order(order))
            .err()
            .unwrap();
        assert_eq!(e.to_string(), text);
    }
}

#[test]
fn case07_duplicate_entries() {
    let make = |v: &[&str]| {
        Registry::new(PromptConfig::default().tool_order(v.iter().map(|s| s.to_string()).collect()))
            .err()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        make(&["bash", "bash", TOOL_ORDER_REST]),
        "toolOrder lists \"bash\" more than once"
    );
    assert_eq!(
        make(&[TOOL_ORDER_REST, "bash", TOOL_ORDER_REST]),
        "toolOrder lists \"<unlisted-tools>\" more than once"
    );
}

#[test]
fn built_ins_belong_to_prompt_host_and_survive_disposal() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("x", 1.0, "x")).unwrap();
    f.dispose();
    let owners: Vec<_> = r.entries().into_iter().map(|e| e.owner).collect();
    assert_eq!(owners, [BUILT_IN_OWNER, BUILT_IN_OWNER]);
    assert_eq!(
        names(&assemble(&r, None).sections),
        [IDENTITY_SECTION, PERSONA_SECTION]
    );
}
