//! The in-process side of the client step-latency benchmark
//! (`clients/python/bench/step_latency.py --in-process`): the same deployment, scope, facts
//! and conversation as the client drives through `prompt-host serve`, stepped by the library
//! itself, so the two can be compared in one run. Prints one JSON line of figures.
//!
//! ```text
//! step-inprocess --config host.toml --log PATH [--scope S] [--steps N] [--warmup N]
//!                [--first N] [--fact K=V]...
//! ```
//!
//! Each step is `Host::step` with one user text, timed, then the model's scripted reply
//! (`Host::append_assistant`), untimed, as the client benchmark does. An existing log is
//! continued (the benchmark alternates rounds of this and of the client); `--first` numbers
//! the steps' texts. Prints every timed step, in ms (`step_ms`), and each step with its
//! request then written as the HTTP body's JSON (`step_and_body_ms`), as an agent sends it.

use std::path::PathBuf;

use std::time::Instant;

use prompt_host::session::{AssistantReply, Session};
use prompt_host::{Facts, Host, HostConfig, RuntimeConfig, StepOptions};

/// With `--features mimalloc`: the allocator of the binary and the wheel (the library leaves
/// the choice to its embedder; without the feature this is the system allocator).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Args {
    config: PathBuf,
    log: PathBuf,
    scope: String,
    steps: usize,
    warmup: usize,
    first: usize,
    facts: Vec<(String, String)>,
}

fn args() -> Args {
    let mut a = Args {
        config: PathBuf::new(),
        log: PathBuf::new(),
        scope: "agent:1".into(),
        steps: 300,
        warmup: 10,
        first: 0,
        facts: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--config" => a.config = value().into(),
            "--log" => a.log = value().into(),
            "--scope" => a.scope = value(),
            "--steps" => a.steps = value().parse().expect("--steps N"),
            "--warmup" => a.warmup = value().parse().expect("--warmup N"),
            "--first" => a.first = value().parse().expect("--first N"),
            "--fact" => {
                let fact = value();
                let (k, v) = fact.split_once('=').expect("--fact K=V");
                a.facts.push((k.into(), v.into()));
            }
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn main() {
    let a = args();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let config = HostConfig::load(&a.config).expect("host.toml");
    let host = runtime
        .block_on(async { Host::from_config(&config, RuntimeConfig::default()) })
        .expect("host");
    let (mut session, _) = Session::open(&a.log).expect("session log");
    let facts = || {
        a.facts
            .iter()
            .fold(Facts::new(), |f, (k, v)| f.with(k.as_str(), v.as_str()))
    };
    let mut times = Vec::with_capacity(a.steps);
    // The request written as its HTTP body right after the step, as an agent sends it.
    let mut wire = Vec::with_capacity(a.steps);
    for i in a.first..a.first + a.warmup + a.steps {
        let options = StepOptions::default()
            .user_texts(vec![format!("Request number {i}: review the diff.")]);
        let started = Instant::now();
        let outcome = runtime
            .block_on(host.step(&mut session, Some(&a.scope), facts(), &options))
            .expect("step");
        let elapsed = started.elapsed();
        let body = serde_json::to_vec(&outcome.1.request).expect("request as JSON");
        let written = started.elapsed();
        std::hint::black_box(body);
        std::hint::black_box(outcome);
        if i >= a.first + a.warmup {
            times.push(elapsed.as_secs_f64() * 1e3);
            wire.push(written.as_secs_f64() * 1e3);
        }
        let reply =
            AssistantReply::default().with_text(format!("Reviewed change {i}: looks good."));
        host.append_assistant(&mut session, &reply)
            .expect("assistant reply");
    }
    println!(
        "{}",
        serde_json::json!({ "step_ms": times, "step_and_body_ms": wire })
    );
}
