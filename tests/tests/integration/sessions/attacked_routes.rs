//! The route surfaces attacked from outside: the file `assistant --reply @FILE` opens, a
//! provider reply (and a provider's context-management report) nested around the log's depth
//! limit, numbers a double would change, and recorded blocks that try to add prompt-cache
//! breakpoints.

use std::time::Duration;

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

fn lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

fn nested(levels: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..levels {
        value = Value::Array(vec![value]);
    }
    value
}

#[test]
fn a_reply_file_that_is_a_fifo_a_device_a_directory_or_too_large_is_refused_without_blocking() {
    let d = Deployment::new("");
    let log = d.path("s.jsonl");
    let session = log.to_str().unwrap();
    d.run(&["assistant", "--session", session, "--text", "hello"])
        .ok();
    let before = std::fs::read(&log).unwrap();
    let fifo = d.path("reply.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let dir = d.path("a-dir");
    std::fs::create_dir(&dir).unwrap();
    // 1 GB, sparse: past the 64 MiB a reply file may hold.
    let sparse = d.path("sparse.json");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    for (file, says) in [
        (fifo.clone(), "is a FIFO, not a regular file"),
        (
            "/dev/zero".into(),
            "is a character device, not a regular file",
        ),
        (dir.clone(), "is a directory, not a regular file"),
        (
            sparse.clone(),
            "is larger than 67108864 bytes, the most it may hold",
        ),
    ] {
        let arg = format!("@{}", file.display());
        let run = d
            .run_timed(
                &["assistant", "--session", session, "--reply", &arg],
                Duration::from_secs(20),
            )
            .unwrap_or_else(|| panic!("{arg}: the reply file blocked the command"));
        run.fails(1, &[&format!("--reply {arg}"), says]);
        assert_eq!(
            std::fs::read(&log).unwrap(),
            before,
            "{arg}: the log changed"
        );
    }
}

#[test]
fn a_provider_reply_nested_around_the_depth_limit_is_refused_or_reads_back() {
    let d = Deployment::new("");
    let mut accepted = 0;
    let mut refused = 0;
    for levels in [100usize, 115, 118, 119, 120, 121, 122, 124] {
        let log = d.path(&format!("deep-{levels}.jsonl"));
        let mut s = Served::start(&[], &d.path("cache"));
        s.ok("step", json!({"session": log, "route": {"name": "anthropic-messages", "model": "claude-sonnet-4-5", "options": {"max_tokens": 64}}, "user": ["hi"]}));
        let before = lines(&log);
        // The same value goes into the log twice: as the call's arguments and inside the
        // reply kept whole (one level deeper).
        let reply = json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "n", "input": {"a": nested(levels)}}]});
        let answer = s.call("append_assistant", json!({"session": log, "reply": reply}));
        if answer.get("error").is_some() {
            let message = answer["error"]["message"].as_str().unwrap();
            // Too deep for the log (refused before the append), or for the request line
            // itself (refused as unparseable JSON).
            assert!(
                message.contains("levels deep at /data/message/")
                    || message.contains("recursion limit exceeded"),
                "{levels}: {message}"
            );
            if message.contains("levels deep") {
                // The log is named once.
                assert!(
                    message.starts_with(&format!("session log {}: event at seq 6 refused: session event \"assistant/message\" nests more than 127 levels deep at /data/message/", log.display())),
                    "{levels}: {message}"
                );
            }
            eprintln!("{levels} levels: {message}");
            assert_eq!(lines(&log), before, "{levels}: refused, yet appended");
            refused += 1;
        } else {
            accepted += 1;
        }
        s.ok("close_session", json!({"session": log}));
        drop(s);
        // Another process opens what was acknowledged, and derives the next request.
        let replay = d.run(&["replay", "--session", log.to_str().unwrap()]);
        replay.ok();
        let appended = d.run(&[
            "tool-result",
            "--session",
            log.to_str().unwrap(),
            "--call-id",
            "toolu_1",
            "--content",
            "ok",
        ]);
        if answer.get("error").is_none() {
            appended.ok();
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn a_context_management_report_nested_around_the_depth_limit_is_refused_or_reads_back() {
    // Anthropic's report of the context edits it applied enters at the reply's top level
    // and is written three levels deeper, at /data/message/provider/context_management.
    let d = Deployment::new("");
    let mut accepted = 0;
    let mut refused = 0;
    for levels in [100usize, 118, 120, 121, 122, 124] {
        let log = d.path(&format!("report-{levels}.jsonl"));
        let mut s = Served::start(&[], &d.path("cache"));
        s.ok("step", json!({"session": log, "route": {"name": "anthropic-messages", "model": "claude-opus-4-8", "options": {"max_tokens": 64}}, "user": ["hi"]}));
        let before = lines(&log);
        let reply = json!({"type": "message", "role": "assistant", "content": [
            {"type": "compaction", "content": "Earlier turns, summarised."},
            {"type": "text", "text": "Done."}],
            "context_management": {"applied_edits": nested(levels)}});
        let answer = s.call("append_assistant", json!({"session": log, "reply": reply}));
        if answer.get("error").is_some() {
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("levels deep at /data/message/provider/context_management")
                    || message.contains("recursion limit exceeded"),
                "{levels}: {message}"
            );
            assert_eq!(lines(&log), before, "{levels}: refused, yet appended");
            refused += 1;
        } else {
            accepted += 1;
        }
        s.ok("close_session", json!({"session": log}));
        drop(s);
        // Another process reads what was acknowledged; the next request carries the
        // compaction block back, and never the report.
        let config = d.config();
        let step = d.run(&[
            "step",
            "--config",
            config.to_str().unwrap(),
            "--session",
            log.to_str().unwrap(),
            "--user",
            "next",
        ]);
        let request: Value = serde_json::from_str(step.ok()).unwrap();
        let text = request.to_string();
        assert!(!text.contains("applied_edits"), "{levels}: {text:.300}");
        if answer.get("error").is_none() {
            assert!(text.contains("Earlier turns, summarised."), "{levels}");
            let kept = std::fs::read_to_string(&log).unwrap();
            assert!(kept.contains("\"context_management\":{\"applied_edits\""));
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn tool_call_text_and_64_bit_numbers_go_back_exactly_as_sent() {
    let d = Deployment::new("");
    let log = d.path("n.jsonl");
    let mut s = Served::start(&[], &d.path("cache"));
    let big = "123456789012345678901234567890";
    let max = "18446744073709551615";
    // Options as raw JSON text (the largest 64-bit integer, -0.0); tool-call arguments as
    // text holding a 30-digit integer and 1e-400, which no double holds.
    let step = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"step","params":{{"session":{log:?},"route":{{"name":"chat-completions","model":"m","options":{{"seed":{max},"temperature":-0.0}}}},"user":["hi"]}}}}"#,
        log = log.to_str().unwrap()
    );
    s.send_line(step.as_bytes());
    let first = s.answer_text();
    assert!(
        first.contains(&format!(r#""seed":{max},"temperature":-0.0"#)),
        "{first}"
    );
    let reply = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"append_assistant","params":{{"session":{log:?},"reply":{{"role":"assistant","content":null,"tool_calls":[{{"id":"c1","type":"function","function":{{"name":"f","arguments":"{{\"n\":{big},\"x\":1e-400}}"}}}}]}}}}}}"#,
        log = log.to_str().unwrap()
    );
    s.send_line(reply.as_bytes());
    assert!(s.answer_text().contains(r#""result":{"seq""#));
    s.ok(
        "append_tool_result",
        json!({"session": log, "call_id": "c1", "content": "ok"}),
    );
    s.send_line(
        format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"step","params":{{"session":{:?}}}}}"#,
            log.to_str().unwrap()
        )
        .as_bytes(),
    );
    let second = s.answer_text();
    // The arguments' text is sent back as the provider wrote it.
    assert!(
        second.contains(&format!(r#""arguments":"{{\"n\":{big},\"x\":1e-400}}""#)),
        "{second}"
    );
    // (The log keeps the text too; the parsed object holds the nearest doubles.)
    // Replay, as raw text, is the step's request byte for byte.
    s.send_line(
        format!(
            r#"{{"jsonrpc":"2.0","id":10,"method":"request","params":{{"session":{:?}}}}}"#,
            log.to_str().unwrap()
        )
        .as_bytes(),
    );
    let replayed = s.answer_text();
    // (Numbers parse with their digits kept: the workspace's serde_json keeps them exact.)
    let request_of =
        |line: &str| serde_json::from_str::<Value>(line).unwrap()["result"]["request"].to_string();
    assert!(request_of(&replayed).contains(big));
    assert_eq!(request_of(&replayed), request_of(&second));
}

#[test]
fn recorded_blocks_cannot_add_prompt_cache_breakpoints_through_serve() {
    let d = Deployment::new("");
    let log = d.path("c.jsonl");
    let mut s = Served::start(&[], &d.path("cache"));
    let route = json!({"name": "anthropic-messages", "model": "claude-sonnet-4-5", "options": {"max_tokens": 64}});
    s.ok(
        "step",
        json!({"session": log, "route": route, "user": ["hi"]}),
    );
    let marked = json!({"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}});
    s.ok(
        "append_assistant",
        json!({"session": log, "reply": {"role": "assistant", "content": [marked, marked, marked, marked]}}),
    );
    let step = s.ok("step", json!({"session": log, "user": ["again"]}));
    let request = step["request"].to_string();
    assert_eq!(request.matches("cache_control").count(), 2, "{request}");
    assert_eq!(step["cache"]["breakpoints"].as_array().unwrap().len(), 2);
}
