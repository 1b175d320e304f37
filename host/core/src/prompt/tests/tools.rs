//! Cases 32–42: tools.

use super::*;

fn with_order(order: &[&str]) -> Arc<Registry> {
    reg_with(|c| c.tool_order = Some(order.iter().map(|s| s.to_string()).collect()))
}

const R: &str = TOOL_ORDER_REST;

#[test]
fn case32_tools_sorted_whatever_the_provider_order() {
    for swap in [false, true] {
        let r = reg();
        let f = r.fiber("p", None);
        let (one, two) = (
            static_tools(&["charlie", "alpha"]),
            static_tools(&["bravo"]),
        );
        if swap {
            f.tools(two);
            f.tools(one);
        } else {
            f.tools(one);
            f.tools(two);
        }
        assert_eq!(
            tool_names(&assemble(&r, None)),
            ["alpha", "bravo", "charlie"]
        );
    }
}

#[test]
fn case33_tool_order() {
    let r = with_order(&["todo_write", R, "bash"]);
    let f = r.fiber("p", None);
    f.tools(static_tools(&["bash", "echo_b", "todo_write", "echo_a"]));
    assert_eq!(
        tool_names(&assemble(&r, None)),
        ["todo_write", "echo_a", "echo_b", "bash"]
    );
}

#[test]
fn case34_unknown_tools() {
    let r = with_order(&["todo_write", "ghost", R, "wraith"]);
    let f = r.fiber("p", None);
    f.tools(static_tools(&["bash", "todo_write"]));
    assert_eq!(
        assemble_err(&r, None).to_string(),
        "toolOrder lists unregistered tools \"ghost\", \"wraith\"; known tools: bash, todo_write"
    );
}

#[test]
fn case35_unknown_tool_no_providers() {
    let r = with_order(&["ghost", R]);
    assert_eq!(
        assemble_err(&r, None).to_string(),
        "toolOrder lists unregistered tool \"ghost\"; known tools: (none)"
    );
}

#[test]
fn unknown_names_are_quoted_plainly_like_upstream() {
    // The TypeScript DeepSeek Harness wraps each name in plain quotes (no JSON escaping),
    // and an empty joined known list reads `(none)` even when it holds one empty name.
    let r = with_order(&["q\"g", "a\\b", R]);
    let f = r.fiber("p", None);
    f.tools(ToolSource::Static(Arc::new(ToolSet {
        schemas: Vec::new(),
        known_names: Some(vec![String::new()]),
    })));
    assert_eq!(
        assemble_err(&r, None).to_string(),
        "toolOrder lists unregistered tools \"q\"g\", \"a\\b\"; known tools: (none)"
    );
    f.dispose();
    f.tools(ToolSource::Static(Arc::new(ToolSet {
        schemas: Vec::new(),
        known_names: Some(vec!["a".into(), String::new()]),
    })));
    assert!(assemble_err(&r, None)
        .to_string()
        .ends_with("; known tools: , a"));
}

#[test]
fn case36_reserved_tool_name() {
    let text = "tool provider returned reserved tool name \"<unlisted-tools>\" (reserved for toolOrder's rest entry)";
    for r in [reg(), with_order(&[R])] {
        let f = r.fiber("bad", None);
        f.tools(static_tools(&[R]));
        let e = assemble_err(&r, None);
        assert_eq!(e.to_string(), text);
        assert_eq!(e.plugin(), Some("bad"));
    }
}

#[test]
fn case37_known_names() {
    let known = |r: &Arc<Registry>| {
        let f = r.fiber("p", None);
        f.tools(ToolSource::Static(Arc::new(ToolSet {
            schemas: vec![tool("read", "tool")],
            known_names: Some(vec!["read".into(), "bash".into()]),
        })));
        f
    };
    let r = with_order(&["bash", R]);
    let _f = known(&r);
    assert_eq!(tool_names(&assemble(&r, None)), ["read"]);
    let r = with_order(&["basj", R]);
    let _f = known(&r);
    assert_eq!(
        assemble_err(&r, None).to_string(),
        "toolOrder lists unregistered tool \"basj\"; known tools: bash, read"
    );
}

#[test]
fn case38_same_name_tools_keep_collection_order() {
    let r = reg();
    let f = r.fiber("p", None);
    f.tools(ToolSource::Static(Arc::new(ToolSet {
        schemas: vec![
            tool("dup", "first"),
            tool("anchor", "anchor"),
            tool("dup", "second"),
        ],
        known_names: None,
    })));
    let a = assemble(&r, None);
    let d: Vec<&str> = a.tools.iter().map(|t| t.description.as_str()).collect();
    assert_eq!(d, ["anchor", "first", "second"]);
}

#[test]
fn case39_listener_tools_are_not_resorted() {
    let r = reg();
    let f = r.fiber("p", None);
    f.tools(static_tools(&["zulu", "alpha"]));
    let seen: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let seen2 = Arc::clone(&seen);
    f.listener(
        listen(move |a, _, next| {
            *seen2.lock().unwrap() = a.tools.iter().map(|t| t.name.clone()).collect();
            a.tools.push(tool("aardvark", "late"));
            next.run(a)
        }),
        ListenerOptions::default(),
    );
    let a = assemble(&r, None);
    assert_eq!(*seen.lock().unwrap(), ["alpha", "zulu"]);
    assert_eq!(tool_names(&a), ["alpha", "zulu", "aardvark"]);
}

#[test]
fn case40_mutating_an_assembly_never_leaks() {
    let r = reg();
    let f = r.fiber("p", None);
    f.tools(static_tools(&["t"]));
    let shared = Arc::new(ToolSet {
        schemas: vec![tool("d", "tool")],
        known_names: None,
    });
    let shared2 = Arc::clone(&shared);
    f.tools(dyn_tools(move |_| Ok(ToolSet::clone(&shared2))));
    f.section(fixed("s", 1.0, "text")).unwrap();
    f.context(fixed("c", 1.0, "ctx")).unwrap();
    let mut first = assemble(&r, None);
    for t in &mut first.tools {
        t.description = "mutated".into();
        Arc::make_mut(&mut t.parameters)["properties"]["x"] = json!({"type": "string"});
    }
    first.sections[2].text = "mutated".into();
    first.contexts[0].text = "mutated".into();
    let second = assemble(&r, None);
    assert_eq!(second.tools, vec![tool("d", "tool"), tool("t", "tool")]);
    assert_eq!(
        *second.tools[1].parameters,
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(second.sections[2].text, "text");
    assert_eq!(second.contexts[0].text, "ctx");
    assert_eq!(shared.schemas[0], tool("d", "tool"));
}

#[test]
fn case41_utf16_order() {
    let r = reg();
    let f = r.fiber("p", None);
    f.tools(static_tools(&["\u{FF5A}", "😀", "a"]));
    assert_eq!(tool_names(&assemble(&r, None)), ["a", "😀", "\u{FF5A}"]);
}

/// Case 42, adapted: `ToolSchema` cannot carry extra fields, so the assembled (and
/// serialized) tool has exactly name, description and parameters.
#[test]
fn case42_only_three_fields() {
    let r = reg();
    let f = r.fiber("p", None);
    f.tools(static_tools(&["t"]));
    let json = assemble(&r, None).to_json();
    let tool = json["tools"][0].as_object().unwrap();
    let keys: Vec<&str> = tool.keys().map(String::as_str).collect();
    assert_eq!(keys, ["name", "description", "parameters"]);
}

#[test]
fn scoped_and_global_providers_all_contribute() {
    let r = reg();
    r.bind_scope_parent("S", "P").unwrap();
    let g = r.fiber("g", None);
    g.tools(static_tools(&["g"]));
    let p = r.fiber("p", Some("P"));
    p.tools(static_tools(&["p"]));
    let s = r.fiber("s", S);
    s.tools(static_tools(&["g"]));
    assert_eq!(tool_names(&assemble(&r, S)), ["g", "g", "p"]);
    assert_eq!(tool_names(&assemble(&r, Some("P"))), ["g", "p"]);
    assert_eq!(tool_names(&assemble(&r, None)), ["g"]);
}
