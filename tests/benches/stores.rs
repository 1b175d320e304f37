//! The session stores side by side in one run: one durable append, one step of the reference
//! deployment, and picking a session up again (open and replay) at 100, 1,000 and 10,000
//! turns — a log file and a SQLite database on the workspace's disk, and PostgreSQL when
//! `PROMPT_HOST_BENCH_POSTGRES` names a database (`scripts/postgres` starts a local one).
//! `cargo bench -p prompt-host-tests --bench stores`.

mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};

use prompt_host::projection::{run_step, StepInput};
use prompt_host::prompt::{join_context_sections, render_context_sections, render_prompt};
use prompt_host::session::{
    ContentBlock, Event, Message, MessageData, NewEvent, Session, SurfaceIntent,
};
use prompt_host::session::{ASSISTANT_MESSAGE, STEP_START, USER_MESSAGE};
use prompt_host_tests::reference::{self, Reference};
use serde_json::json;

const TURNS: [usize; 3] = [100, 1_000, 10_000];

/// A directory on the disk the workspace is on (not a tmpfs), so syncs do real work.
fn disk_dir() -> tempfile::TempDir {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-stores");
    std::fs::create_dir_all(&target).expect("bench dir");
    tempfile::tempdir_in(target).expect("tempdir")
}

/// The events of a conversation of `turns` turns (a step start, a user message and an
/// assistant reply each, ~200 bytes of text apiece), made in a scratch log.
fn conversation(turns: usize) -> Vec<Event> {
    let scratch = tempfile::tempdir().expect("tmp dir");
    let (mut session, _) = Session::open(scratch.path().join("c.jsonl")).expect("open");
    let text = "Read the file, then change only the lines the task names; run the tests after each edit and report failures verbatim, quoting paths exactly as the tool printed them.";
    let mut events = Vec::with_capacity(turns * 3);
    for turn in 0..turns {
        events.push(NewEvent::log(STEP_START, json!({ "step": turn })));
        events.push(NewEvent::message(
            USER_MESSAGE,
            MessageData::new(Message::user_text(format!("{turn}: {text}"))),
            SurfaceIntent::append(),
        ));
        events.push(NewEvent::message(
            ASSISTANT_MESSAGE,
            MessageData::new(Message::new(
                "assistant",
                vec![ContentBlock::text(format!("{turn}: {text}"))],
            )),
            SurfaceIntent::append(),
        ));
    }
    session.append_all(events).expect("append");
    session.events().to_vec()
}

/// How to name a session of one store by its id.
type Namer = Box<dyn Fn(&str) -> PathBuf>;

/// The stores of this run: a name for the report, and how to name a session in it.
fn stores(dir: &Path) -> Vec<(&'static str, Namer)> {
    let files = dir.to_path_buf();
    let db = dir.join("sessions.db");
    let mut stores: Vec<(&'static str, Namer)> = vec![
        (
            "file",
            Box::new(move |id: &str| files.join(format!("{id}.jsonl"))),
        ),
        (
            "sqlite",
            Box::new(move |id: &str| PathBuf::from(format!("sqlite:{}#{id}", db.display()))),
        ),
    ];
    match std::env::var("PROMPT_HOST_BENCH_POSTGRES") {
        Ok(url) => {
            let run = std::process::id();
            stores.push((
                "postgres",
                Box::new(move |id: &str| PathBuf::from(format!("{url}#{run}-{id}"))),
            ));
        }
        Err(_) => println!(
            "PostgreSQL not measured: PROMPT_HOST_BENCH_POSTGRES names no database (scripts/postgres starts one)"
        ),
    }
    stores
}

fn main() {
    let mut c = support::criterion();
    let dir = disk_dir();
    let stores = stores(dir.path());

    let registry = Reference::registry(1);
    let _fibers = Reference::new().deploy_native(&registry, 1);
    let assembly = registry
        .assemble_blocking(Some(&reference::agent(0)), Reference::context())
        .expect("assemble");
    let prompt = render_prompt(&assembly).expect("render");
    let contexts = render_context_sections(&assembly).expect("contexts");
    let snapshot = join_context_sections(&contexts);
    let user = vec!["Fix the failing test in tests/cli.rs.".to_string()];
    let route = prompt_host::session::route::RouteContext::default();

    let mut group = c.benchmark_group("stores");
    for (store, name) in &stores {
        let (mut session, _) = Session::open(name("append")).expect("open");
        group.bench_function(format!("append-{store}"), |b| {
            b.iter(|| {
                let event = NewEvent::message(
                    USER_MESSAGE,
                    MessageData::new(Message::user_text("one more user message")),
                    SurfaceIntent::append(),
                );
                black_box(session.append(event).expect("append").seq)
            })
        });
        let (mut session, _) = Session::open(name("step")).expect("open");
        group.bench_function(format!("step-{store}"), |b| {
            b.iter(|| {
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
                black_box(run_step(&mut session, &input).expect("step").request)
            })
        });
    }
    group.sample_size(10);
    for turns in TURNS {
        let events = conversation(turns);
        // What reading alone costs (every line parsed, nothing validated or derived): the
        // most a snapshot of the surface could save is the rest of a pickup.
        let lines: Vec<Vec<u8>> = events.iter().map(|e| e.to_line().expect("line")).collect();
        group.bench_function(format!("parse-{turns}"), |b| {
            b.iter(|| {
                for line in &lines {
                    black_box(Event::from_line(line).expect("parse"));
                }
            })
        });
        for (store, name) in &stores {
            let session = name(&format!("pickup-{turns}"));
            let (mut target, _) = Session::open(&session).expect("open");
            target.import_events(events.clone()).expect("import");
            drop(target);
            group.bench_function(format!("pickup-{turns}-{store}"), |b| {
                b.iter(|| {
                    let (opened, report) = Session::open(&session).expect("open");
                    assert_eq!(report.events, turns * 3);
                    black_box(opened.derive_messages().len())
                })
            });
        }
    }
    group.finish();
    for (store, _) in stores.iter().skip(1) {
        for bench in [
            "append",
            "step",
            "pickup-100",
            "pickup-1000",
            "pickup-10000",
        ] {
            support::ratio(
                &format!("{bench}: {store} against the log file"),
                "stores",
                &format!("{bench}-{store}"),
                &format!("{bench}-file"),
            );
        }
    }
    c.final_summary();
}
