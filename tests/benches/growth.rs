//! What grows with input, measured at several sizes so that the growth shows: the tool-call
//! id checks of a long reply, opening a log of many appends and replacements, `serve`'s
//! memory after many sessions were opened and closed, and `serve`'s memory while a client
//! leaves its answers unread. `cargo bench -p prompt-host-tests --bench growth`
//! (`-- quick` for the smaller sizes only, `-- replies` for the provider replies alone).
//! docs/benchmarks.md §9 and §11 have the figures.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use prompt_host::session::route::RouteName;
use prompt_host::session::{AssistantReply, Session, ToolCall};
use prompt_host::{Host, PromptConfig, RuntimeConfig};
use serde_json::json;

fn cli() -> &'static str {
    env!("CARGO_BIN_EXE_prompt-host-cli")
}

/// A reply of `n` tool calls appended to a log holding one reply of `n` calls already: the
/// median of `rounds` runs, in milliseconds.
fn reply_ms(n: usize, rounds: usize) -> f64 {
    let host = Host::new(PromptConfig::default(), RuntimeConfig::without_cache()).expect("host");
    let calls = |from: usize| -> Vec<ToolCall> {
        (from..from + n)
            .map(|i| ToolCall::new(format!("call-{i}"), "n", json!({})))
            .collect()
    };
    let mut times = Vec::new();
    for _ in 0..rounds {
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .expect("dir");
        let (mut session, _) = Session::open(dir.path().join("log.jsonl")).expect("open");
        let first = AssistantReply::default().with_tool_calls(calls(0));
        host.append_assistant(&mut session, &first).expect("first");
        let second = AssistantReply::default().with_tool_calls(calls(n));
        let started = Instant::now();
        host.append_assistant(&mut session, &second)
            .expect("second");
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    support::median(&mut times)
}

/// A provider's reply of `n` tool calls (`route`'s own shape, arguments as the provider
/// sends them) read and appended after one reply of `n` calls: the median of `rounds`
/// runs, in milliseconds. Reading parses every call's arguments and keeps the reply whole.
fn provider_reply_ms(route: RouteName, n: usize, rounds: usize) -> f64 {
    let host = Host::new(PromptConfig::default(), RuntimeConfig::without_cache()).expect("host");
    let reply = |from: usize| -> serde_json::Value {
        let ids = from..from + n;
        match route {
            RouteName::AnthropicMessages => json!({"role": "assistant", "content": ids
                .map(|i| json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": "n", "input": {"path": "src", "i": i}}))
                .collect::<Vec<_>>()}),
            RouteName::OpenaiResponses => json!(ids
                .map(|i| json!({"type": "function_call", "call_id": format!("call_{i}"), "name": "n", "arguments": format!("{{\"path\":\"src\",\"i\":{i}}}")}))
                .collect::<Vec<_>>()),
            _ => json!({"role": "assistant", "content": null, "tool_calls": ids
                .map(|i| json!({"id": format!("call_{i}"), "type": "function", "function": {"name": "n", "arguments": format!("{{\"path\":\"src\",\"i\":{i}}}")}}))
                .collect::<Vec<_>>()}),
        }
    };
    let mut times = Vec::new();
    for _ in 0..rounds {
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .expect("dir");
        let (mut session, _) = Session::open(dir.path().join("log.jsonl")).expect("open");
        host.append_reply(&mut session, Some(route), &reply(0))
            .expect("first");
        let second = reply(n);
        let started = Instant::now();
        host.append_reply(&mut session, Some(route), &second)
            .expect("second");
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    support::median(&mut times)
}

/// Opening a log of `n` user messages each replaced once (as a hand-edited log may be), in
/// milliseconds.
fn open_ms(n: u64) -> f64 {
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("dir");
    let path = dir.path().join("log.jsonl");
    let mut text = String::from("{\"prompt-host\":\"session-log\",\"version\":1}\n");
    let message = |seq: u64, op: serde_json::Value, sources: Option<serde_json::Value>| {
        let mut event = json!({
            "type": "user/message", "seq": seq, "time": 0, "surfaceOp": op,
            "data": {"message": {"id": format!("m{seq}"), "role": "user", "content": [{"type": "text", "text": "t"}]}},
        });
        if let Some(s) = sources {
            event["sourceEventSeqs"] = s;
        }
        event.to_string() + "\n"
    };
    for seq in 0..n {
        text.push_str(&message(seq, json!("append"), None));
    }
    // Each replacement targets a node near the end of the surface (the costly place for a
    // search from the front).
    for i in 0..n {
        let target = n - 1 - i;
        text.push_str(&message(
            n + i,
            json!({"op": "replace", "startSeq": target, "endSeq": target}),
            Some(json!([target])),
        ));
    }
    std::fs::write(&path, text).expect("write");
    let started = Instant::now();
    let (session, _) = Session::open(&path).expect("open");
    let took = started.elapsed().as_secs_f64() * 1e3;
    assert_eq!(session.events().len() as u64, 2 * n);
    took
}

/// A resident-set figure of `pid` in MB.
fn mb(pid: u32, field: &str) -> f64 {
    support::resident_kib(pid, field) as f64 / 1024.0
}

/// `serve`'s VmRSS before and after `n` `close_session` calls on distinct paths, and after
/// `n` more (memory that is freed does not grow with the second round).
fn sessions_mb(n: usize) -> (f64, f64, f64) {
    let dir = tempfile::tempdir().expect("dir");
    let mut child = Command::new(cli())
        .arg("serve")
        .env("PROMPT_HOST_CACHE_DIR", dir.path().join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let pid = child.id();
    let mut stdin = Some(child.stdin.take().expect("stdin"));
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let base = dir.path().to_path_buf();
    let mut round = |from: usize, count: usize| {
        let mut writer = stdin.take().expect("stdin");
        let base = base.clone();
        // Written from a thread while the answers are read here: neither pipe fills.
        let sender = std::thread::spawn(move || {
            for i in from..from + count {
                let request = json!({"jsonrpc": "2.0", "id": i, "method": "close_session",
                                     "params": {"session": base.join(format!("log-{i}.jsonl"))}});
                writer
                    .write_all(format!("{request}\n").as_bytes())
                    .expect("send");
            }
            writer
        });
        for _ in 0..count {
            line.clear();
            stdout.read_line(&mut line).expect("answer");
        }
        stdin = Some(sender.join().expect("sender"));
    };
    round(0, 1_000);
    std::thread::sleep(Duration::from_millis(200));
    let before = mb(pid, "VmRSS");
    round(1_000, n);
    std::thread::sleep(Duration::from_millis(200));
    let after = mb(pid, "VmRSS");
    round(1_000 + n, n);
    std::thread::sleep(Duration::from_millis(200));
    let again = mb(pid, "VmRSS");
    drop(stdin);
    let _ = child.wait();
    (before, after, again)
}

/// The peak resident set of `serve` while `count` answers of `bytes` each go unread for
/// three seconds, then are all read.
fn unread_mb(count: usize, bytes: usize) -> f64 {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("host.toml");
    let persona = "p".repeat(bytes);
    std::fs::write(
        &config,
        format!("[prompt]\ninclude_harness_identity = false\npersona = {persona:?}\n"),
    )
    .expect("host.toml");
    let mut child = Command::new(cli())
        .args(["serve", "--config", config.to_str().expect("utf-8")])
        .env("PROMPT_HOST_CACHE_DIR", dir.path().join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        for i in 0..count {
            let request = json!({"jsonrpc": "2.0", "id": i, "method": "render", "params": {}});
            if stdin.write_all(format!("{request}\n").as_bytes()).is_err() {
                return;
            }
        }
    });
    std::thread::sleep(Duration::from_secs(3));
    let peak = mb(pid, "VmHWM");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    for _ in 0..count {
        line.clear();
        stdout.read_line(&mut line).expect("answer");
    }
    let _ = writer.join();
    let _ = child.kill();
    let _ = child.wait();
    peak
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    println!("## provider replies: a reply of N tool calls read and appended after one of N (median of 3)");
    println!("| route | calls | ms | µs per call |");
    println!("|---|---|---|---|");
    let sizes: &[usize] = if quick { &[10_000] } else { &[10_000, 100_000] };
    for route in RouteName::ALL {
        for &n in sizes {
            let ms = provider_reply_ms(route, n, 3);
            println!("| {route} | {n} | {ms:.1} | {:.2} |", ms * 1e3 / n as f64);
        }
    }
    if std::env::args().any(|a| a == "replies") {
        return;
    }
    println!();
    println!("## tool-call id checks: a reply of N calls after one of N calls (median of 3)");
    println!("| calls | ms | µs per call |");
    println!("|---|---|---|");
    let sizes: &[usize] = if quick {
        &[10_000, 40_000]
    } else {
        &[10_000, 40_000, 100_000]
    };
    for &n in sizes {
        let ms = reply_ms(n, 3);
        println!("| {n} | {ms:.1} | {:.2} |", ms * 1e3 / n as f64);
    }
    println!();
    println!("## opening a log of N appends and N replacements");
    println!("| N | ms | µs per event |");
    println!("|---|---|---|");
    let sizes: &[u64] = if quick {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 200_000]
    };
    for &n in sizes {
        let ms = open_ms(n);
        println!("| {n} | {ms:.1} | {:.2} |", ms * 1e3 / (2 * n) as f64);
    }
    println!();
    println!("## serve: VmRSS after N close_session calls on distinct paths (after 1,000 first), and after N more");
    println!("| N | before MB | after N MB | after 2N MB |");
    println!("|---|---|---|---|");
    let sizes: &[usize] = if quick { &[20_000] } else { &[20_000, 200_000] };
    for &n in sizes {
        let (before, after, again) = sessions_mb(n);
        println!("| {n} | {before:.1} | {after:.1} | {again:.1} |");
    }
    println!();
    println!("## serve: peak VmHWM with N unread answers of 500 KB for 3 s");
    println!("| answers | peak MB |");
    println!("|---|---|");
    let counts: &[usize] = if quick { &[400] } else { &[400, 1_600] };
    for &count in counts {
        println!("| {count} | {:.1} |", unread_mb(count, 500_000));
    }
}
