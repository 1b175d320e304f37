//! The runtime-context projection's conformance vectors RC1 … RC16 (following commits,
//! compaction and replacement of the retained snapshot, malformed messages, restoring from
//! the log, other sessions' events) against a real session log. Each committed output is
//! observed as a session event, and every state reached by following is also checked against
//! a fresh restore from the log.

use serde_json::{json, Value};

use super::{Retained, RuntimeContextProjection};
use crate::projection::test_support::Log;
use crate::prompt::{NamedText, CONTEXT_CLEARED, CONTEXT_SNAPSHOT_PREFIX, SYSTEM_PROMPT_PLUGIN_ID};
use crate::session::event::{NewEvent, USER_MESSAGE};
use crate::session::{ContentBlock, Message, MessageData, SurfaceIntent};

fn x() -> String {
    format!("{CONTEXT_SNAPSHOT_PREFIX}\n\nMode: a.")
}

fn y() -> String {
    format!("{CONTEXT_SNAPSHOT_PREFIX}\n\nMode: b.")
}

fn policy_a() -> Vec<NamedText> {
    vec![NamedText::new("policy", "Mode: a.")]
}

fn policy_b() -> Vec<NamedText> {
    vec![NamedText::new("policy", "Mode: b.")]
}

fn snap(seq: u64, text: &str) -> Retained {
    Retained::Snapshot {
        seq,
        text: Some(text.to_string()),
    }
}

/// Commit `message` as a user message, let `rc` observe it, and check restore agrees.
fn commit(log: &mut Log, rc: &mut RuntimeContextProjection, message: Message) -> u64 {
    let data = MessageData::new(message);
    follow(
        log,
        rc,
        NewEvent::message(USER_MESSAGE, data, SurfaceIntent::append()),
    )
}

/// Append `event`, let `rc` observe it, and check a restore from the log agrees; its seq.
fn follow(log: &mut Log, rc: &mut RuntimeContextProjection, event: NewEvent) -> u64 {
    let id = log.session.id();
    let event = log.session.append(event).unwrap().clone();
    rc.observe(id, &event);
    assert_eq!(
        RuntimeContextProjection::restore(&log.session).retained(),
        rc.retained()
    );
    event.seq
}

fn text_of(message: &Message) -> &str {
    message.single_text().unwrap()
}

#[test]
fn rc1_to_rc7_follow_commits() {
    let mut log = Log::new();
    let mut rc = RuntimeContextProjection::restore(&log.session);
    // RC1
    assert_eq!(rc.retained(), &Retained::Never);
    assert!(rc.project("", &[]).is_none());
    // RC2
    let m = rc.project(&x(), &policy_a()).unwrap();
    assert_eq!(text_of(&m), x());
    assert_eq!(
        serde_json::to_value(&m.source).unwrap(),
        json!({"kind":"plugin","plugin":SYSTEM_PROMPT_PLUGIN_ID,"form":"snapshot","sections":[{"name":"policy","text":"Mode: a."}]})
    );
    assert_eq!(m.role, "user");
    commit(&mut log, &mut rc, m);
    // RC3
    assert_eq!(rc.retained(), &snap(0, &x()));
    assert!(rc.project(&x(), &policy_a()).is_none());
    // RC4
    let m = rc.project(&y(), &policy_b()).unwrap();
    assert_eq!(text_of(&m), y());
    assert_eq!(m.source.as_ref().unwrap().form.as_deref(), Some("snapshot"));
    commit(&mut log, &mut rc, m);
    // RC5
    assert_eq!(rc.retained(), &snap(1, &y()));
    let m = rc.project("", &[]).unwrap();
    assert_eq!(text_of(&m), CONTEXT_CLEARED);
    assert_eq!(
        serde_json::to_value(&m.source).unwrap(),
        json!({"kind":"plugin","plugin":SYSTEM_PROMPT_PLUGIN_ID})
    );
    commit(&mut log, &mut rc, m);
    // RC6
    assert_eq!(rc.retained(), &snap(2, CONTEXT_CLEARED));
    assert!(rc.project("", &[]).is_none());
    // RC7
    let m = rc.project(&x(), &policy_a()).unwrap();
    assert_eq!(text_of(&m), x());
    log.reopen();
}

#[test]
fn rc8_rc9_compaction_of_the_retained_snapshot_re_emits() {
    let mut log = Log::new();
    log.user();
    let mut rc = RuntimeContextProjection::restore(&log.session);
    let m = rc.project(&x(), &policy_a()).unwrap();
    let seq = commit(&mut log, &mut rc, m);
    assert_eq!(rc.retained(), &snap(seq, &x()));

    // A compaction summary shadows the user message and the snapshot, citing both.
    let summary = log.compact(0, seq);
    let event = log.session.event(summary).unwrap().clone();
    rc.observe(log.session.id(), &event);
    assert_eq!(rc.retained(), &Retained::Gone);
    assert_eq!(
        RuntimeContextProjection::restore(&log.session).retained(),
        &Retained::Gone
    );
    // RC8: unchanged context is re-emitted.
    assert_eq!(text_of(&rc.project(&x(), &policy_a()).unwrap()), x());
    // RC9: an empty context after compaction is cleared explicitly.
    assert_eq!(text_of(&rc.project("", &[]).unwrap()), CONTEXT_CLEARED);
    log.reopen();
}

#[test]
fn rc10_unrelated_replacement_keeps_the_snapshot() {
    let mut log = Log::new();
    log.user();
    let mut rc = RuntimeContextProjection::restore(&log.session);
    let m = rc.project(&x(), &policy_a()).unwrap();
    commit(&mut log, &mut rc, m);
    assert_eq!(rc.retained(), &snap(1, &x()));
    let summary = log.compact(0, 0);
    let event = log.session.event(summary).unwrap().clone();
    rc.observe(log.session.id(), &event);
    assert_eq!(rc.retained(), &snap(1, &x()));
    assert!(rc.project(&x(), &policy_a()).is_none());
}

#[test]
fn rc11_rc12_malformed_retained_message_is_replaced() {
    let mut log = Log::new();
    let mut rc = RuntimeContextProjection::restore(&log.session);
    let mut two_blocks = Message::new(
        "user",
        vec![ContentBlock::text(x()), ContentBlock::text("!")],
    );
    two_blocks.source = Some(crate::session::Source::plugin(SYSTEM_PROMPT_PLUGIN_ID));
    commit(&mut log, &mut rc, two_blocks);
    assert_eq!(rc.retained(), &Retained::Snapshot { seq: 0, text: None });
    assert_eq!(text_of(&rc.project(&x(), &policy_a()).unwrap()), x());
    assert_eq!(text_of(&rc.project("", &[]).unwrap()), CONTEXT_CLEARED);
}

#[test]
fn rc13_restore_prefers_the_newest_surviving_snapshot() {
    let mut log = Log::new();
    let mut rc = RuntimeContextProjection::restore(&log.session);
    let a = rc.project("A", &[NamedText::new("p", "A")]).unwrap();
    commit(&mut log, &mut rc, a);
    let b = rc.project("B", &[NamedText::new("p", "B")]).unwrap();
    let b_seq = commit(&mut log, &mut rc, b);
    log.compact(b_seq, b_seq);
    log.reopen();
    let restored = RuntimeContextProjection::restore(&log.session);
    assert_eq!(restored.retained(), &snap(0, "A"));
    assert!(restored.project("A", &[NamedText::new("p", "A")]).is_none());
    assert_eq!(
        text_of(&restored.project("B", &[NamedText::new("p", "B")]).unwrap()),
        "B"
    );
}

#[test]
fn rc14_restore_over_only_shadowed_snapshots_is_gone() {
    let mut log = Log::new();
    let mut rc = RuntimeContextProjection::restore(&log.session);
    let b = rc.project("B", &[NamedText::new("p", "B")]).unwrap();
    let seq = commit(&mut log, &mut rc, b);
    log.compact(seq, seq);
    log.reopen();
    let restored = RuntimeContextProjection::restore(&log.session);
    assert_eq!(restored.retained(), &Retained::Gone);
    assert_eq!(
        text_of(&restored.project("", &[]).unwrap()),
        CONTEXT_CLEARED
    );
}

#[test]
fn rc15_restore_without_owned_messages_is_never() {
    let mut log = Log::new();
    log.user();
    log.admit("v1", crate::projection::test_support::R);
    let restored = RuntimeContextProjection::restore(&log.session);
    assert_eq!(restored.retained(), &Retained::Never);
    assert!(restored.project("", &[]).is_none());
}

#[test]
fn rc16_events_of_another_session_are_ignored() {
    let mut log = Log::new();
    let mut other = Log::new();
    let mut rc = RuntimeContextProjection::restore(&log.session);
    let m = rc.project(&x(), &policy_a()).unwrap();
    commit(&mut log, &mut rc, m);

    let mut theirs = RuntimeContextProjection::restore(&other.session);
    let owned = theirs.project(&y(), &policy_b()).unwrap();
    let event = other
        .session
        .append(NewEvent::message(
            USER_MESSAGE,
            MessageData::new(owned),
            SurfaceIntent::append(),
        ))
        .unwrap()
        .clone();
    theirs.observe(other.session.id(), &event);
    rc.observe(other.session.id(), &event);
    assert_eq!(rc.retained(), &snap(0, &x()));
    assert!(rc.project(&x(), &policy_a()).is_none());
    assert_eq!(theirs.retained(), &snap(0, &y()));
}

/// A provider's reply (`route`'s shape) appended as the assistant's message; its seq.
fn reply(log: &mut Log, rc: &mut RuntimeContextProjection, route: &str, reply: Value) -> u64 {
    let route = crate::session::route::RouteName::parse(route).unwrap();
    let read = crate::session::route::reply::parse(route, &reply).unwrap();
    let event = crate::session::assistant_event(&log.session, &read).unwrap();
    follow(log, rc, event)
}

#[test]
fn a_providers_compaction_after_the_snapshot_sends_it_again() {
    let replies = [
        (
            "openai-responses",
            json!({"object": "response", "output": [
                {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA…"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}]}),
        ),
        (
            "anthropic-messages",
            json!({"type": "message", "role": "assistant", "content": [
                {"type": "compaction", "content": "The user asked for a website; it is built."},
                {"type": "text", "text": "Done."}]}),
        ),
    ];
    for (route, compacting) in replies {
        let mut log = Log::new();
        log.user();
        let mut rc = RuntimeContextProjection::restore(&log.session);
        let m = rc.project(&x(), &policy_a()).unwrap();
        let seq = commit(&mut log, &mut rc, m);
        // An ordinary reply leaves the snapshot where the model sees it.
        let plain = json!({"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hi."}]});
        let plain = match route {
            "openai-responses" => json!({"object": "response", "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]}]}),
            _ => plain,
        };
        reply(&mut log, &mut rc, route, plain);
        assert_eq!(rc.retained(), &snap(seq, &x()), "{route}");
        log.user();
        // A reply in which the provider compacted: the snapshot is behind its summary.
        reply(&mut log, &mut rc, route, compacting);
        assert_eq!(rc.retained(), &Retained::Gone, "{route}");
        // RC8 and RC9, as after a compaction of the log.
        assert_eq!(text_of(&rc.project(&x(), &policy_a()).unwrap()), x());
        assert_eq!(text_of(&rc.project("", &[]).unwrap()), CONTEXT_CLEARED);
        // The snapshot sent again after it is the one the model sees.
        let m = rc.project(&x(), &policy_a()).unwrap();
        let again = commit(&mut log, &mut rc, m);
        assert_eq!(rc.retained(), &snap(again, &x()), "{route}");
        log.reopen();
        assert_eq!(
            RuntimeContextProjection::restore(&log.session).retained(),
            &snap(again, &x())
        );
    }
}
