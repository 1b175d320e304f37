//! `serve` attacked from outside over its stdio: many sessions opened and closed, more logs
//! held open than allowed, answers nobody reads, replies of 100,000 tool calls beside a
//! quick request, ids that do not fit a float, a misspelt method.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::support::cli::{bin, Deployment};
use crate::integration::support::serve::{memory_of, Served};

#[test]
fn closed_sessions_free_what_they_held() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = Served::start(&[], &dir.path().join("cache"));
    let pid = served.pid();
    let round = |served: &mut Served, from: usize| {
        // Pipelined: every request first, then every answer.
        for i in from..from + 10_000 {
            let path = dir.path().join(format!("log-{i}.jsonl"));
            let request = json!({"jsonrpc": "2.0", "id": i, "method": "close_session", "params": {"session": path}});
            served.send_line(request.to_string().as_bytes());
        }
        for _ in 0..10_000 {
            let answer = served.answer();
            assert_eq!(answer["result"], json!({"closed": false}), "{answer}");
        }
    };
    // `Threads:` in /proc/PID/status, through the kB reader (×1024), once the server has
    // answered a request (its runtime's threads are up).
    let threads = || memory_of(pid, "Threads") / 1024;
    let warm_up = json!({"jsonrpc": "2.0", "id": "warm-up", "method": "scopes", "params": {}});
    served.send_line(warm_up.to_string().as_bytes());
    served.answer();
    let threads_at_start = threads();
    round(&mut served, 0);
    // A session never opened is closed without a worker or a blocking thread of its own
    // (before, 10,000 pipelined closes grew Tokio's blocking pool by up to 500 threads), and
    // the answers are written by the server's stdout thread (Tokio's `stdout` handed each
    // write to the blocking pool, which grew by 20 threads on a busy machine).
    assert!(
        threads() <= threads_at_start + 8,
        "{} threads after closing 10,000 sessions never opened, {threads_at_start} before",
        threads()
    );
    let before = memory_of(pid, "VmRSS");
    round(&mut served, 10_000);
    round(&mut served, 20_000);
    let after = memory_of(pid, "VmRSS");
    // Before the fix each closed session kept its queue: ~7 KiB each, 140 MB here.
    assert!(
        after < before + (20 << 20),
        "RSS grew from {before} to {after} bytes over 20,000 closed sessions"
    );
}

#[test]
fn a_server_holds_at_most_max_sessions_logs_open_closing_the_least_recently_used() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = Served::start(&["--max-sessions", "2"], &dir.path().join("cache"));
    let log = |i: usize| dir.path().join(format!("log-{i}.jsonl"));
    // The logs this server holds open, read from its descriptors.
    let open_logs = |pid: u32| -> Vec<String> {
        let mut held: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter(|target| target.extension().is_some_and(|e| e == "jsonl"))
            .map(|target| target.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        held.sort();
        held
    };
    for i in 0..5 {
        served.ok("append_assistant", json!({"session": log(i), "text": "hi"}));
        // Past two, the least recently used session was closed to make room.
        let expected: Vec<String> = (i.saturating_sub(1)..=i)
            .map(|j| format!("log-{j}.jsonl"))
            .collect();
        settles(
            || open_logs(served.pid()),
            &expected,
            &format!("after log {i}"),
        );
    }
    // A closed session opens again, whole: its second reply follows its first.
    served.ok(
        "append_assistant",
        json!({"session": log(0), "text": "again"}),
    );
    let text = std::fs::read_to_string(log(0)).unwrap();
    assert_eq!(
        text.lines().count(),
        3,
        "the header and both replies: {text}"
    );
    let expected = ["log-0.jsonl", "log-4.jsonl"].map(String::from).to_vec();
    settles(|| open_logs(served.pid()), &expected, "after log 0 again");
}

/// Wait (at most 20 s) for `seen` to give `expected`: a closed session's worker drops its
/// log on its own task, just after the request that closed it was answered.
fn settles(seen: impl Fn() -> Vec<String>, expected: &[String], what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let now = seen();
        if now == expected {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: the server holds {now:?}, expected {expected:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn ids_are_echoed_exactly_as_sent() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = Served::start(&[], &dir.path().join("cache"));
    for id in [
        "123456789012345678901234567890",
        "-0.0",
        "1e400",
        r#""\u00e9t\u00e9""#,
    ] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"scopes"}}"#);
        served.send_line(line.as_bytes());
        let answer = served.answer_text();
        assert_eq!(
            answer,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":[]}}"#),
            "{id}"
        );
    }
}

#[test]
fn an_unknown_method_gets_the_closest_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = Served::start(&[], &dir.path().join("cache"));
    let answer = served.call("stpe", json!({}));
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("method not found: stpe (did you mean \"step\"?); methods: describe, "),
        "{message}"
    );
    assert_eq!(answer["error"]["data"]["suggestion"], "step");
    let answer = served.call("zzzzzzzz", json!({}));
    assert!(
        answer["error"]["data"].get("suggestion").is_none(),
        "{answer}"
    );
}

#[test]
fn answers_nobody_reads_do_not_grow_the_server_without_bound() {
    // A prompt of 500 KB: every answer is half a megabyte.
    let persona = "p".repeat(500_000);
    let d = Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\npersona = {persona:?}\n"
    ));
    let mut child = Command::new(bin())
        .args(["serve", "--config", d.config().to_str().unwrap()])
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..400 {
            let request = json!({"jsonrpc": "2.0", "id": i, "method": "render", "params": {}});
            if stdin.write_all(format!("{request}\n").as_bytes()).is_err() {
                return;
            }
        }
        // Closed once everything was taken in.
    });
    // Nobody reads for a while: the server must stop taking requests in.
    std::thread::sleep(Duration::from_secs(4));
    let peak = memory_of(pid, "VmHWM");
    assert!(
        peak < 150 << 20,
        "peak resident set {peak} bytes with 400 unread 500 KB answers"
    );
    // Then every answer arrives, none lost.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ids = Vec::new();
    let mut line = String::new();
    while ids.len() < 400 {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the server ended early"
        );
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            answer["result"]["prompt"].as_str().map(str::len),
            Some(500_000)
        );
        ids.push(answer["id"].as_u64().unwrap());
    }
    writer.join().unwrap();
    ids.sort_unstable();
    assert_eq!(ids, (0..400).collect::<Vec<_>>());
    let _ = child.kill();
    let _ = child.wait();
    let mut rest = Vec::new();
    let _ = stdout.read_to_end(&mut rest);
}

#[test]
fn replies_of_100k_tool_calls_do_not_hold_up_a_quick_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = Served::start(&[], &dir.path().join("cache"));
    let calls: Vec<Value> = (0..100_000)
        .map(|i| json!({"id": format!("call-{i}"), "name": "n", "arguments": {}}))
        .collect();
    for (id, session) in [(1, "a.jsonl"), (2, "b.jsonl")] {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "append_assistant",
                             "params": {"session": dir.path().join(session), "tool_calls": calls}});
        served.send_line(request.to_string().as_bytes());
    }
    served.send_line(br#"{"jsonrpc":"2.0","id":3,"method":"describe"}"#);
    let started = Instant::now();
    let first = served.answer();
    assert_eq!(
        first["id"], 3,
        "describe waited for the long replies: {first}"
    );
    let rest = [served.answer(), served.answer()];
    for answer in &rest {
        assert_eq!(answer["result"]["seq"], 0, "{answer}");
    }
    eprintln!(
        "both replies of 100,000 calls answered in {:?}",
        started.elapsed()
    );
}
