//! The step helper over a real log: event order, header reasons, series detection, and an
//! end-to-end runtime-context scenario taken over from the TypeScript DeepSeek Harness.

use serde_json::json;

use super::{run_step, HeaderReason, StepInput};
use crate::projection::test_support::{s, Log};
use crate::prompt::{NamedText, ToolSchema, CONTEXT_CLEARED, CONTEXT_SNAPSHOT_PREFIX};
use crate::session::event::REQUEST_HEADER;
use crate::session::route::RouteContext;
use crate::session::EventData;

fn tool(name: &str) -> ToolSchema {
    ToolSchema {
        name: name.to_string(),
        description: format!("{name} tool"),
        parameters: json!({"type":"object","properties":{}}).into(),
    }
}

fn input<'a>(
    prompt: &'a str,
    sections: &'a [NamedText],
    snapshot: &'a str,
    tools: &'a [ToolSchema],
    users: &'a [String],
) -> StepInput<'a> {
    StepInput {
        rendered_prompt: prompt,
        context_sections: sections,
        context_snapshot: snapshot,
        tools,
        route: replacing(),
        starts_series: false,
        user_texts: users,
        retry_of: None,
        origins: None,
    }
}

/// The default route: updates replace the system text.
fn replacing() -> &'static RouteContext {
    static ROUTE: std::sync::LazyLock<RouteContext> =
        std::sync::LazyLock::new(RouteContext::default);
    &ROUTE
}

/// The default route taking updates in history.
fn in_history() -> &'static RouteContext {
    static ROUTE: std::sync::LazyLock<RouteContext> = std::sync::LazyLock::new(|| RouteContext {
        in_history: true,
        ..RouteContext::default()
    });
    &ROUTE
}

fn kinds(log: &Log) -> Vec<String> {
    log.session
        .events()
        .iter()
        .map(|e| e.kind.clone())
        .collect()
}

#[test]
fn first_step_orders_events_and_derives_the_request() {
    let mut log = Log::new();
    let sections = vec![NamedText::new("policy", "Mode: a.")];
    let snapshot = format!("{CONTEXT_SNAPSHOT_PREFIX}\n\nMode: a.");
    let tools = vec![tool("bash")];
    let users = s(&["hello"]);
    let out = run_step(
        &mut log.session,
        &input("You are helpful.", &sections, &snapshot, &tools, &users),
    )
    .unwrap();
    assert_eq!(
        kinds(&log),
        s(&[
            "step/start",
            "system/message",
            "user/message",
            "user/message",
            "request/header",
            "step/end"
        ])
    );
    assert_eq!(out.commit_seqs, vec![1]);
    assert_eq!(out.snapshot_seq, Some(3));
    assert_eq!(out.header, Some(HeaderReason::Initial));
    assert!(!out.starts_series);
    let request = serde_json::to_value(&out.request).unwrap();
    assert_eq!(
        request,
        json!({
            "messages": [
                {"role":"system","content":"You are helpful."},
                {"role":"user","content":"hello"},
                {"role":"user","content":snapshot},
            ],
            "tools": [{"type":"function","function":{"name":"bash","description":"bash tool","parameters":{"type":"object","properties":{}}}}]
        })
    );
    assert!(request.get("system").is_none());
    let header = log
        .session
        .events()
        .iter()
        .find(|e| e.kind == REQUEST_HEADER)
        .unwrap();
    let EventData::Other(data) = &header.data else {
        panic!("header data")
    };
    assert_eq!(data["reason"], "initial");
    assert!(data["header"].get("system").is_none());
}

#[test]
fn unchanged_step_commits_nothing_and_logs_no_header() {
    let mut log = Log::new();
    let tools = vec![tool("bash")];
    let users = s(&["one"]);
    run_step(&mut log.session, &input("P", &[], "", &tools, &users)).unwrap();
    let users = s(&["two"]);
    let out = run_step(&mut log.session, &input("P", &[], "", &tools, &users)).unwrap();
    assert!(out.commits.is_empty());
    assert_eq!(out.header, None);
    assert_eq!(out.step, 1);
    let headers = kinds(&log).iter().filter(|k| *k == REQUEST_HEADER).count();
    assert_eq!(headers, 1);
    assert_eq!(log.wire(), s(&["system:P", "user:one", "user:two"]));
}

#[test]
fn changed_tools_start_a_series_and_normalise() {
    let mut log = Log::new();
    let users = s(&["u"]);
    let mut step = input("v1", &[], "", &[], &users);
    step.route = in_history();
    run_step(&mut log.session, &step).unwrap();
    step.rendered_prompt = "v2";
    let out = run_step(&mut log.session, &step).unwrap();
    assert_eq!(out.commits.len(), 1, "in-history append of v2");
    assert_eq!(
        log.wire(),
        s(&["system:v1", "user:u", "system:v2", "user:u"])
    );

    // New tools: the series starts, so v2 moves to the head and the tail is emptied.
    let tools = vec![tool("bash")];
    step.tools = &tools;
    let out = run_step(&mut log.session, &step).unwrap();
    assert!(out.starts_series);
    assert_eq!(out.header, Some(HeaderReason::Change));
    assert_eq!(out.commits.len(), 2);
    assert_eq!(log.wire(), s(&["system:v2", "user:u", "user:u", "user:u"]));

    // Same tools, caller-declared series: header logged as `series`.
    step.starts_series = true;
    let out = run_step(&mut log.session, &step).unwrap();
    assert_eq!(out.header, Some(HeaderReason::Series));
    assert!(out.commits.is_empty());
}

#[test]
fn surface_replacement_between_steps_starts_a_series() {
    let mut log = Log::new();
    let users = s(&["u"]);
    let mut step = input("v1", &[], "", &[], &users);
    step.route = in_history();
    run_step(&mut log.session, &step).unwrap();
    step.rendered_prompt = "v2";
    run_step(&mut log.session, &step).unwrap();
    // Someone compacts the second user message after the request was built.
    let last_user = *log.session.surface().nodes().last().unwrap();
    log.compact(last_user, last_user);
    let out = run_step(&mut log.session, &step).unwrap();
    assert!(out.starts_series);
    assert_eq!(out.header, Some(HeaderReason::Series));
    assert_eq!(
        log.wire(),
        s(&["system:v2", "user:u", "user:summary", "user:u"])
    );
}

/// Changed runtime context is materialised at the history tail without rewriting the system
/// header (a scenario of the TypeScript DeepSeek Harness's agent loop): owned snapshots 1, 1,
/// 2, 3, 3; the third is the cleared marker; one system message and exactly one header.
#[test]
fn runtime_context_materialises_at_the_tail() {
    let mut log = Log::new();
    let modes = [
        Some("read-only"),
        Some("read-only"),
        Some("danger-full-access"),
        None,
        None,
    ];
    let mut counts = Vec::new();
    let mut snapshots = Vec::new();
    for (turn, mode) in modes.iter().enumerate() {
        let sections: Vec<NamedText> = mode
            .map(|m| vec![NamedText::new("sandbox", format!("Mode: {m}."))])
            .unwrap_or_default();
        let snapshot = mode
            .map(|m| format!("{CONTEXT_SNAPSHOT_PREFIX}\n\nMode: {m}."))
            .unwrap_or_default();
        let users = vec![format!("turn {turn}")];
        let out = run_step(
            &mut log.session,
            &input("SYS", &sections, &snapshot, &[], &users),
        )
        .unwrap();
        if let Some(seq) = out.snapshot_seq {
            let text = log.session.event(seq).unwrap().message().unwrap();
            snapshots.push(text.single_text().unwrap().to_string());
        }
        counts.push(snapshots.len());
        assert_eq!(out.request.messages()[0]["content"], "SYS");
    }
    assert_eq!(counts, vec![1, 1, 2, 3, 3]);
    assert_eq!(snapshots[2], CONTEXT_CLEARED);
    let headers = kinds(&log).iter().filter(|k| *k == REQUEST_HEADER).count();
    assert_eq!(headers, 1);
    let systems = kinds(&log)
        .iter()
        .filter(|k| *k == "system/message")
        .count();
    assert_eq!(systems, 1);
    log.reopen();
}
