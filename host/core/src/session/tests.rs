//! Session log tests over real files: validation texts, refusals that leave the file
//! unchanged, replay, torn-tail recovery, line-numbered errors and the lock.

mod compaction;
mod crash;
mod files;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::event::{NewEvent, STEP_START, SYSTEM_MESSAGE, TOOL_RESULT, USER_MESSAGE};
use super::*;

fn temp_log() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    (dir, path)
}

fn user(text: &str) -> NewEvent {
    NewEvent::message(
        USER_MESSAGE,
        MessageData::new(Message::user_text(text)),
        SurfaceIntent::append(),
    )
}

fn system(text: &str, intent: SurfaceIntent) -> NewEvent {
    NewEvent::message(
        SYSTEM_MESSAGE,
        MessageData::new(Message::system(text, "p")),
        intent,
    )
}

fn with_intent(mut event: NewEvent, intent: SurfaceIntent) -> NewEvent {
    event.surface_op = Some(intent.surface_op);
    event.source_event_seqs = intent.source_event_seqs;
    event
}

/// Append `event`, expect a refusal with exactly `text`, and check nothing changed.
fn refused(session: &mut Session, event: NewEvent, text: &str) {
    let before = fs::read(session.path()).unwrap();
    let (len, surface) = (session.events().len(), session.surface().clone());
    let err = session.append(event).unwrap_err();
    assert_eq!(
        err.event_error().map(|e| e.to_string()).as_deref(),
        Some(text)
    );
    assert!(err.to_string().contains(text));
    assert_eq!(fs::read(session.path()).unwrap(), before);
    assert_eq!(session.events().len(), len);
    assert_eq!(session.surface(), &surface);
}

#[test]
fn appends_replay_to_the_same_state() {
    let (_dir, path) = temp_log();
    let (mut session, report) = Session::open(&path).unwrap();
    assert_eq!(report, OpenReport::default());
    session
        .append(system("v1", SurfaceIntent::append()))
        .unwrap();
    session.append(user("hi")).unwrap();
    session
        .append(NewEvent::log(STEP_START, json!({"step":0})))
        .unwrap();
    session
        .append(system("v2", SurfaceIntent::replace_one(0)))
        .unwrap();
    session
        .append(NewEvent::log("vendor/x", json!({"a":1})).ignorable())
        .unwrap();
    assert_eq!(session.surface().nodes(), &[3, 1]);
    assert_eq!(session.surface().replace_generation(), 1);
    let events = session.events().to_vec();
    drop(session);

    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 6);
    assert_eq!(text.lines().next(), Some(HEADER));
    let first: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["type"], "system/message");
    assert_eq!(first["seq"], 0);
    assert_eq!(first["surfaceOp"], "append");
    assert!(first["time"].as_u64().unwrap() > 1_600_000_000_000);

    let (session, report) = Session::open(&path).unwrap();
    assert_eq!(report.events, 5);
    assert_eq!(session.events(), &events[..]);
    assert_eq!(session.surface().nodes(), &[3, 1]);
    assert_eq!(session.surface().replace_generation(), 1);
    let wire = session.derive_messages();
    assert_eq!(wire.len(), 2);
    assert_eq!(wire[0]["content"], "v2");
}

#[test]
fn bad_appends_are_refused_with_the_spec_texts_and_change_nothing() {
    let (_dir, path) = temp_log();
    let (mut session, _) = Session::open(&path).unwrap();
    session
        .append(system("v1", SurfaceIntent::append()))
        .unwrap(); // 0
    session.append(user("a")).unwrap(); // 1
    session.append(user("b")).unwrap(); // 2

    refused(
        &mut session,
        with_intent(user("x"), SurfaceIntent::replace(7, 7, vec![2])),
        "surface replace at seq 3: startSeq and endSeq must reference earlier events",
    );
    session
        .append(system("v2", SurfaceIntent::replace_one(0)))
        .unwrap(); // 3 shadows 0
    refused(
        &mut session,
        with_intent(user("x"), SurfaceIntent::replace(0, 0, vec![0])),
        "surface replace: start seq 0 not found in surface",
    );
    refused(
        &mut session,
        with_intent(user("x"), SurfaceIntent::replace(1, 2, vec![1])),
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 2",
    );
    refused(
        &mut session,
        with_intent(user("x"), SurfaceIntent::replace(1, 2, vec![])),
        "sourceEventSeqs must not be empty",
    );
    refused(
        &mut session,
        with_intent(user("x"), SurfaceIntent::replace(1, 2, vec![1, 1, 2])),
        "sourceEventSeqs must not contain duplicates",
    );
    refused(
        &mut session,
        with_intent(user("x"), SurfaceIntent::replace(2, 1, vec![1, 2])),
        "surface replace: start seq 2 (index 2) is after end seq 1 (index 1)",
    );
    refused(
        &mut session,
        NewEvent::log("vendor/x", json!({})),
        "session event \"vendor/x\" has an unknown type; only an event marked ignorable may use one",
    );
    let mut op_on_log = NewEvent::log(STEP_START, json!({}));
    op_on_log.surface_op = Some(SurfaceOp::Append);
    refused(
        &mut session,
        op_on_log,
        "session event \"step/start\" is not surface-eligible and cannot carry surfaceOp",
    );
    let mut sources_on_log = NewEvent::log("step/end", json!({}));
    sources_on_log.source_event_seqs = Some(vec![0]);
    refused(
        &mut session,
        sources_on_log,
        "session event \"step/end\" is not surface-eligible and cannot carry sourceEventSeqs",
    );
    let mut no_op = user("x");
    no_op.surface_op = None;
    refused(
        &mut session,
        no_op,
        "session event \"user/message\" is surface-eligible and requires a surfaceOp marker",
    );
    // The system head: only a system message over exactly node 0.
    refused(
        &mut session,
        with_intent(user("x"), SurfaceIntent::replace(3, 3, vec![3])),
        "surface replace: node 0 holds the system prompt and may be rewritten only by a system/message over exactly that node",
    );
    refused(
        &mut session,
        system("v3", SurfaceIntent::replace(3, 1, vec![3, 1])),
        "surface replace: node 0 holds the system prompt and may be rewritten only by a system/message over exactly that node",
    );
    refused(
        &mut session,
        NewEvent::log("request/header", json!({"header":{"system":"x"}})),
        "session event \"request/header\" has invalid data: must omit header.system; use system/message",
    );
    let mut assistant = NewEvent::message(
        "assistant/message",
        MessageData::new(Message::new("assistant", vec![])),
        SurfaceIntent::replace(2, 2, vec![2]),
    );
    refused(
        &mut session,
        assistant.clone(),
        "assistant/message embeds its source stream and cannot carry sourceEventSeqs",
    );
    assistant.source_event_seqs = None;
    refused(
        &mut session,
        assistant,
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 2",
    );
    // Still appendable afterwards, at the next seq.
    assert_eq!(session.append(user("c")).unwrap().seq, 4);
}

#[test]
fn tool_result_replacement_may_change_only_content() {
    let (_dir, path) = temp_log();
    let (mut session, _) = Session::open(&path).unwrap();
    let result = |id: &str, content: &str| {
        let mut message = Message::new(
            "tool",
            vec![ContentBlock::Other(
                json!({"type":"tool_result","toolCallId":"c1","content":content}),
            )],
        );
        message.id = id.to_string();
        MessageData::new(message)
    };
    session.append(user("u")).unwrap();
    session
        .append(NewEvent::message(
            TOOL_RESULT,
            result("m1", "long"),
            SurfaceIntent::append(),
        ))
        .unwrap();
    refused(
        &mut session,
        NewEvent::message(
            TOOL_RESULT,
            result("m2", "short"),
            SurfaceIntent::replace_one(1),
        ),
        "tool/result surface replacement may change only content",
    );
    refused(
        &mut session,
        NewEvent::message(
            TOOL_RESULT,
            result("m1", "x"),
            SurfaceIntent::replace(0, 1, vec![0, 1]),
        ),
        "tool/result surface replacement must rewrite exactly one current node",
    );
    refused(
        &mut session,
        NewEvent::message(
            TOOL_RESULT,
            result("m1", "x"),
            SurfaceIntent::replace_one(0),
        ),
        "tool/result surface replacement must target a current tool/result",
    );
    session
        .append(NewEvent::message(
            TOOL_RESULT,
            result("m1", "short"),
            SurfaceIntent::replace_one(1),
        ))
        .unwrap();
}

fn write_lines(path: &Path, lines: &[String], tail: &str) {
    let mut text = lines.join("\n");
    text.push('\n');
    text.push_str(tail);
    fs::write(path, text).unwrap();
}

/// The lines of a fresh log holding `n` user messages: the header, then the events.
fn valid_lines(path: &Path, n: usize) -> Vec<String> {
    {
        let (mut session, _) = Session::open(path).unwrap();
        for i in 0..n {
            session.append(user(&format!("m{i}"))).unwrap();
        }
    }
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn torn_last_line_is_cut_off_and_reported() {
    let (_dir, path) = temp_log();
    let lines = valid_lines(&path, 3);
    let fragment = &lines[3][..20];
    write_lines(&path, &lines[..3], fragment);
    let (mut session, report) = Session::open(&path).unwrap();
    assert_eq!(report.recovered_torn_bytes, 20);
    assert_eq!(report.events, 2);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        lines[..3].join("\n") + "\n"
    );
    assert_eq!(session.append(user("again")).unwrap().seq, 2);
    drop(session);
    let (session, report) = Session::open(&path).unwrap();
    assert_eq!((report.events, report.recovered_torn_bytes), (3, 0));
    assert_eq!(session.surface().nodes(), &[0, 1, 2]);
}

#[test]
fn garbage_or_invalid_events_in_the_middle_name_their_line() {
    let (_dir, path) = temp_log();
    let lines = valid_lines(&path, 3);
    let mut bad = lines.clone();
    bad[1] = "{not json".to_string();
    write_lines(&path, &bad, "");
    let err = Session::open(&path).unwrap_err();
    assert!(matches!(err, OpenError::Line { line: 2, .. }), "{err}");
    assert!(
        err.to_string()
            .contains(", line 2: malformed session event"),
        "{err}"
    );
    // The file is left alone for a human to inspect.
    assert_eq!(fs::read_to_string(&path).unwrap(), bad.join("\n") + "\n");

    let mut gap = lines.clone();
    gap.remove(2);
    write_lines(&path, &gap, "");
    let err = Session::open(&path).unwrap_err().to_string();
    assert!(
        err.ends_with("line 3: session event seq 2 is not contiguous; expected 1"),
        "{err}"
    );

    let mut unknown = lines.clone();
    unknown[2] = lines[2].replace("user/message", "vendor/thing");
    // Line 3: the header is line 1, seq 0 line 2.
    write_lines(&path, &unknown, "");
    let err = Session::open(&path).unwrap_err().to_string();
    assert!(
        err.contains("line 3: session event \"vendor/thing\" has an unknown type"),
        "{err}"
    );

    let mut replace = lines;
    replace[2] = replace[2].replace(
        "\"surfaceOp\":\"append\"",
        "\"surfaceOp\":{\"op\":\"replace\",\"startSeq\":0,\"endSeq\":0,\"x\":1}",
    );
    write_lines(&path, &replace, "");
    let err = Session::open(&path).unwrap_err().to_string();
    assert!(
        err.contains("line 3: session event \"user/message\" carries an invalid replace surfaceOp"),
        "{err}"
    );
}

#[test]
fn unknown_ignorable_events_round_trip_opaquely() {
    let (_dir, path) = temp_log();
    let line = r#"{"type":"vendor/note","seq":0,"time":1,"data":{"k":[1,2]},"ignorable":true,"surfaceOp":"sideways","sourceEventSeqs":"any","meta":{"x":1}}"#;
    fs::write(&path, format!("{line}\n")).unwrap();
    let (mut session, _) = Session::open(&path).unwrap();
    assert!(session.surface().nodes().is_empty());
    assert_eq!(session.events()[0].to_line().unwrap(), line.as_bytes());
    session.append(user("u")).unwrap();
}

#[test]
fn a_second_open_is_refused_while_the_log_is_held() {
    let (_dir, path) = temp_log();
    // An existing file: a missing log is locked by its first append (`files.rs`).
    fs::write(&path, b"").unwrap();
    let (session, _) = Session::open(&path).unwrap();
    let err = Session::open(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "session log {} is locked by another process",
            path.display()
        )
    );
    drop(session);
    Session::open(&path).unwrap();
}

/// Release-mode timing of a 100k-event replay; run with
/// `cargo test --release -p prompt-host-core --lib replay_100k -- --ignored --nocapture`.
#[test]
#[ignore = "a timing run for release builds: `cargo test --release -p prompt-host-core --lib replay_100k -- --ignored --nocapture`"]
fn replay_100k_events() {
    let (_dir, path) = temp_log();
    {
        let mut text = String::new();
        let (session, _) = Session::open(&path).unwrap();
        let mut events = Vec::new();
        for seq in 0..100_000u64 {
            let data = MessageData::new(Message::user_text(format!(
                "message number {seq} with some text"
            )));
            let event = NewEvent::message(USER_MESSAGE, data.at_step(seq), SurfaceIntent::append())
                .into_event(seq, 1_700_000_000_000 + seq);
            text.push_str(std::str::from_utf8(&event.to_line().unwrap()).unwrap());
            text.push('\n');
            events.push(event);
        }
        drop(session);
        fs::write(&path, text).unwrap();
    }
    let start = std::time::Instant::now();
    let (session, report) = Session::open(&path).unwrap();
    let opened = start.elapsed();
    let messages = session.derive_messages();
    let total = start.elapsed();
    assert_eq!(report.events, 100_000);
    assert_eq!(messages.len(), 100_000);
    println!("replay 100k: open {opened:?}, open+derive {total:?}");
}
