//! What compaction buys a long conversation: the next step of a 4,000-turn conversation
//! (8,001 messages on its surface) beside the same step after `compact` replaced all but
//! its newest 100 turns by a summary, both measured in this run on the same disk. Also
//! picking each log up (open, replay, derive the messages): the log keeps what a compaction
//! replaced, so that cost is not what compaction cuts.
//! `cargo bench -p prompt-host-tests --bench compaction`; docs/benchmarks.md §18.

mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::BatchSize;
use prompt_host::projection::{run_step, StepInput, StepOutcome};
use prompt_host::prompt::{join_context_sections, render_context_sections, render_prompt};
use prompt_host::prompt::{NamedText, ToolSchema};
use prompt_host::session::route::RouteContext;
use prompt_host::session::{compact, CompactionRange, ContentBlock, Message, MessageData};
use prompt_host::session::{NewEvent, Session, SurfaceIntent, ASSISTANT_MESSAGE, USER_MESSAGE};
use prompt_host_tests::reference::{self, Reference};

const TURNS: usize = 4_000;
const KEPT_TURNS: usize = 100;

/// A directory on the disk the workspace is on (not a tmpfs), so fsync does real work.
fn disk_dir() -> tempfile::TempDir {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-compaction");
    std::fs::create_dir_all(&target).expect("bench dir");
    tempfile::tempdir_in(target).expect("tempdir")
}

/// A text of about 200 bytes, as a turn of a coding agent's conversation carries.
fn turn_text(role: &str, turn: usize) -> String {
    format!(
        "{role} {turn}: read src/lib.rs, change only the lines the task names, run the tests \
         after each edit and report failures verbatim, quoting paths exactly as printed."
    )
}

/// A step's inputs: the reference deployment's rendering for agent 0.
struct Rendering {
    prompt: String,
    contexts: Vec<NamedText>,
    snapshot: String,
    tools: Vec<ToolSchema>,
}

impl Rendering {
    fn reference() -> Self {
        let registry = Reference::registry(1);
        let _fibers = Reference::new().deploy_native(&registry, 1);
        let assembly = registry
            .assemble_blocking(Some(&reference::agent(0)), Reference::context())
            .expect("assemble");
        let contexts = render_context_sections(&assembly).expect("contexts");
        Self {
            prompt: render_prompt(&assembly).expect("render"),
            snapshot: join_context_sections(&contexts),
            contexts,
            tools: assembly.tools.clone(),
        }
    }

    /// One step with `user`'s message.
    fn step(&self, session: &mut Session, user: &[String]) -> StepOutcome {
        let route = RouteContext::default();
        let input = StepInput {
            rendered_prompt: &self.prompt,
            context_sections: &self.contexts,
            context_snapshot: &self.snapshot,
            tools: &self.tools,
            route: &route,
            starts_series: false,
            user_texts: user,
            retry_of: None,
            origins: None,
        };
        run_step(session, &input).expect("step")
    }
}

/// A conversation of `TURNS` turns: each a step with the user's message and the assistant's
/// answer (the first step commits the system prompt and the runtime context). Written on a
/// tmpfs, where fsync is free, then copied to `dest`.
fn long_conversation(rendering: &Rendering, dest: &Path) {
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() {
        tempfile::tempdir_in(shm).expect("shm dir")
    } else {
        tempfile::tempdir().expect("tmp dir")
    };
    let path = scratch.path().join("long.jsonl");
    let (mut session, _) = Session::open(&path).expect("open");
    rendering.step(&mut session, &[turn_text("user", 0)]);
    let answer = |turn| {
        NewEvent::message(
            ASSISTANT_MESSAGE,
            MessageData::new(Message::new(
                "assistant",
                vec![ContentBlock::text(turn_text("assistant", turn))],
            )),
            SurfaceIntent::append(),
        )
    };
    // The turns after the first are appended as their messages: a step per turn would
    // derive 4,000 growing requests only to build the log.
    for turn in 1..TURNS {
        session.append(answer(turn - 1)).expect("answer");
        let question = NewEvent::message(
            USER_MESSAGE,
            MessageData::new(Message::user_text(turn_text("user", turn))),
            SurfaceIntent::append(),
        );
        session.append(question).expect("question");
    }
    session.append(answer(TURNS - 1)).expect("answer");
    drop(session);
    std::fs::copy(&path, dest).expect("copy log");
}

/// A fresh copy of a log, opened; the file goes when this is dropped (after the measure).
struct Copy {
    session: Session,
    path: PathBuf,
}

impl Copy {
    /// Copy `log` beside it and open the copy: each measured step starts from the same log.
    fn of(log: &Path, n: &mut usize) -> Self {
        *n += 1;
        let path = log.with_extension(format!("{n}.jsonl"));
        std::fs::copy(log, &path).expect("copy");
        let (session, _) = Session::open(&path).expect("open");
        Self { session, path }
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn main() {
    let mut c = support::criterion();
    let dir = disk_dir();
    let rendering = Rendering::reference();

    let whole = dir.path().join("whole.jsonl");
    long_conversation(&rendering, &whole);
    let compacted = dir.path().join("compacted.jsonl");
    std::fs::copy(&whole, &compacted).expect("copy");
    {
        let (mut session, _) = Session::open(&compacted).expect("open");
        let range = CompactionRange::keeping(&session, KEPT_TURNS).expect("a range");
        let summary = "The user and the assistant worked through 3,900 edits of src/lib.rs; \
                       the tests pass after each.";
        let done = compact(&mut session, &range, summary).expect("compact");
        println!(
            "compacted seqs {}..={}: {} nodes replaced by one summary",
            range.start_seq,
            range.end_seq,
            done.replaced.len()
        );
    }

    let user = vec!["Now fix the failing test in tests/cli.rs.".to_string()];
    for (name, log) in [("whole", &whole), ("compacted", &compacted)] {
        let (mut session, _) = Session::open(log).expect("open");
        let outcome = rendering.step(&mut session, &user);
        let body = serde_json::to_vec(&outcome.request.body).expect("json");
        println!(
            "{name}: {} events in the log, the next request {} messages, {:.1} KiB",
            session.events().len(),
            outcome.request.messages().len(),
            body.len() as f64 / 1024.0
        );
    }

    // A session kept open, as a server keeps it: the median of 30 steps after one, each
    // adding its user's message (the compacted log's request grows from 204 messages by 15 %
    // over them, the whole log's by 0.4 %).
    for (name, log) in [("whole", &whole), ("compacted", &compacted)] {
        let mut n = 1_000;
        let mut copy = Copy::of(log, &mut n);
        rendering.step(&mut copy.session, &user);
        let mut times: Vec<f64> = (0..30)
            .map(|_| {
                let started = std::time::Instant::now();
                black_box(rendering.step(&mut copy.session, &user));
                started.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        println!(
            "a step on the open session, {name}: {:.2} ms at the median of 30",
            support::median(&mut times)
        );
    }

    let mut group = c.benchmark_group("compaction");
    group.sample_size(20);
    let mut n = 0;
    for (name, log) in [("whole", &whole), ("compacted", &compacted)] {
        // Each step runs on a fresh copy of the log (made and opened outside the measure),
        // so every sample is the step after the 4,000th turn.
        group.bench_function(format!("step-{name}"), |b| {
            b.iter_batched(
                || Copy::of(log, &mut n),
                |mut copy| {
                    let outcome = rendering.step(&mut copy.session, &user);
                    black_box(outcome.request.messages().len());
                    copy
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_function(format!("open-derive-{name}"), |b| {
            b.iter(|| {
                let (session, _) = Session::open(log).expect("open");
                black_box(session.derive_messages().len())
            })
        });
    }
    group.finish();
    support::ratio(
        "a step after compacting 4,000 turns to 100",
        "compaction",
        "step-compacted",
        "step-whole",
    );
    support::ratio(
        "picking the log up after compacting",
        "compaction",
        "open-derive-compacted",
        "open-derive-whole",
    );
    c.final_summary();
}
