//! The session log: one durable append (write + fsync), one whole step of the reference
//! deployment (its appends, in one durable write), and opening + replaying + deriving the messages
//! of a 100,000-event log. `cargo bench -p prompt-host-tests --bench session`.

mod support;

use std::hint::black_box;
use std::path::Path;

use prompt_host::projection::{run_step, StepInput};
use prompt_host::prompt::{join_context_sections, render_context_sections, render_prompt};
use prompt_host::session::{ContentBlock, Message, MessageData, NewEvent, Session, SurfaceIntent};
use prompt_host::session::{ASSISTANT_MESSAGE, STEP_START, USER_MESSAGE};
use prompt_host_tests::reference::{self, Reference};
use serde_json::json;

const EVENTS: usize = 100_000;

/// A directory on the disk the workspace is on (not a tmpfs), so fsync does real work.
fn disk_dir() -> tempfile::TempDir {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-session");
    std::fs::create_dir_all(&target).expect("bench dir");
    tempfile::tempdir_in(target).expect("tempdir")
}

/// A 100k-event log: steps of `step/start`, a user message and an assistant message (~200
/// bytes of text each). Written on a tmpfs (fsync is free there), then copied to disk.
fn big_log(dest: &Path) {
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("shm dir")
    } else {
        tempfile::tempdir().expect("tmp dir")
    };
    let path = scratch.path().join("big.jsonl");
    let (mut session, _) = Session::open(&path).expect("open");
    let text = "Read the file, then change only the lines the task names; run the tests after each edit and report failures verbatim, quoting paths exactly as the tool printed them.";
    let mut i = 0;
    while session.events().len() < EVENTS {
        let event = match i % 3 {
            0 => NewEvent::log(STEP_START, json!({ "step": i / 3 })),
            1 => NewEvent::message(
                USER_MESSAGE,
                MessageData::new(Message::user_text(format!("{i}: {text}"))),
                SurfaceIntent::append(),
            ),
            _ => NewEvent::message(
                ASSISTANT_MESSAGE,
                MessageData::new(Message::new(
                    "assistant",
                    vec![ContentBlock::text(format!("{i}: {text}"))],
                )),
                SurfaceIntent::append(),
            ),
        };
        session.append(event).expect("append");
        i += 1;
    }
    drop(session);
    std::fs::copy(&path, dest).expect("copy log");
}

fn main() {
    let mut c = support::criterion();
    let dir = disk_dir();

    // Rendered inputs of one reference step (native path: the log does not care).
    let registry = Reference::registry(1);
    let _fibers = Reference::new().deploy_native(&registry, 1);
    let assembly = registry
        .assemble_blocking(Some(&reference::agent(0)), Reference::context())
        .expect("assemble");
    let prompt = render_prompt(&assembly).expect("render");
    let contexts = render_context_sections(&assembly).expect("contexts");
    let snapshot = join_context_sections(&contexts);
    let user = vec!["Fix the failing test in tests/cli.rs.".to_string()];

    let mut group = c.benchmark_group("session");
    {
        let (mut session, _) = Session::open(dir.path().join("append.jsonl")).expect("open");
        group.bench_function("append-fsync", |b| {
            b.iter(|| {
                let event = NewEvent::message(
                    USER_MESSAGE,
                    MessageData::new(Message::user_text("one more user message")),
                    SurfaceIntent::append(),
                );
                black_box(session.append(event).expect("append").seq)
            })
        });
    }
    {
        let (mut session, _) = Session::open(dir.path().join("step.jsonl")).expect("open");
        let mut events_per_step = 0;
        let route = prompt_host::session::route::RouteContext::default();
        group.bench_function("step-fsync", |b| {
            b.iter(|| {
                let before = session.events().len();
                let input = StepInput {
                    rendered_prompt: &prompt,
                    context_sections: &contexts,
                    context_snapshot: &snapshot,
                    tools: &assembly.tools,
                    route: &route,
                    starts_series: false,
                    user_texts: &user,
                    retry_of: None,
                    origins: None,
                };
                let outcome = run_step(&mut session, &input).expect("step");
                events_per_step = session.events().len() - before;
                black_box(outcome.request.messages().len())
            })
        });
        println!("a reference step appends {events_per_step} events (in one durable write)");
    }
    let big = dir.path().join("big.jsonl");
    big_log(&big);
    let size = std::fs::metadata(&big).map(|m| m.len()).unwrap_or(0);
    println!("100k-event log: {:.1} MiB", size as f64 / (1 << 20) as f64);
    group.sample_size(10);
    group.bench_function("open-replay-derive-100k", |b| {
        b.iter(|| {
            let (session, report) = Session::open(&big).expect("open");
            assert_eq!(report.events, EVENTS);
            black_box(session.derive_messages().len())
        })
    });
    group.finish();
    c.final_summary();
}
