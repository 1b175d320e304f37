//! Entries whose provider answers "skipped" (a plugin under `on_error = "skip"` that failed
//! or is quarantined) assemble as if they were not registered for that assembly.

use super::*;

fn skipped<T>() -> impl Fn(&AssembleContext) -> Result<T, ProviderError> {
    |_| Err(ProviderError::new(ProviderErrorKind::Skipped, "left out"))
}

#[test]
fn a_skipped_section_is_left_out_and_the_rest_renders() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("a", 1.0, "A")).unwrap();
    f.section(dynamic("b", 2.0, skipped())).unwrap();
    f.section(fixed("c", 3.0, "C")).unwrap();
    let a = assemble(&r, None);
    assert_eq!(contributed(&a), pairs(&[("a", "A"), ("c", "C")]));
}

#[test]
fn a_skipped_complete_section_does_not_empty_the_prompt() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("a", 1.0, "A")).unwrap();
    f.section(dynamic("whole", 2.0, skipped()).complete())
        .unwrap();
    let a = assemble(&r, None);
    assert_eq!(
        names(&a.sections),
        vec![IDENTITY_SECTION, PERSONA_SECTION, "a"]
    );
    assert_eq!(render_prompt(&a).unwrap(), format!("{ID}\n\nA"));
}

#[test]
fn a_skipped_scoped_shadow_lets_the_global_entry_through() {
    let r = reg();
    let g = r.fiber("global-plugin", None);
    g.section(fixed("shared", 5.0, "global text")).unwrap();
    g.variable("who", value("global value")).unwrap();
    let s = r.fiber("scoped-plugin", S);
    s.section(dynamic("shared", 1.0, skipped())).unwrap();
    s.variable("who", var(skipped())).unwrap();
    let a = assemble(&r, S);
    assert_eq!(contributed(&a), pairs(&[("shared", "global text")]));
    assert!(a
        .variables
        .contains(&("who".to_string(), Some("global value".to_string()))));
}

#[test]
fn a_skipped_variable_alone_is_unregistered() {
    let r = reg();
    let f = r.fiber("p", None);
    f.variable("v", var(skipped())).unwrap();
    let a = assemble(&r, None);
    assert!(!a.variables.iter().any(|(k, _)| k == "v"));
}

#[test]
fn a_skipped_shadow_of_a_complete_section_makes_it_effective() {
    // Global "x" is complete; a scoped "x" shadows it. When the scoped one is skipped, the
    // global complete section is effective again, as if the shadow were not registered.
    let r = reg();
    let g = r.fiber("g", None);
    g.section(fixed("x", 1.0, "ONLY").complete()).unwrap();
    g.section(fixed("y", 2.0, "Y")).unwrap();
    let s = r.fiber("s", S);
    s.section(dynamic("x", 1.0, skipped())).unwrap();
    let a = assemble(&r, S);
    assert_eq!(contributed(&a), pairs(&[("x", "ONLY")]));
}

#[test]
fn texts_resolved_before_a_skip_are_not_asked_for_again() {
    let r = reg();
    let calls = counter();
    let c2 = Arc::clone(&calls);
    let f = r.fiber("p", None);
    f.section(dynamic("first", 1.0, move |_| {
        bump(&c2);
        Ok("F".into())
    }))
    .unwrap();
    f.section(dynamic("second", 2.0, skipped())).unwrap();
    let a = assemble(&r, None);
    assert_eq!(contributed(&a), pairs(&[("first", "F")]));
    assert_eq!(count(&calls), 1);
}

#[test]
fn skipped_contexts_and_tools_contribute_nothing() {
    let r = reg();
    let f = r.fiber("p", None);
    f.context(SectionDef::new("ctx", 1.0, TextSource::dynamic(skipped())))
        .unwrap();
    f.context(fixed("kept", 2.0, "K")).unwrap();
    f.tools(dyn_tools(skipped()));
    f.tools(static_tools(&["bash"]));
    let a = assemble(&r, None);
    assert_eq!(names(&a.contexts), vec!["kept"]);
    assert_eq!(tool_names(&a), vec!["bash"]);
}
