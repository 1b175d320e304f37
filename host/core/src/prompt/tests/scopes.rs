//! Multi-level scopes: grandparent G > parent P > child S, with a sibling T under P and an
//! unrelated U. Ancestors' layers apply to descendants, never the other way or sideways;
//! listeners extend up the chain.

use std::sync::Mutex;

use super::*;

fn tree() -> Arc<Registry> {
    let r = reg();
    r.bind_scope_parent("P", "G").unwrap();
    r.bind_scope_parent("S", "P").unwrap();
    r.bind_scope_parent("T", "P").unwrap();
    r
}

#[test]
fn chain_and_binding_errors() {
    let r = tree();
    let chain: Vec<String> = r.scope_chain("S").iter().map(|k| k.to_string()).collect();
    assert_eq!(chain, ["S", "P", "G"]);
    assert_eq!(r.scope_chain("X").len(), 1);
    assert_eq!(
        r.bind_scope_parent("S", "G").unwrap_err().to_string(),
        "scope: scope key is already bound to a parent; re-linking requires the binding returned by the original bind"
    );
    assert_eq!(
        r.bind_scope_parent("G", "S").unwrap_err().to_string(),
        "scope: scope parent link would form a cycle"
    );
    assert!(matches!(
        r.bind_scope_parent("X", "X"),
        Err(ScopeError::Cycle { .. })
    ));
    // A refused bind changes nothing.
    assert_eq!(r.scope_chain("G").len(), 1);
}

#[test]
fn parent_layers_apply_down_only() {
    let r = tree();
    let p = r.fiber("p", Some("P"));
    p.section(fixed("p:section", 1.0, "from P")).unwrap();
    p.variable("who", value("P")).unwrap();
    p.tools(static_tools(&["p_tool"]));
    p.context(fixed("p:ctx", 1.0, "P ctx")).unwrap();
    let g = r.fiber("g", Some("G"));
    g.variable("who", value("G")).unwrap();
    g.section(fixed("p:section", 1.0, "from G")).unwrap();
    let s = r.fiber("s", S);
    s.section(fixed("s:section", 2.0, "from S")).unwrap();

    let a = assemble(&r, S);
    assert_eq!(
        contributed(&a),
        pairs(&[("p:section", "from P"), ("s:section", "from S")])
    );
    assert_eq!(a.variable("who"), Some(Some("P")));
    assert_eq!(tool_names(&a), ["p_tool"]);
    assert_eq!(names(&a.contexts), ["p:ctx"]);

    let a = assemble(&r, Some("T"));
    assert_eq!(contributed(&a), pairs(&[("p:section", "from P")]));

    let a = assemble(&r, Some("G"));
    assert_eq!(contributed(&a), pairs(&[("p:section", "from G")]));
    assert_eq!(a.variable("who"), Some(Some("G")));
    assert_eq!(a.tools, vec![]);
    assert_eq!(a.contexts, vec![]);

    let a = assemble(&r, Some("U"));
    assert_eq!(contributed(&a), vec![]);
    assert_eq!(a.variables, vec![]);
}

#[test]
fn suppressors_apply_down_only() {
    let r = tree();
    let glob = r.fiber("glob", None);
    glob.context(fixed("c", 1.0, "c")).unwrap();
    let p = r.fiber("p", Some("P"));
    p.suppress_runtime_context();
    assert_eq!(assemble(&r, S).contexts, vec![]);
    assert_eq!(assemble(&r, Some("T")).contexts, vec![]);
    assert_eq!(names(&assemble(&r, Some("G")).contexts), ["c"]);
    assert_eq!(names(&assemble(&r, None).contexts), ["c"]);
}

#[test]
fn listener_tagged_with_ancestor_sees_descendants() {
    let r = tree();
    let hits: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let hits2 = Arc::clone(&hits);
    let g = r.fiber("g", Some("G"));
    g.listener(
        listen(move |a, ctx, next| {
            hits2.lock().unwrap().push(ctx.scope().map(str::to_string));
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    let s_only = counter();
    let s2 = Arc::clone(&s_only);
    let s = r.fiber("s", S);
    s.listener(
        listen(move |a, _, next| {
            bump(&s2);
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    for scope in [S, Some("T"), Some("P"), Some("G"), Some("U"), None] {
        assemble(&r, scope);
    }
    let seen = hits.lock().unwrap().clone();
    let expected: Vec<Option<String>> = ["S", "T", "P", "G"]
        .iter()
        .map(|s| Some(s.to_string()))
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(
        count(&s_only),
        1,
        "a child's listener never sees its parent or sibling"
    );
}

#[test]
fn assembly_context_carries_the_chain() {
    let r = tree();
    let chain: Arc<Mutex<Vec<String>>> = Arc::default();
    let chain2 = Arc::clone(&chain);
    let f = r.fiber("p", None);
    f.section(dynamic("probe", 1.0, move |ctx| {
        *chain2.lock().unwrap() = ctx.scope_chain.iter().map(|k| k.to_string()).collect();
        Ok(String::new())
    }))
    .unwrap();
    assemble(&r, S);
    assert_eq!(*chain.lock().unwrap(), ["S", "P", "G"]);
    assemble(&r, None);
    assert!(chain.lock().unwrap().is_empty());
}

#[test]
fn reads_never_create_layers() {
    let r = tree();
    assemble(&r, S);
    assemble(&r, Some("never"));
    assert!(r.snapshot().scoped.is_empty());
}

#[test]
fn scoped_only_names_merge_after_globals_in_chain_order() {
    // Global a, shared + scoped shared, c → a, shared(scoped), c; then the same with a
    // parent layer in between.
    let r = tree();
    let g = r.fiber("g", None);
    g.section(fixed("a", 0.5, "a")).unwrap();
    g.section(fixed("shared", 0.5, "global")).unwrap();
    let p = r.fiber("p", Some("P"));
    p.section(fixed("p_only", 0.5, "p")).unwrap();
    let s = r.fiber("s", S);
    s.section(fixed("shared", 0.5, "scoped")).unwrap();
    s.section(fixed("c", 0.5, "c")).unwrap();
    assert_eq!(
        contributed(&assemble(&r, S)),
        pairs(&[
            ("a", "a"),
            ("shared", "scoped"),
            ("p_only", "p"),
            ("c", "c")
        ])
    );
}
