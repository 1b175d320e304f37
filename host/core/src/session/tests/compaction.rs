//! Compaction over a real log file: what it writes, the surface and wire it leaves, and every
//! refusal — each leaving the file byte for byte as it was.

use std::fs;

use super::*;
use crate::session::{
    assistant_event, compact, oldest_compactable, tool_result_event, AssistantReply,
    CompactionError, CompactionOrAppend, CompactionRange, ToolCall, ToolResult,
};

/// A log: system prompt (0), then turns of user input, a call and its result, and an answer.
/// Returns the session; seqs: 0 S, 1 U, 2 A(call c1), 3 T(c1), 4 A, 5 U, 6 A(call c2),
/// 7 T(c2), 8 A, 9 U.
fn conversation() -> (tempfile::TempDir, Session) {
    let (dir, path) = temp_log();
    let (mut s, _) = Session::open(&path).unwrap();
    s.append(system("prompt", SurfaceIntent::append())).unwrap();
    for (turn, call) in [(1, "c1"), (2, "c2")] {
        s.append(user(&format!("question {turn}"))).unwrap();
        let reply = AssistantReply::calls(vec![ToolCall::new(call, "ls", json!({}))]);
        let event = assistant_event(&s, &reply).unwrap();
        s.append(event).unwrap();
        let result = ToolResult {
            call_id: call.to_string(),
            content: "files".into(),
            is_error: false,
        };
        let event = tool_result_event(&s, &result).unwrap();
        s.append(event).unwrap();
        let event = assistant_event(&s, &AssistantReply::text("answer")).unwrap();
        s.append(event).unwrap();
    }
    s.append(user("question 3")).unwrap();
    (dir, s)
}

fn range(start_seq: u64, end_seq: u64) -> CompactionRange {
    CompactionRange { start_seq, end_seq }
}

/// Compact, expect exactly `text`, and check nothing changed on disk or in memory.
fn refused(s: &mut Session, r: CompactionRange, summary: &str, text: &str) {
    let before = fs::read(s.path()).unwrap();
    let (len, surface) = (s.events().len(), s.surface().clone());
    match compact(s, &r, summary) {
        Err(CompactionOrAppend::Refused(e)) => assert_eq!(e.to_string(), text),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(fs::read(s.path()).unwrap(), before);
    assert_eq!(s.events().len(), len);
    assert_eq!(s.surface(), &surface);
}

#[test]
fn a_compaction_writes_start_summary_and_end_and_the_surface_holds_the_summary() {
    let (_dir, mut s) = conversation();
    let done = compact(&mut s, &range(1, 4), "we listed the files").unwrap();
    assert_eq!(
        (done.start_event, done.summary_seq, done.end_event),
        (10, 11, 12)
    );
    assert_eq!(done.replaced, vec![1, 2, 3, 4]);
    // The system prompt is the one message kept before the range.
    assert_eq!(done.prefix_messages_kept, 1);
    assert_eq!(s.surface().nodes(), vec![0, 11, 5, 6, 7, 8, 9]);
    let kinds: Vec<&str> = s.events()[10..].iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["compaction/start", "user/message", "compaction/end"]
    );
    let summary = &s.events()[11];
    assert_eq!(summary.source_event_seqs, Some(vec![1, 2, 3, 4]));
    let message = summary.message().unwrap();
    assert_eq!(message.single_text(), Some("we listed the files"));
    assert_eq!(message.source.as_ref().unwrap().kind, "compaction");
    assert_eq!(
        serde_json::to_value(&s.events()[10].data).unwrap(),
        json!({"startSeq": 1, "endSeq": 4, "replaced": [1, 2, 3, 4], "summaryBytes": 19})
    );
    // What was written reads back: the log reopens to the same surface.
    let path = s.path_buf();
    drop(s);
    let (again, _) = Session::open(&path).unwrap();
    assert_eq!(again.surface().nodes(), vec![0, 11, 5, 6, 7, 8, 9]);
    // Compacting again over the summary replaces it too.
    let mut again = again;
    let done = compact(&mut again, &range(11, 8), "all of it").unwrap();
    assert_eq!(done.replaced, vec![11, 5, 6, 7, 8]);
    assert_eq!(again.surface().nodes(), vec![0, 14, 9]);
}

#[test]
fn bad_ranges_and_summaries_are_refused_naming_why_and_write_nothing() {
    let (_dir, mut s) = conversation();
    refused(
        &mut s,
        range(1, 40),
        "x",
        "seq 40 is beyond the log, which has 10 events (seqs 0 to 9)",
    );
    refused(
        &mut s,
        range(5, 1),
        "x",
        "the range is reversed: seq 5 comes after seq 1 on the surface",
    );
    refused(
        &mut s,
        range(0, 4),
        "x",
        "the range starts at seq 0, the system prompt (node 0), which only the system prompt's projection rewrites; start at the next node",
    );
    refused(
        &mut s,
        range(1, 2),
        "x",
        "the range would separate tool call c1 (seq 2) from its result (seq 3); end the range at seq 3 or later",
    );
    refused(
        &mut s,
        range(3, 4),
        "x",
        "the range would separate tool call c1 (seq 2) from its result (seq 3); end the range before seq 2, or start it at seq 2 or earlier",
    );
    refused(
        &mut s,
        range(1, 4),
        " \n",
        "the summary is empty: a compaction replaces the range with the summary's text",
    );
    refused(
        &mut s,
        range(1, 4),
        &"x".repeat(10 << 20),
        "the summary is 10485760 bytes; a compaction summary may be at most 1048576 bytes (1 MiB)",
    );
    compact(&mut s, &range(1, 4), "first turn").unwrap();
    refused(
        &mut s,
        range(2, 4),
        "x",
        "seq 2 is not on the surface (its event is assistant/message, replaced by seq 11); the surface holds [0, 11, 5, 6, 7, 8, 9]",
    );
}

#[test]
fn system_nodes_alone_and_open_calls_are_refused() {
    let (dir, path) = (tempfile::tempdir().unwrap(), PathBuf::new());
    let _ = path;
    let path = dir.path().join("s.jsonl");
    let (mut s, _) = Session::open(&path).unwrap();
    s.append(user("hello")).unwrap();
    s.append(system("late", SurfaceIntent::append())).unwrap();
    s.append(user("again")).unwrap();
    refused(
        &mut s,
        range(1, 1),
        "x",
        "the range holds system prompt nodes only (seqs [1]): there is no conversation to compact",
    );
    let reply = AssistantReply::calls(vec![ToolCall::new("open", "ls", json!({}))]);
    let event = assistant_event(&s, &reply).unwrap();
    s.append(event).unwrap();
    refused(
        &mut s,
        range(2, 3),
        "x",
        "the range covers tool call open (seq 3) of the current turn, which has no result yet; end the range before seq 3",
    );
    // A later system node may be shadowed with the conversation around it.
    compact(&mut s, &range(0, 2), "said hello twice").unwrap();
    assert_eq!(s.surface().nodes(), vec![5, 3]);
}

#[test]
fn the_oldest_compactable_range_keeps_the_newest_turns_whole() {
    let (_dir, s) = conversation();
    assert_eq!(oldest_compactable(&s, 1), Some(range(1, 8)));
    assert_eq!(oldest_compactable(&s, 2), Some(range(1, 4)));
    assert_eq!(oldest_compactable(&s, 3), None);
    assert_eq!(oldest_compactable(&s, 0), Some(range(1, 9)));
    // The same choice, refused by name when it keeps everything.
    assert_eq!(CompactionRange::keeping(&s, 2), Ok(range(1, 4)));
    let none = CompactionRange::keeping(&s, 3).unwrap_err();
    assert_eq!(none, CompactionError::NothingToCompact { keep_turns: 3 });
    assert_eq!(
        none.to_string(),
        "nothing to compact: the session has no turns before its newest 3"
    );
}
