//! Cases 26–29: complete sections.

use super::*;

#[test]
fn case26_complete_overrides_listener_changes() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("complete", 10.0, "Exact prompt.").complete())
        .unwrap();
    f.section(fixed("extra", 20.0, "extra")).unwrap();
    f.listener(
        listen(|a, _, next| {
            for s in a.sections.iter_mut().filter(|s| s.name == "complete") {
                s.text = "mutated".into();
            }
            a.sections.push(NamedText::new("late", "late"));
            next.run(a)
        }),
        ListenerOptions {
            prepend: true,
            global: false,
        },
    );
    let a = assemble(&r, None);
    assert_eq!(
        a.sections,
        vec![NamedText::new("complete", "Exact prompt.")]
    );
    assert_eq!(render_prompt(&a).unwrap(), "Exact prompt.");
}

#[test]
fn case27_two_complete_sections() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("second", 20.0, "2").complete()).unwrap();
    f.section(fixed("first", 10.0, "1").complete()).unwrap();
    assert_eq!(
        assemble_err(&r, None).to_string(),
        "multiple complete prompt sections are active: \"first\", \"second\""
    );
}

#[test]
fn case28_shadowed_complete_is_not_effective() {
    let r = reg();
    let g = r.fiber("g", None);
    g.section(fixed("g", 10.0, "global complete").complete())
        .unwrap();
    g.section(fixed("other", 20.0, "other").complete()).unwrap();
    let s = r.fiber("s", S);
    s.section(fixed("g", 10.0, "scoped plain")).unwrap();
    s.section(fixed("other", 20.0, "scoped plain 2")).unwrap();
    let a = assemble(&r, S);
    assert_eq!(
        names(&a.sections),
        [IDENTITY_SECTION, PERSONA_SECTION, "g", "other"]
    );
    // Unscoped: two global complete sections are active.
    assert!(matches!(
        assemble_err(&r, None),
        AssembleError::MultipleComplete { .. }
    ));
    // With one global complete only, the unscoped assembly is just that section.
    let r = reg();
    let g = r.fiber("g", None);
    g.section(fixed("g", 10.0, "global complete").complete())
        .unwrap();
    let s = r.fiber("s", S);
    s.section(fixed("g", 10.0, "scoped plain")).unwrap();
    assert_eq!(
        names(&assemble(&r, S).sections),
        [IDENTITY_SECTION, PERSONA_SECTION, "g"]
    );
    assert_eq!(
        assemble(&r, None).sections,
        vec![NamedText::new("g", "global complete")]
    );
}

#[test]
fn case29_complete_keeps_listener_tools() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("complete", 10.0, "Exact.").complete())
        .unwrap();
    f.listener(
        listen(|a, _, next| {
            next.run(a)?;
            a.tools.push(tool("t", "late"));
            Ok(())
        }),
        ListenerOptions::default(),
    );
    let a = assemble(&r, None);
    assert_eq!(tool_names(&a), ["t"]);
    assert_eq!(names(&a.sections), ["complete"]);
}

#[test]
fn empty_complete_section_renders_empty() {
    let r = reg_with(|c| c.persona = "P".into());
    let f = r.fiber("p", None);
    f.section(fixed("blank", 10.0, "").complete()).unwrap();
    let a = assemble(&r, None);
    assert_eq!(a.sections, vec![NamedText::new("blank", "")]);
    assert_eq!(render_prompt(&a).unwrap(), "");
}

#[test]
fn scoped_complete_applies_on_its_chain_only() {
    let r = reg();
    r.bind_scope_parent("S", "P").unwrap();
    let p = r.fiber("p", Some("P"));
    p.section(fixed("only", 1.0, "Only this.").complete())
        .unwrap();
    assert_eq!(names(&assemble(&r, Some("S")).sections), ["only"]);
    assert_eq!(names(&assemble(&r, Some("P")).sections), ["only"]);
    assert_eq!(
        names(&assemble(&r, None).sections),
        [IDENTITY_SECTION, PERSONA_SECTION]
    );
    assert_eq!(
        names(&assemble(&r, Some("sibling")).sections),
        [IDENTITY_SECTION, PERSONA_SECTION]
    );
}

#[test]
fn contexts_ignore_the_complete_flag() {
    let r = reg();
    let f = r.fiber("p", None);
    f.context(fixed("c", 1.0, "ctx").complete()).unwrap();
    let a = assemble(&r, None);
    assert_eq!(names(&a.sections), [IDENTITY_SECTION, PERSONA_SECTION]);
    assert_eq!(names(&a.contexts), ["c"]);
}
