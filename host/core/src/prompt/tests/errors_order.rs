//! The order assembly errors are checked in, and provider failures.

use super::*;

fn failing<T>(msg: &'static str) -> impl Fn(&AssembleContext) -> Result<T, ProviderError> {
    move |_| Err(ProviderError::failed(msg))
}

#[test]
fn complete_check_runs_after_variables_and_tools_before_section_texts() {
    let r = reg();
    let (v, t, s) = (counter(), counter(), counter());
    let (v2, t2, s2) = (Arc::clone(&v), Arc::clone(&t), Arc::clone(&s));
    let f = r.fiber("p", None);
    f.variable(
        "x",
        var(move |_| {
            bump(&v2);
            Ok(None)
        }),
    )
    .unwrap();
    f.tools(dyn_tools(move |_| {
        bump(&t2);
        Ok(ToolSet::default())
    }));
    f.section(
        dynamic("a", 1.0, move |_| {
            bump(&s2);
            Ok("a".into())
        })
        .complete(),
    )
    .unwrap();
    f.section(fixed("b", 2.0, "b").complete()).unwrap();
    assert!(matches!(
        assemble_err(&r, None),
        AssembleError::MultipleComplete { .. }
    ));
    assert_eq!((count(&v), count(&t), count(&s)), (1, 1, 0));
}

#[test]
fn complete_error_precedes_tool_errors() {
    let r = reg_with(|c| c.tool_order = Some(vec!["ghost".into(), TOOL_ORDER_REST.into()]));
    let f = r.fiber("p", None);
    f.tools(static_tools(&[TOOL_ORDER_REST]));
    f.section(fixed("a", 1.0, "a").complete()).unwrap();
    f.section(fixed("b", 1.0, "b").complete()).unwrap();
    assert_eq!(
        assemble_err(&r, None).to_string(),
        "multiple complete prompt sections are active: \"a\", \"b\""
    );
    f.dispose();
    f.tools(static_tools(&[TOOL_ORDER_REST]));
    assert!(matches!(
        assemble_err(&r, None),
        AssembleError::ReservedToolName { .. }
    ));
}

#[test]
fn text_provider_errors_precede_tool_order_errors() {
    let r = reg_with(|c| c.tool_order = Some(vec!["ghost".into(), TOOL_ORDER_REST.into()]));
    let f = r.fiber("ctx-plugin", S);
    f.context(SectionDef::new(
        "policy",
        1.0,
        TextSource::dynamic(failing("no policy")),
    ))
    .unwrap();
    let e = assemble_err(&r, S);
    assert_eq!(
        e.to_string(),
        "context \"policy\" (plugin \"ctx-plugin\", scope \"S\") failed: no policy"
    );
    f.dispose();
    assert!(matches!(
        assemble_err(&r, S),
        AssembleError::UnknownToolOrder { .. }
    ));
}

#[test]
fn provider_failures_name_kind_entry_plugin_and_scope() {
    let r = reg();
    let f = r.fiber("vars", None);
    f.variable("model", var(failing("no model"))).unwrap();
    let e = assemble_err(&r, None);
    assert_eq!(
        e.to_string(),
        "variable \"model\" (plugin \"vars\", scope \"global\") failed: no model"
    );
    assert_eq!(e.plugin(), Some("vars"));
    f.dispose();

    let f = r.fiber("tools", S);
    f.tools(dyn_tools(failing("no tools")));
    assert_eq!(
        assemble_err(&r, S).to_string(),
        "tool provider (plugin \"tools\", scope \"S\") failed: no tools"
    );
    assert!(
        assemble(&r, None).tools.is_empty(),
        "other scopes unaffected"
    );
    f.dispose();

    let f = r.fiber("sections", None);
    f.section(dynamic("x", 1.0, failing("no text"))).unwrap();
    let e = assemble_err(&r, None);
    assert_eq!(
        e,
        AssembleError::Provider {
            kind: EntryKind::Section,
            name: Some("x".into()),
            plugin: "sections".into(),
            scope: "global".into(),
            error: ProviderError::failed("no text"),
        }
    );
}

#[test]
fn variable_errors_come_before_tool_provider_errors() {
    let r = reg();
    let f = r.fiber("p", None);
    f.tools(dyn_tools(failing("tools")));
    f.variable("v", var(failing("var"))).unwrap();
    assert_eq!(assemble_err(&r, None).spec_text(), "var");
}

#[test]
fn suppressed_contexts_cannot_fail() {
    let r = reg_with(|c| c.include_runtime_context = false);
    let f = r.fiber("p", None);
    f.context(SectionDef::new("c", 1.0, TextSource::dynamic(failing("x"))))
        .unwrap();
    assert!(assemble(&r, None).contexts.is_empty());
}
