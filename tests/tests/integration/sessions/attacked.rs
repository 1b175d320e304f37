//! The session log under attack, across processes: two processes appending to one log take
//! turns through the exclusive lock (the one without it gets a clear error) and the log stays
//! whole; a write past the file-size limit (a full disk, as far as the writer can tell) fails
//! with a clear error and leaves the log valid and usable; on a real full or read-only
//! filesystem (a tiny tmpfs, when this process may mount one) the same; a log edited by hand
//! into garbage is refused with the line number (or, when its header is gone, as not a
//! session log) and left untouched.
//!
//! Children are this test binary re-executed with an env var naming their job; run without
//! it, the child tests return at once.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use prompt_host::session::USER_MESSAGE;
use prompt_host::session::{
    AppendError, Message, MessageData, NewEvent, OpenError, Session, SurfaceIntent,
};

const CHILD_ENV: &str = "PROMPT_HOST_SESSION_ATTACK_CHILD";
const CHILD_PATH_ENV: &str = "PROMPT_HOST_SESSION_ATTACK_PATH";

fn user(text: impl Into<String>) -> NewEvent {
    NewEvent::message(
        USER_MESSAGE,
        MessageData::new(Message::user_text(text)),
        SurfaceIntent::append(),
    )
}

/// This test binary, running only `test` (a child job).
fn child(test: &str, job: &str, path: &Path) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        &format!("integration::sessions::attacked::{test}"),
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, job)
    .env(CHILD_PATH_ENV, path);
    cmd
}

/// A child's line without the `test <name> ... ` that libtest prints before the first one.
fn payload(line: &str) -> &str {
    match line.rfind(" ... ") {
        Some(at) => &line[at + 5..],
        None => line,
    }
}

fn job() -> Option<(String, PathBuf)> {
    let job = std::env::var(CHILD_ENV).ok()?;
    let path = std::env::var_os(CHILD_PATH_ENV)?;
    Some((job, PathBuf::from(path)))
}

/// Child jobs:
/// - `hold`: open the log, append 10 events, print `HELD`, then hold it until stdin closes.
/// - `turns:<tag>`: 10 rounds of (open, retrying while locked; append 5; close), printing
///   `LOCKED` for every refused open and `ACK <seq>` for every append.
/// - `fsize`: (run under a small file-size limit) append one 64 KiB event, which must fail,
///   then a small one, which must succeed; prints `BIG <error>` and `SMALL <seq>`.
#[test]
fn session_child() {
    let Some((job, path)) = job() else {
        return;
    };
    let out = std::io::stdout();
    let say = |line: String| {
        let mut o = out.lock();
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    };
    if job == "hold" {
        let (mut session, _) = Session::open(&path).unwrap_or_else(|e| panic!("{e}"));
        for i in 0..10 {
            session.append(user(format!("held {i}"))).unwrap();
        }
        say("HELD".into());
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    } else if let Some(tag) = job.strip_prefix("turns:") {
        for round in 0..10 {
            let mut session = loop {
                match Session::open(&path) {
                    Ok((s, _)) => break s,
                    Err(OpenError::Locked { .. }) => {
                        say("LOCKED".into());
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(e) => panic!("{e}"),
                }
            };
            for i in 0..5 {
                let event = session
                    .append(user(format!("{tag} round {round} event {i}")))
                    .unwrap_or_else(|e| panic!("{e}"));
                say(format!("ACK {}", event.seq));
            }
        }
    } else if job == "fsize" {
        let (mut session, _) = Session::open(&path).unwrap_or_else(|e| panic!("{e}"));
        match session.append(user("x".repeat(64 << 10))) {
            Ok(e) => say(format!("BIG-OK {}", e.seq)),
            Err(e) => say(format!("BIG {e}")),
        }
        match session.append(user("small")) {
            Ok(e) => say(format!("SMALL {}", e.seq)),
            Err(e) => say(format!("SMALL-ERR {e}")),
        }
    }
}

#[test]
fn a_second_process_is_refused_with_a_clear_error_while_the_first_holds_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.jsonl");
    let mut holder = child("session_child", "hold", &path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let started = Instant::now();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.ends_with("HELD") => break,
            Some(Ok(_)) => {}
            other => panic!("holder ended early: {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(60));
    }
    // This process: refused, with the path in the message, and nothing written.
    let before = std::fs::read(&path).unwrap();
    let err = Session::open(&path).unwrap_err();
    assert!(matches!(err, OpenError::Locked { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "session log {} is locked by another process",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Released when the holder exits.
    drop(holder.stdin.take());
    assert!(holder.wait().unwrap().success());
    let (mut session, report) = Session::open(&path).unwrap();
    assert_eq!(report.events, 10);
    session.append(user("after the holder")).unwrap();
}

#[test]
fn two_processes_appending_take_turns_and_the_log_stays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.jsonl");
    // An existing (empty) log: a missing one is locked only by the first append, so two
    // processes starting it at once would see one of them refused at that append
    // (`AppendError::CreatedMeanwhile`) instead of taking turns at open.
    std::fs::write(&path, b"").unwrap();
    let spawn = |tag: &str| {
        child("session_child", &format!("turns:{tag}"), &path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn("a"), spawn("b"));
    let read = |c: &mut std::process::Child| {
        let out = c.stdout.take().unwrap();
        std::thread::spawn(move || {
            let (mut acks, mut locked) = (Vec::new(), 0);
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                // The first line a child prints follows libtest's `test … ... ` on one line.
                let line = payload(&line);
                if let Some(seq) = line.strip_prefix("ACK ") {
                    acks.push(seq.parse::<u64>().unwrap());
                } else if line == "LOCKED" {
                    locked += 1;
                }
            }
            (acks, locked)
        })
    };
    let (ra, rb) = (read(&mut a), read(&mut b));
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let ((acks_a, locked_a), (acks_b, locked_b)) = (ra.join().unwrap(), rb.join().unwrap());
    eprintln!(
        "two writers: {} + {} appends, {} + {} refused opens",
        acks_a.len(),
        acks_b.len(),
        locked_a,
        locked_b
    );
    assert_eq!(acks_a.len() + acks_b.len(), 100);
    // Every acknowledged seq is distinct: no two appends claimed the same slot.
    let mut all: Vec<u64> = acks_a.iter().chain(&acks_b).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..100).collect::<Vec<_>>());
    let (session, report) = Session::open(&path).unwrap();
    assert_eq!((report.events, report.recovered_torn_bytes), (100, 0));
    for seq in acks_a {
        let text = session
            .event(seq)
            .unwrap()
            .message()
            .unwrap()
            .simple_text()
            .unwrap();
        assert!(text.starts_with("a round "), "{seq}: {text}");
    }
    for seq in acks_b {
        let text = session
            .event(seq)
            .unwrap()
            .message()
            .unwrap()
            .simple_text()
            .unwrap();
        assert!(text.starts_with("b round "), "{seq}: {text}");
    }
}

#[test]
fn a_write_past_the_file_size_limit_fails_cleanly_and_the_log_stays_valid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("limited.jsonl");
    {
        let (mut s, _) = Session::open(&path).unwrap();
        for i in 0..3 {
            s.append(user(format!("before {i}"))).unwrap();
        }
    }
    let before = std::fs::read(&path).unwrap();
    assert!(before.len() < 2048, "{}", before.len());
    // RLIMIT_FSIZE of 8 blocks (4 or 8 KiB, depending on the shell's block size) and SIGXFSZ
    // ignored (inherited across exec), so the write fails with EFBIG instead of killing the
    // process: what a writer sees on a full disk, minus the errno.
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 8 && exec \"$0\" \"$@\"")
        .arg(exe)
        .args([
            "--exact",
            "integration::sessions::attacked::session_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "fsize")
        .env(CHILD_PATH_ENV, &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let big = stdout
        .lines()
        .find_map(|l| payload(l).strip_prefix("BIG "))
        .unwrap_or_else(|| panic!("no BIG line: {stdout}"));
    eprintln!("append past RLIMIT_FSIZE: {big}");
    assert!(
        big.starts_with(&format!(
            "session log {}: writing event at seq 3 failed: ",
            path.display()
        )),
        "{big}"
    );
    assert!(big.contains("File too large"), "{big}");
    // The failed write was rolled back: the session stayed usable and the small append got
    // the very next seq.
    assert!(stdout.lines().any(|l| payload(l) == "SMALL 3"), "{stdout}");
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&before) && after.ends_with(b"\n"));
    let (session, report) = Session::open(&path).unwrap();
    assert_eq!((report.events, report.recovered_torn_bytes), (4, 0));
    assert_eq!(
        session
            .event(3)
            .unwrap()
            .message()
            .unwrap()
            .simple_text()
            .unwrap(),
        "small"
    );
}

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop; `None` when this
/// process may not mount (the test it is for then skips, saying so: [`skip`]).
pub(crate) struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    pub(crate) fn mount(test: &str, size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        let why = match out {
            Ok(o) if o.status.success() => return Some(Self { dir }),
            Ok(o) => format!(
                "cannot mount a tmpfs here ({}); the full-disk and read-only cases need root \
                 with CAP_SYS_ADMIN",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("cannot run mount ({e}); the full-disk and read-only cases"),
        };
        skip(test, &why);
        None
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn remount(&self, mode: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "remount {mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// A test that cannot run here says so where `.ci/run`'s closing summary finds it: a line
/// `SKIPPED: <test>: <why>` written to stderr past libtest's capture (which keeps what a
/// passing test prints to itself). Under CI (`CI` set: it runs as root, where the test can
/// run) a skip is a failure instead.
pub(crate) fn skip(test: &str, why: &str) {
    // The name as libtest shows it: the module path without the crate's name.
    let test = test.split_once("::").map_or(test, |(_crate, name)| name);
    if std::env::var_os("CI").is_some() {
        panic!("{test} must run under CI, but {why}");
    }
    let why = why.replace(['\n', '\r'], " ");
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

#[test]
fn a_full_filesystem_fails_the_append_with_a_clear_error_and_loses_nothing() {
    let test = concat!(
        module_path!(),
        "::a_full_filesystem_fails_the_append_with_a_clear_error_and_loses_nothing"
    );
    let Some(fs) = Tmpfs::mount(test, "64k") else {
        return;
    };
    let path = fs.path().join("full.jsonl");
    let (mut session, _) = Session::open(&path).unwrap();
    let mut acked = 0u64;
    let err = loop {
        match session.append(user("y".repeat(3000))) {
            Ok(e) => {
                assert_eq!(e.seq, acked);
                acked += 1;
            }
            Err(e) => break e,
        }
        assert!(acked < 1000, "a 64 KiB tmpfs never filled up");
    };
    eprintln!("full tmpfs after {acked} appends: {err}");
    assert!(matches!(err, AppendError::Io { .. }), "{err}");
    assert!(err.to_string().contains("No space left on device"), "{err}");
    assert!(
        err.to_string().contains(&format!(
            "session log {}: writing event at seq {acked} failed",
            path.display()
        )),
        "{err}"
    );
    // The partial line was rolled back; a smaller event may still fit, and every
    // acknowledged one is on disk.
    let _ = session.append(user("z"));
    let held = session.events().len();
    drop(session);
    let (session, report) = Session::open(&path).unwrap();
    assert_eq!(report.recovered_torn_bytes, 0);
    assert_eq!(report.events, held);
    assert!(held as u64 >= acked);
    drop(session);

    // Read-only: opening fails clearly, an existing log (opened for appending) as a new one
    // (whose directory is not writable); the log is intact once the filesystem is writable
    // again.
    fs.remount("ro");
    let err = Session::open(&path).unwrap_err();
    eprintln!("read-only filesystem: {err}");
    assert!(matches!(err, OpenError::Io { .. }), "{err}");
    assert!(err.to_string().contains("Read-only file system"), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("session log {}: ", path.display())),
        "{err}"
    );
    let err = Session::open(fs.path().join("new.jsonl")).unwrap_err();
    assert!(err.to_string().contains("Read-only file system"), "{err}");
    fs.remount("rw");
    let (_, report) = Session::open(&path).unwrap();
    assert_eq!((report.events, report.recovered_torn_bytes), (held, 0));
}

#[test]
fn a_log_edited_into_garbage_is_refused_with_the_line_number_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edited.jsonl");
    {
        let (mut s, _) = Session::open(&path).unwrap();
        for i in 0..4 {
            s.append(user(format!("event {i}"))).unwrap();
        }
    }
    let good = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let with_line = |at: usize, replacement: &[u8]| -> Vec<u8> {
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if i == at {
                out.extend_from_slice(replacement);
            } else {
                out.extend_from_slice(l.as_bytes());
            }
            out.push(b'\n');
        }
        out
    };
    let cases: Vec<(&str, Vec<u8>, usize, &str)> = vec![
        (
            "binary",
            with_line(1, b"\x00\xff\xfe garbage"),
            2,
            "malformed session event",
        ),
        (
            "blank line",
            with_line(2, b""),
            3,
            "malformed session event",
        ),
        (
            "not an object",
            with_line(1, b"[1,2,3]"),
            2,
            "malformed session event",
        ),
        (
            "duplicated line",
            with_line(3, lines[2].as_bytes()),
            4,
            "is not contiguous",
        ),
        (
            "truncated json",
            with_line(1, &lines[1].as_bytes()[..20]),
            2,
            "malformed",
        ),
        (
            "invalid utf-8 in a string",
            with_line(3, &{
                let mut l = lines[3].as_bytes().to_vec();
                let at = l.len() - 5;
                l[at] = 0xC3;
                l
            }),
            4,
            "malformed",
        ),
        (
            "shell garbage",
            with_line(4, b"rm -rf / # oops"),
            5,
            "malformed",
        ),
    ];
    for (what, bytes, line, needle) in cases {
        std::fs::write(&path, &bytes).unwrap();
        let err = Session::open(&path).unwrap_err();
        eprintln!("{what}: {err}");
        assert!(
            matches!(err, OpenError::Line { line: l, .. } if l == line),
            "{what}: {err}"
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("session log {}, line {line}: ", path.display())),
            "{what}: {msg}"
        );
        assert!(msg.contains(needle), "{what}: {msg}");
        // Left for a human to repair: not truncated, not rewritten.
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{what}");
    }
    // Line 1 is the format header; a file whose first line is neither a header nor an event
    // is not a session log at all, and is refused as such, untouched.
    for garbage in [&b"rm -rf / # oops"[..], b"[1,2,3]", b""] {
        let bytes = with_line(0, garbage);
        std::fs::write(&path, &bytes).unwrap();
        let err = Session::open(&path).unwrap_err();
        assert!(matches!(err, OpenError::NotALog { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{} is not a prompt-host session log (its first line is neither the \
                 session-log header nor a session event); refusing to modify it",
                path.display()
            )
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}
