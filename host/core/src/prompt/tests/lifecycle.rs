//! Cases 48–51: scope and fiber lifecycle.

use super::*;

#[test]
fn case48_scoped_persona() {
    let r = reg_with(|c| c.persona = "You are the deployment.".into());
    let s = r.fiber("s", S);
    s.section(fixed(PERSONA_SECTION, 0.0, "You run tests."))
        .unwrap();
    let scoped = render_prompt(&assemble(&r, S)).unwrap();
    assert!(scoped.contains("You run tests.") && !scoped.contains("You are the deployment."));
    let global = render_prompt(&assemble(&r, None)).unwrap();
    assert!(!global.contains("You run tests.") && global.contains("You are the deployment."));
}

#[test]
fn case49_dispose_scope() {
    let r = reg();
    let events = observe(&r);
    let s = r.fiber("s", S);
    s.section(fixed("child:extra", 50.0, "extra")).unwrap();
    s.variable("v", value("x")).unwrap();
    s.listener(listen(|a, _, next| next.run(a)), ListenerOptions::default());
    assert_eq!(
        contributed(&assemble(&r, S)),
        pairs(&[("child:extra", "extra")])
    );
    assert_eq!(contributed(&assemble(&r, None)), vec![]);
    r.dispose_scope("S");
    assert_eq!(count(&events), 6, "three registrations, three removals");
    assert_eq!(render_prompt(&assemble(&r, S)).unwrap(), ID);
    assert!(r.snapshot().scoped.is_empty());
    assert!(r.snapshot().listeners.is_empty());
    r.dispose_scope("S");
    assert_eq!(count(&events), 6, "idempotent");
    // The fiber stays usable and creates a fresh layer.
    s.section(fixed("child:extra", 50.0, "again")).unwrap();
    assert_eq!(
        contributed(&assemble(&r, S)),
        pairs(&[("child:extra", "again")])
    );
}

#[test]
fn case50_disposed_tool_provider_then_again() {
    let r = reg();
    let s = r.fiber("s", S);
    let id = s.tools(static_tools(&["first"]));
    s.remove(id);
    assert_eq!(tool_names(&assemble(&r, S)), Vec::<&str>::new());
    assert!(r.snapshot().scoped.is_empty(), "empty layer deleted");
    s.tools(static_tools(&["again"]));
    assert_eq!(tool_names(&assemble(&r, S)), ["again"]);
}

#[test]
fn case51_fiber_disposal_removes_exactly_its_entries() {
    let r = reg();
    let other = r.fiber("other", None);
    other.section(fixed("keep", 1.0, "keep")).unwrap();
    let f = r.fiber("p", None);
    f.section(fixed("s", 1.0, "s")).unwrap();
    f.context(fixed("c", 1.0, "c")).unwrap();
    f.tools(static_tools(&["t"]));
    f.variable("v", value("x")).unwrap();
    f.dispose();
    let a = assemble(&r, None);
    assert_eq!(contributed(&a), pairs(&[("keep", "keep")]));
    assert_eq!(a.contexts, vec![]);
    assert_eq!(a.tools, vec![]);
    assert_eq!(a.variables, vec![]);
    assert_eq!(names(&a.sections)[..2], [IDENTITY_SECTION, PERSONA_SECTION]);
    drop(other);
    assert_eq!(contributed(&assemble(&r, None)), vec![]);
}

#[test]
fn remove_ignores_other_fibers_entries() {
    let r = reg();
    let a = r.fiber("a", None);
    let b = r.fiber("b", None);
    let id = a.section(fixed("x", 1.0, "x")).unwrap();
    b.remove(id);
    assert_eq!(contributed(&assemble(&r, None)), pairs(&[("x", "x")]));
    a.remove(id);
    assert_eq!(contributed(&assemble(&r, None)), vec![]);
}

#[test]
fn dispose_scope_leaves_other_scopes_and_global() {
    let r = reg();
    let g = r.fiber("g", None);
    g.section(fixed("g", 1.0, "g")).unwrap();
    let s = r.fiber("s", S);
    s.section(fixed("s", 1.0, "s")).unwrap();
    let t = r.fiber("t", Some("T"));
    t.section(fixed("t", 1.0, "t")).unwrap();
    r.dispose_scope("S");
    assert_eq!(contributed(&assemble(&r, S)), pairs(&[("g", "g")]));
    assert_eq!(
        contributed(&assemble(&r, Some("T"))),
        pairs(&[("g", "g"), ("t", "t")])
    );
}

#[test]
fn entries_describe_registrations() {
    let r = reg();
    let s = r.fiber("plugin-a", S);
    s.section(fixed("x", 3.5, "hello").complete()).unwrap();
    s.tools(static_tools(&["t"]));
    let entries = r.entries();
    let x = entries
        .iter()
        .find(|e| e.name.as_deref() == Some("x"))
        .unwrap();
    assert_eq!(x.owner, "plugin-a");
    assert_eq!(x.scope.as_deref(), Some("S"));
    assert_eq!(x.order, Some(3.5));
    assert!(x.complete && !x.dynamic);
    assert_eq!(x.static_len, Some(5));
    assert_eq!(x.fiber, s.id());
    assert!(entries.iter().any(|e| e.kind == EntryKind::ToolProvider));
}
