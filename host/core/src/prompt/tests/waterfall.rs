//! Cases 43–47 and the waterfall's error and invariant handling.

use std::sync::Mutex;

use super::*;

fn record(log: &Arc<Mutex<Vec<String>>>, s: impl Into<String>) {
    log.lock().unwrap().push(s.into());
}

#[test]
fn case43_inner_listener_sees_outer_changes_and_the_same_context() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("base", 1.0, "base")).unwrap();
    let ctx_ptrs: Arc<Mutex<Vec<usize>>> = Arc::default();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (p1, p2, p3) = (
        Arc::clone(&ctx_ptrs),
        Arc::clone(&ctx_ptrs),
        Arc::clone(&ctx_ptrs),
    );
    f.section(dynamic("probe", 2.0, move |ctx| {
        p3.lock().unwrap().push(ctx as *const _ as usize);
        Ok(String::new())
    }))
    .unwrap();
    f.listener(
        listen(move |a, ctx, next| {
            p1.lock().unwrap().push(ctx as *const _ as usize);
            assert_eq!(ctx.fact("who"), Some("caller"));
            a.sections.push(NamedText::new("from-a", "A"));
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    let seen2 = Arc::clone(&seen);
    f.listener(
        listen(move |a, ctx, next| {
            p2.lock().unwrap().push(ctx as *const _ as usize);
            *seen2.lock().unwrap() = a.sections.iter().map(|s| s.name.clone()).collect();
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    r.assemble_blocking(None, AssembleContext::with_facts([("who", "caller")]))
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [IDENTITY_SECTION, PERSONA_SECTION, "base", "probe", "from-a"]
    );
    let ptrs = ctx_ptrs.lock().unwrap();
    assert_eq!(ptrs.len(), 3);
    assert!(ptrs.iter().all(|p| *p == ptrs[0]), "one context object");
}

#[test]
fn case44_short_circuit_with_empty_assembly() {
    let r = reg();
    let f = r.fiber("p", None);
    let inner = counter();
    let inner2 = Arc::clone(&inner);
    f.listener(
        listen(|a, _, _next| {
            *a = Assembly::default();
            Ok(())
        }),
        ListenerOptions::default(),
    );
    f.listener(
        listen(move |a, _, next| {
            bump(&inner2);
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    let a = assemble(&r, None);
    assert_eq!(a.sections.len(), 0);
    assert_eq!(render_prompt(&a).unwrap(), "");
    assert_eq!(count(&inner), 0);
}

#[test]
fn case45_scoped_listener() {
    let r = reg();
    let runs = counter();
    let runs2 = Arc::clone(&runs);
    let s = r.fiber("s", S);
    s.listener(
        listen(move |a, _, next| {
            bump(&runs2);
            next.run(a)?;
            a.sections.push(NamedText::new("listener:extra", "x"));
            Ok(())
        }),
        ListenerOptions::default(),
    );
    assert!(names(&assemble(&r, S).sections).contains(&"listener:extra"));
    assert!(!names(&assemble(&r, None).sections).contains(&"listener:extra"));
    assert_eq!(count(&runs), 1);
}

#[test]
fn case46_scope_dispatch() {
    let r = reg();
    r.bind_scope_parent("S", "P").unwrap();
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let tagger = |tag: &'static str| {
        let log = Arc::clone(&log);
        listen(move |a, _, next| {
            record(&log, tag);
            next.run(a)
        })
    };
    let p = r.fiber("p", Some("P"));
    p.listener(tagger("P"), ListenerOptions::default());
    let s = r.fiber("s", S);
    s.listener(tagger("S"), ListenerOptions::default());
    let u = r.fiber("u", None);
    u.listener(tagger("untagged"), ListenerOptions::default());
    let foreign = r.fiber("f", Some("foreign"));
    foreign.listener(
        tagger("global"),
        ListenerOptions {
            prepend: false,
            global: true,
        },
    );
    let dispatch = |scope: Option<&str>| {
        log.lock().unwrap().clear();
        assemble(&r, scope);
        log.lock().unwrap().clone()
    };
    assert_eq!(dispatch(S), ["P", "S", "untagged", "global"]);
    assert_eq!(dispatch(Some("P")), ["P", "untagged", "global"]);
    assert_eq!(dispatch(None), ["untagged", "global"]);
}

#[test]
fn case47_listener_sets_a_variable() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("s", 1.0, "{{extra}}")).unwrap();
    f.listener(
        listen(|a, _, next| {
            a.set_variable("extra", Some("from-waterfall".into()));
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    let a = assemble(&r, None);
    assert_eq!(
        render_prompt(&a).unwrap(),
        format!("{ID}\n\nfrom-waterfall")
    );
}

#[test]
fn prepend_runs_first() {
    let r = reg();
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let f = r.fiber("p", None);
    for (tag, prepend) in [("a", false), ("b", true), ("c", false), ("d", true)] {
        let log = Arc::clone(&log);
        f.listener(
            listen(move |a, _, next| {
                record(&log, tag);
                next.run(a)
            }),
            ListenerOptions {
                prepend,
                global: false,
            },
        );
    }
    assemble(&r, None);
    assert_eq!(*log.lock().unwrap(), ["d", "b", "a", "c"]);
}

#[test]
fn listener_error_names_plugin_and_scope() {
    let r = reg();
    let f = r.fiber("angry", S);
    f.listener(
        listen(|_, _, _| Err(ProviderError::failed("boom"))),
        ListenerOptions::default(),
    );
    let e = assemble_err(&r, S);
    assert_eq!(
        e.to_string(),
        "listener (plugin \"angry\", scope \"S\") failed: boom"
    );
    assert_eq!(e.spec_text(), "boom");
}

#[test]
fn swallowed_inner_error_still_fails_the_assembly() {
    let r = reg();
    let outer = r.fiber("outer", None);
    outer.listener(
        listen(|a, _, next| {
            let _ = next.run(a);
            Ok(())
        }),
        ListenerOptions::default(),
    );
    let inner = r.fiber("inner", None);
    inner.listener(
        listen(|_, _, _| Err(ProviderError::failed("inner failure"))),
        ListenerOptions::default(),
    );
    let e = assemble_err(&r, None);
    assert_eq!(e.plugin(), Some("inner"));
    assert_eq!(e.spec_text(), "inner failure");
}

#[test]
fn next_twice_is_an_error_of_that_listener() {
    let r = reg();
    let f = r.fiber("twice", None);
    f.listener(
        listen(|a, _, next| {
            next.run(a)?;
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    let e = assemble_err(&r, None);
    assert_eq!(e.plugin(), Some("twice"));
    assert!(e.spec_text().contains("only once"));
}

#[test]
fn invariant_violation_names_the_listener_plugin() {
    let r = reg();
    let good = r.fiber("good", None);
    good.listener(listen(|a, _, next| next.run(a)), ListenerOptions::default());
    let bad = r.fiber("bad", None);
    bad.listener(
        listen(|a, _, next| {
            next.run(a)?;
            a.sections.push(NamedText::new(PERSONA_SECTION, "again"));
            Ok(())
        }),
        ListenerOptions::default(),
    );
    let e = assemble_err(&r, None);
    assert_eq!(
        e,
        AssembleError::Invariant {
            text: "assembled section name \"deployment:persona\" is duplicated".into(),
            plugin: "bad".into(),
            after_listener: true,
        }
    );
    assert_eq!(
        e.to_string(),
        "assembled section name \"deployment:persona\" is duplicated (after listener of plugin \"bad\")"
    );
}

#[test]
fn invariant_is_checked_after_each_listener_even_if_fixed_later() {
    let r = reg();
    let fixer = r.fiber("fixer", None);
    fixer.listener(
        listen(|a, _, next| {
            let _ = next.run(a);
            a.variables.retain(|(k, _)| k != "Bad");
            Ok(())
        }),
        ListenerOptions::default(),
    );
    let breaker = r.fiber("breaker", None);
    breaker.listener(
        listen(|a, _, next| {
            a.set_variable("Bad", Some("x".into()));
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    let e = assemble_err(&r, None);
    assert_eq!(e.spec_text(), "assembled variable name \"Bad\" is invalid");
    assert_eq!(e.plugin(), Some("breaker"));
}

#[test]
fn registered_empty_names_are_blamed_on_the_registering_plugin() {
    let r = reg();
    let f = r.fiber("blank", None);
    f.section(fixed("", 1.0, "x")).unwrap();
    let e = assemble_err(&r, None);
    assert_eq!(
        e.to_string(),
        "assembled section names must be non-empty (registered by plugin \"blank\")"
    );
    f.dispose();
    f.tools(static_tools(&[""]));
    assert_eq!(
        assemble_err(&r, None).spec_text(),
        "assembled tool names must be non-empty"
    );
}
