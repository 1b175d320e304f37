//! Crash safety for real: a child process (this test binary, re-executed) appends events in
//! a loop and reports each acknowledged seq; the parent SIGKILLs it at random points after
//! its first acknowledged append and checks that every reopened log is valid and holds every
//! acknowledged append.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::session::event::{NewEvent, STEP_START, USER_MESSAGE};
use crate::session::{Message, MessageData, OpenError, Session, SurfaceIntent};

const WRITER_ENV: &str = "PROMPT_HOST_SESSION_CRASH_WRITER";
const WRITER_TEST: &str = "session::tests::crash::crash_writer_child";
/// How long a round waits for the writer's first acknowledged append: the writer is this
/// test binary started afresh, which a loaded machine can keep waiting for seconds.
const FIRST_ACK_WAIT: Duration = Duration::from_secs(120);

/// `ACK <seq> <id>`, as the writer prints each acknowledged append.
fn parse_ack(line: &str) -> Option<(u64, String)> {
    let mut parts = line.strip_prefix("ACK ")?.split(' ');
    let seq = parts.next()?.parse::<u64>().ok()?;
    Some((seq, parts.next()?.to_string()))
}

/// A tiny xorshift generator; the seed is printed so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    (nanos ^ u64::from(std::process::id())) | 1
}

/// The writer. Does nothing unless started by the parent test with the env var set.
#[test]
fn crash_writer_child() {
    let Ok(path) = std::env::var(WRITER_ENV) else {
        return;
    };
    // The previous writer was killed; its lock goes away with the process.
    let mut session = loop {
        match Session::open(&path) {
            Ok((session, _)) => break session,
            Err(OpenError::Locked { .. }) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("{e}"),
        }
    };
    let mut rng = Rng(seed());
    let stdout = std::io::stdout();
    loop {
        let roll = rng.below(10);
        let last = session.surface().nodes().last().copied();
        let event = if roll == 0 {
            NewEvent::log(STEP_START, json!({"step": rng.next() % 1000}))
        } else {
            // Sizes up to 64 KiB so a kill can land while a line is being written.
            let size = 1 << rng.below(17);
            let text = "x".repeat(size as usize);
            let data = MessageData::new(Message::user_text(text));
            let intent = match last {
                Some(seq) if roll == 1 => SurfaceIntent::replace_one(seq),
                _ => SurfaceIntent::append(),
            };
            NewEvent::message(USER_MESSAGE, data, intent)
        };
        let event = match session.append(event) {
            Ok(event) => event,
            Err(e) => panic!("{e}"),
        };
        let id = event.message().map_or("-", |m| m.id.as_str()).to_string();
        let seq = event.seq;
        let mut out = stdout.lock();
        let _ = writeln!(out, "ACK {seq} {id}");
        let _ = out.flush();
    }
}

#[test]
fn every_acknowledged_append_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.jsonl");
    let exe = std::env::current_exe().unwrap();
    let seed = seed();
    let mut rng = Rng(seed);
    let mut acked: HashMap<u64, String> = HashMap::new();
    let mut torn_recoveries = 0;
    for round in 0..20 {
        let mut child = Command::new(&exe)
            .args(["--exact", WRITER_TEST, "--nocapture", "--test-threads=1"])
            .env(WRITER_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (acks, acked_now) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Some(ack) = parse_ack(&line) else {
                    continue;
                };
                if acks.send(ack).is_err() {
                    break;
                }
            }
        });
        // The kill lands after the writer's first acknowledged append of this round, at a
        // random point from then on: on a loaded machine the writer may take seconds to
        // start, and a kill before its first append would prove nothing (and leave no log
        // in the first round).
        let first = acked_now.recv_timeout(FIRST_ACK_WAIT).unwrap_or_else(|e| {
            let _ = child.kill();
            let _ = child.wait();
            panic!("round {round}: no acknowledged append in {FIRST_ACK_WAIT:?} ({e}; seed {seed})")
        });
        acked.insert(first.0, first.1);
        std::thread::sleep(Duration::from_millis(rng.below(80)));
        child.kill().unwrap(); // SIGKILL on unix
        child.wait().unwrap();
        reader.join().unwrap();
        for (seq, id) in acked_now.try_iter() {
            acked.insert(seq, id);
        }
        // Half the rounds also leave a torn fragment, as a power cut mid-write would.
        if round % 2 == 1 {
            let mut file = OpenOptions::new().append(true).open(&path).unwrap();
            let cut = 1 + rng.below(40) as usize;
            file.write_all(&br#"{"type":"user/message","seq":999999,"time":1,"data""#[..cut])
                .unwrap();
        }
        check_log(&path, &acked, seed, &mut torn_recoveries);
    }
    println!(
        "crash test: seed {seed}, {} acknowledged appends, {torn_recoveries} torn tails recovered",
        acked.len()
    );
    // Each round acknowledged at least one append of its own before its kill.
    assert!(
        acked.len() >= 20,
        "{} acknowledged (seed {seed})",
        acked.len()
    );
    assert!(torn_recoveries >= 10, "seed {seed}");
}

fn check_log(path: &Path, acked: &HashMap<u64, String>, seed: u64, torn: &mut usize) {
    let (session, report) = match Session::open(path) {
        Ok(opened) => opened,
        Err(e) => panic!("reopen failed (seed {seed}): {e}"),
    };
    if report.recovered_torn_bytes > 0 {
        *torn += 1;
    }
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.is_empty() || bytes.ends_with(b"\n"), "seed {seed}");
    for (seq, id) in acked {
        let event = session
            .event(*seq)
            .unwrap_or_else(|| panic!("acknowledged seq {seq} lost (seed {seed})"));
        let found = event.message().map_or("-", |m| m.id.as_str());
        assert_eq!(found, id, "seq {seq} (seed {seed})");
    }
    assert_eq!(report.events, session.events().len());
}
