//! Cases 30–31: runtime-context suppression.

use super::*;

#[test]
fn case30_scoped_suppressor() {
    let r = reg();
    let g = r.fiber("g", None);
    g.context(fixed("policy", 1.0, "global policy")).unwrap();
    let s = r.fiber("s", S);
    let id = s.suppress_runtime_context();
    assert_eq!(assemble(&r, S).contexts, vec![]);
    assert!(render_context_snapshot(&assemble(&r, None))
        .unwrap()
        .contains("global policy"));
    s.remove(id);
    assert!(render_context_snapshot(&assemble(&r, S))
        .unwrap()
        .contains("global policy"));
}

#[test]
fn case31_parent_suppressor_applies_to_child() {
    let r = reg();
    r.bind_scope_parent("S", "P").unwrap();
    let g = r.fiber("g", None);
    g.context(fixed("policy", 1.0, "global policy")).unwrap();
    let p = r.fiber("p", Some("P"));
    p.suppress_runtime_context();
    assert_eq!(assemble(&r, S).contexts, vec![]);
    assert_eq!(assemble(&r, Some("P")).contexts, vec![]);
    assert_eq!(names(&assemble(&r, None).contexts), ["policy"]);
}

#[test]
fn suppression_drops_contexts_added_by_listeners_and_skips_providers() {
    let r = reg();
    let calls = counter();
    let c2 = Arc::clone(&calls);
    let g = r.fiber("g", None);
    g.context(dynamic("policy", 1.0, move |_| {
        bump(&c2);
        Ok("p".into())
    }))
    .unwrap();
    g.listener(
        listen(|a, _, next| {
            next.run(a)?;
            a.contexts.push(NamedText::new("late", "late"));
            Ok(())
        }),
        ListenerOptions::default(),
    );
    let s = r.fiber("s", S);
    s.suppress_runtime_context();
    assert_eq!(assemble(&r, S).contexts, vec![]);
    assert_eq!(count(&calls), 0);
    assert_eq!(names(&assemble(&r, None).contexts), ["policy", "late"]);
    assert_eq!(count(&calls), 1);
}
