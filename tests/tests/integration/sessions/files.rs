//! What the real binary does with each kind of file given as a session log, through
//! `prompt-host step --session` and through `prompt-host serve`'s `step` method: a log with a
//! torn last line, a log whose last event lacks only its newline, someone's notes, a FIFO,
//! `/dev/zero`, `/dev/full`, a directory, a headerless log written by earlier releases, a log
//! of a future format version and an empty file.
//!
//! For every case: the child finishes within a deadline (it is killed and the test fails
//! otherwise), a file that is not a prompt-host log keeps its checksum, every acknowledged
//! event of a valid log survives byte for byte, and an error names the file.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use prompt_host::session::USER_MESSAGE;
use prompt_host::session::{Message, MessageData, NewEvent, Session, SurfaceIntent, HEADER};

use crate::integration::support::cli::{bin, Deployment};

const HOST_TOML: &str = "[prompt]\npersona = \"You are terse.\"\n";

/// How long one child may take before it is killed and the case fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// What the file is before the run, and so what must hold after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A valid log: the step succeeds and every acknowledged line is still there, first.
    Kept,
    /// A refusal naming the file with this text; the file is unchanged.
    Refused(&'static str),
}

struct Case {
    name: &'static str,
    expect: Expect,
    /// Builds the file in `dir` and returns its path and its acknowledged lines (the events
    /// of a valid log, with its header when it has one).
    make: fn(&Path) -> (PathBuf, Vec<String>),
}

fn user(text: &str) -> NewEvent {
    NewEvent::message(
        USER_MESSAGE,
        MessageData::new(Message::user_text(text)),
        SurfaceIntent::append(),
    )
}

/// A log with a header and `n` acknowledged events, and its lines.
fn valid_log(path: &Path, n: usize) -> Vec<String> {
    let (mut session, _) = Session::open(path).unwrap();
    for i in 0..n {
        session.append(user(&format!("event {i}"))).unwrap();
    }
    drop(session);
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(text.lines().next(), Some(HEADER));
    text.lines().map(str::to_string).collect()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "torn last line",
            expect: Expect::Kept,
            make: |dir| {
                let path = dir.join("torn.jsonl");
                let lines = valid_log(&path, 3);
                let mut file = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                file.write_all(br#"{"type":"user/message","seq":3,"time":17"#)
                    .unwrap();
                (path, lines)
            },
        },
        Case {
            name: "complete last event without its newline",
            expect: Expect::Kept,
            make: |dir| {
                let path = dir.join("unterminated.jsonl");
                let lines = valid_log(&path, 3);
                std::fs::write(&path, lines.join("\n")).unwrap();
                (path, lines)
            },
        },
        Case {
            name: "someone's notes",
            expect: Expect::Refused(
                "is not a prompt-host session log (its first line is neither the session-log \
                 header nor a session event); refusing to modify it",
            ),
            make: |dir| {
                let path = dir.join("notes.txt");
                std::fs::write(&path, "my notes").unwrap();
                (path, Vec::new())
            },
        },
        Case {
            name: "FIFO",
            expect: Expect::Refused("is a FIFO, not a regular file"),
            make: |dir| {
                let path = dir.join("fifo");
                let status = Command::new("mkfifo").arg(&path).status().unwrap();
                assert!(status.success());
                (path, Vec::new())
            },
        },
        Case {
            name: "/dev/zero",
            expect: Expect::Refused("is a character device, not a regular file"),
            make: |_| ("/dev/zero".into(), Vec::new()),
        },
        Case {
            name: "/dev/full",
            expect: Expect::Refused("is a character device, not a regular file"),
            make: |_| ("/dev/full".into(), Vec::new()),
        },
        Case {
            name: "directory",
            expect: Expect::Refused("is a directory, not a regular file"),
            make: |dir| {
                let path = dir.join("logs");
                std::fs::create_dir(&path).unwrap();
                (path, Vec::new())
            },
        },
        Case {
            name: "headerless log of an earlier release",
            expect: Expect::Kept,
            make: |dir| {
                let path = dir.join("legacy.jsonl");
                let lines = valid_log(&path, 3)[1..].to_vec();
                std::fs::write(&path, lines.join("\n") + "\n").unwrap();
                (path, lines)
            },
        },
        Case {
            name: "future format version",
            expect: Expect::Refused("is format version 2; this prompt-host reads version 1"),
            make: |dir| {
                let path = dir.join("future.jsonl");
                let lines = valid_log(&path, 2);
                let v2 = lines[0].replace("\"version\":1", "\"version\":2");
                std::fs::write(&path, format!("{v2}\n{}\n{}\n", lines[1], lines[2])).unwrap();
                (path, Vec::new())
            },
        },
        Case {
            name: "empty file",
            expect: Expect::Kept,
            make: |dir| {
                let path = dir.join("empty.jsonl");
                std::fs::write(&path, "").unwrap();
                (path, Vec::new())
            },
        },
    ]
}

/// What a run left, to compare with what was there before.
#[derive(Debug, PartialEq, Eq)]
enum Snapshot {
    /// A regular file's length and checksum.
    File(u64, u64),
    /// A FIFO (never read).
    Fifo,
    /// A device (never read).
    Device,
    /// A directory and its entries.
    Dir(Vec<String>),
}

fn snapshot(path: &Path) -> Snapshot {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path).unwrap();
    let ty = meta.file_type();
    if ty.is_file() {
        let bytes = std::fs::read(path).unwrap();
        let mut hasher = DefaultHasher::new();
        bytes.hash(&mut hasher);
        Snapshot::File(bytes.len() as u64, hasher.finish())
    } else if ty.is_fifo() {
        Snapshot::Fifo
    } else if ty.is_char_device() || ty.is_block_device() {
        Snapshot::Device
    } else {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Snapshot::Dir(names)
    }
}

/// A finished child.
struct Finished {
    success: bool,
    stdout: String,
    stderr: String,
}

/// Wait for `child` at most `DEADLINE`; kill it and fail the test past that.
fn finish(mut child: Child, what: &str) -> Finished {
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {DEADLINE:?}; killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Finished {
        success: status.success(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn spawn(d: &Deployment, args: &[&str], stdin: Stdio) -> Child {
    Command::new(bin())
        .args(args)
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn prompt-host")
}

/// The outcome of one `step` on `log`: `Ok(notices on stderr)` or `Err(error message)`.
fn step_cli(d: &Deployment, log: &Path, what: &str) -> Result<String, String> {
    let config = d.config();
    let child = spawn(
        d,
        &[
            "step",
            "--config",
            config.to_str().unwrap(),
            "--session",
            log.to_str().unwrap(),
            "--user",
            "hello",
        ],
        Stdio::null(),
    );
    let run = finish(child, what);
    if run.success {
        let request: serde_json::Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", run.stdout));
        assert!(request["messages"].is_array(), "{what}: {request}");
        Ok(run.stderr)
    } else {
        assert!(run.stdout.is_empty(), "{what}: {}", run.stdout);
        Err(run.stderr)
    }
}

/// The same through `serve`: one `step` request line, one response line.
fn step_serve(d: &Deployment, log: &Path, what: &str) -> Result<String, String> {
    let config = d.config();
    let mut child = spawn(
        d,
        &["serve", "--config", config.to_str().unwrap()],
        Stdio::piped(),
    );
    let request = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "step",
        "params": {"session": log, "user": ["hello"]},
    });
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{request}").unwrap();
    // End of input ends the server once it has answered.
    drop(stdin);
    let run = finish(child, what);
    assert!(run.success, "{what}: serve failed: {}", run.stderr);
    let mut lines = run.stdout.lines();
    let response: serde_json::Value = serde_json::from_str(lines.next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{what}: no JSON response ({e}): {}", run.stdout));
    assert_eq!(lines.next(), None, "{what}: one request, one response");
    assert_eq!(response["id"], 1, "{what}: {response}");
    match response.get("error") {
        None => {
            assert!(
                response["result"]["request"]["messages"].is_array(),
                "{what}: {response}"
            );
            Ok(run.stderr)
        }
        Some(error) => Err(error["message"].as_str().unwrap().to_string()),
    }
}

/// The lines of the file at `path` (a regular file).
fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn events_in(lines: &[String]) -> usize {
    lines.iter().filter(|l| l.as_str() != HEADER).count()
}

type Transport = fn(&Deployment, &Path, &str) -> Result<String, String>;

fn run_matrix(transport: &str, step: Transport) {
    let mut summary = Vec::new();
    for case in cases() {
        let d = Deployment::new(HOST_TOML);
        let what = format!("{transport}: {}", case.name);
        let (path, acknowledged) = (case.make)(d.dir.path());
        let before = snapshot(&path);
        let started = Instant::now();
        let outcome = step(&d, &path, &what);
        let took = started.elapsed();
        match (case.expect, outcome) {
            (Expect::Kept, Ok(notices)) => {
                let after = lines_of(&path);
                assert_eq!(
                    &after[..acknowledged.len()],
                    &acknowledged[..],
                    "{what}: an acknowledged line changed"
                );
                assert!(
                    events_in(&after) > events_in(&acknowledged),
                    "{what}: the step appended nothing"
                );
                if acknowledged.first().map(String::as_str) == Some(HEADER)
                    || acknowledged.is_empty()
                {
                    assert_eq!(after[0], HEADER, "{what}");
                } else {
                    assert!(!after.iter().any(|l| l == HEADER), "{what}: header added");
                }
                summary.push(format!(
                    "{what}: kept {} events, now {} ({took:?}){}",
                    events_in(&acknowledged),
                    events_in(&after),
                    if notices.trim().is_empty() {
                        String::new()
                    } else {
                        format!("; {}", notices.trim())
                    }
                ));
                if transport == "step" {
                    match case.name {
                        "torn last line" => assert!(
                            notices.contains(&format!(
                                "session log {}: recovered from a torn last line (40 bytes cut off)",
                                path.display()
                            )),
                            "{what}: {notices}"
                        ),
                        "complete last event without its newline" => assert!(
                            notices.contains("lacked its final newline; kept it"),
                            "{what}: {notices}"
                        ),
                        _ => assert!(notices.is_empty(), "{what}: {notices}"),
                    }
                }
            }
            (Expect::Refused(text), Err(message)) => {
                assert!(
                    message.contains(&format!("{} {text}", path.display())),
                    "{what}: the error does not name the file with {text:?}: {message}"
                );
                assert_eq!(snapshot(&path), before, "{what}: the file was changed");
                summary.push(format!(
                    "{what}: refused ({took:?}): {}",
                    message.lines().last().unwrap_or_default()
                ));
            }
            (expect, outcome) => panic!("{what}: expected {expect:?}, got {outcome:?}"),
        }
    }
    for line in summary {
        eprintln!("{line}");
    }
}

#[test]
fn step_file_matrix() {
    run_matrix("step", step_cli);
}

#[test]
fn serve_file_matrix() {
    run_matrix("serve", step_serve);
}
