//! Cases 15–25: ordering and resolution.

use super::*;

#[test]
fn case15_orders() {
    let r = reg_with(|c| c.persona = "You are DeepSeek Harness.".into());
    let f = r.fiber("p", None);
    f.section(dynamic("cwd", 20.0, |_| Ok("cwd: /tmp".into())))
        .unwrap();
    f.section(fixed("rules", 10.0, "Be precise.")).unwrap();
    let a = assemble(&r, None);
    assert_eq!(
        names(&a.sections),
        [IDENTITY_SECTION, PERSONA_SECTION, "rules", "cwd"]
    );
    assert_eq!(
        render_prompt(&a).unwrap(),
        format!("{ID}\n\nYou are DeepSeek Harness.\n\nBe precise.\n\ncwd: /tmp")
    );
}

#[test]
fn case16_context_order() {
    let r = reg();
    let f = r.fiber("p", None);
    f.context(fixed("later", 20.0, "context 2")).unwrap();
    f.context(fixed("earlier", 10.0, "context 1")).unwrap();
    let a = assemble(&r, None);
    assert_eq!(
        render_context_snapshot(&a).unwrap(),
        format!("{CONTEXT_SNAPSHOT_PREFIX}\n\ncontext 1\n\ncontext 2")
    );
}

#[test]
fn case17_mirror_tie_break_is_registration_order() {
    let r = reg();
    let f = r.fiber("p", None);
    f.section(fixed("b", 5.0, "B")).unwrap();
    f.section(fixed("a", 5.0, "A")).unwrap();
    let a = assemble(&r, None);
    assert_eq!(contributed(&a), pairs(&[("b", "B"), ("a", "A")]));
}

#[test]
fn negative_zero_ties_with_zero() {
    let r = reg_with(|c| c.persona = "P".into());
    let f = r.fiber("p", None);
    f.section(fixed("neg-zero", -0.0, "N")).unwrap();
    f.section(fixed("frac", -0.5, "F")).unwrap();
    let a = assemble(&r, None);
    assert_eq!(
        names(&a.sections),
        [IDENTITY_SECTION, "frac", PERSONA_SECTION, "neg-zero"]
    );
}

#[test]
fn case18_shadow_keeps_its_slot() {
    let r = reg();
    let g = r.fiber("g", None);
    g.section(fixed("x", 5.0, "gx")).unwrap();
    g.section(fixed("y", 5.0, "gy")).unwrap();
    let s = r.fiber("s", S);
    s.section(fixed("x", 5.0, "sx")).unwrap();
    assert_eq!(
        contributed(&assemble(&r, S)),
        pairs(&[("x", "sx"), ("y", "gy")])
    );
    assert_eq!(
        contributed(&assemble(&r, None)),
        pairs(&[("x", "gx"), ("y", "gy")])
    );
}

#[test]
fn case19_negative_order_before_persona() {
    let r = reg();
    r.fiber("p", None)
        .section(fixed("n", -50.0, "N"))
        .map(|_| ())
        .unwrap();
    // The fiber above was dropped, which disposed its section.
    assert_eq!(render_prompt(&assemble(&r, None)).unwrap(), ID);

    let f = r.fiber("p", None);
    f.section(fixed("n", -50.0, "N")).unwrap();
    assert_eq!(
        render_prompt(&assemble(&r, None)).unwrap(),
        format!("{ID}\n\nN")
    );

    let r = reg_with(|c| c.persona = "P1".into());
    let f = r.fiber("p", None);
    f.section(fixed("n", -50.0, "N")).unwrap();
    assert_eq!(
        render_prompt(&assemble(&r, None)).unwrap(),
        format!("{ID}\n\nN\n\nP1")
    );
}

#[test]
fn case20_function_text_sees_the_context() {
    let r = reg();
    let calls = counter();
    let c2 = Arc::clone(&calls);
    let f = r.fiber("p", None);
    f.section(dynamic("who", 1.0, move |ctx| {
        let n = bump(&c2);
        Ok(format!(
            "call {n} for {}",
            ctx.fact("who").unwrap_or("nobody")
        ))
    }))
    .unwrap();
    let a = r
        .assemble_blocking(None, AssembleContext::with_facts([("who", "alice")]))
        .unwrap();
    assert_eq!(contributed(&a), pairs(&[("who", "call 1 for alice")]));
    let a = assemble(&r, None);
    assert_eq!(contributed(&a), pairs(&[("who", "call 2 for nobody")]));
}

#[test]
fn case21_only_the_winner_provider_runs() {
    let r = reg();
    let (g_calls, t_calls) = (counter(), counter());
    let (g2, t2) = (Arc::clone(&g_calls), Arc::clone(&t_calls));
    let g = r.fiber("g", None);
    g.section(dynamic("shared", 1.0, move |_| {
        bump(&g2);
        Ok("G".into())
    }))
    .unwrap();
    let s = r.fiber("s", S);
    s.section(dynamic("shared", 1.0, move |_| {
        bump(&t2);
        Ok("T".into())
    }))
    .unwrap();
    assert_eq!(contributed(&assemble(&r, S)), pairs(&[("shared", "T")]));
    assert_eq!((count(&g_calls), count(&t_calls)), (0, 1));
}

#[test]
fn case22_shadowed_variables_still_evaluated() {
    let r = reg();
    let (g_calls, s_calls) = (counter(), counter());
    let (g2, s2) = (Arc::clone(&g_calls), Arc::clone(&s_calls));
    let g = r.fiber("g", None);
    g.variable(
        "mode",
        var(move |_| {
            bump(&g2);
            Ok(Some("global".into()))
        }),
    )
    .unwrap();
    let s = r.fiber("s", S);
    s.variable(
        "mode",
        var(move |_| {
            bump(&s2);
            Ok(Some("scoped".into()))
        }),
    )
    .unwrap();
    let a = assemble(&r, S);
    assert_eq!(a.variable("mode"), Some(Some("scoped")));
    assert_eq!((count(&g_calls), count(&s_calls)), (1, 1));
    let a = assemble(&r, None);
    assert_eq!(a.variable("mode"), Some(Some("global")));
    assert_eq!((count(&g_calls), count(&s_calls)), (2, 1));
}

#[test]
fn variable_key_order_is_first_insertion() {
    let r = reg();
    let g = r.fiber("g", None);
    g.variable("b", value("1")).unwrap();
    g.variable("a", value("2")).unwrap();
    let s = r.fiber("s", S);
    s.variable("c", value("3")).unwrap();
    s.variable("b", value("scoped")).unwrap();
    let a = assemble(&r, S);
    let keys: Vec<&str> = a.variables.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["b", "a", "c"]);
    assert_eq!(a.variable("b"), Some(Some("scoped")));
}

#[test]
fn case23_variable_without_value() {
    let r = reg();
    let f = r.fiber("p", None);
    f.variable("who", var(|ctx| Ok(ctx.fact("who").map(str::to_string))))
        .unwrap();
    f.section(fixed("s", 1.0, "{{who}}")).unwrap();
    let a = r
        .assemble_blocking(None, AssembleContext::with_facts([("who", "alice")]))
        .unwrap();
    assert_eq!(a.variables, vec![("who".into(), Some("alice".into()))]);
    let a = assemble(&r, None);
    assert_eq!(a.variables, vec![("who".into(), None)]);
    assert!(render_prompt(&a)
        .unwrap_err()
        .to_string()
        .contains("has no value for this assembly"));
}

/// Case 24, adapted to snapshot semantics: a variable registered by a provider during an
/// assembly is not seen by that assembly, only by the next one.
#[test]
fn case24_late_variable_shows_up_in_the_next_assembly() {
    let r = reg();
    let keep: Arc<std::sync::Mutex<Vec<Fiber>>> = Arc::default();
    let (weak, keep2) = (Arc::downgrade(&r), Arc::clone(&keep));
    let f = r.fiber("p", None);
    f.variable(
        "first",
        var(move |_| {
            let mut kept = keep2.lock().unwrap();
            if kept.is_empty() {
                if let Some(r) = weak.upgrade() {
                    let late = r.fiber("late", None);
                    late.variable("late", value("second value")).unwrap();
                    kept.push(late);
                }
            }
            Ok(Some("first value".into()))
        }),
    )
    .unwrap();
    let a = assemble(&r, None);
    assert_eq!(
        a.variables,
        vec![("first".into(), Some("first value".into()))]
    );
    let a = assemble(&r, None);
    assert_eq!(
        a.variables,
        vec![
            ("first".into(), Some("first value".into())),
            ("late".into(), Some("second value".into()))
        ]
    );
    keep.lock().unwrap().clear();
}

#[test]
fn case25_late_tool_provider_waits_for_the_next_assembly() {
    let r = reg();
    let keep: Arc<std::sync::Mutex<Vec<Fiber>>> = Arc::default();
    let (weak, keep2) = (Arc::downgrade(&r), Arc::clone(&keep));
    let f = r.fiber("p", None);
    f.tools(dyn_tools(move |_| {
        let mut kept = keep2.lock().unwrap();
        if kept.is_empty() {
            if let Some(r) = weak.upgrade() {
                let late = r.fiber("late", None);
                late.tools(static_tools(&["late"]));
                kept.push(late);
            }
        }
        Ok(ToolSet {
            schemas: vec![tool("first", "tool")],
            known_names: None,
        })
    }));
    assert_eq!(tool_names(&assemble(&r, None)), ["first"]);
    assert_eq!(tool_names(&assemble(&r, None)), ["first", "late"]);
    keep.lock().unwrap().clear();
}
