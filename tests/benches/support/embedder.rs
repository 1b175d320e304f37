//! What an embedder pays for a step: the reference deployment loaded from a host.toml through
//! the public API (`HostConfig::load`, `Host::from_config`) and rendered with `Host::render`,
//! as `serve` and the in-process clients call it (on a thread that may block, so the assembly
//! runs in place) and as async code calls it (through the blocking gate). The plugins are
//! the reference's guests built against contract 0.1.0 and their 0.2.0 rebuilds. Each way's
//! time is broken down by phase with the host's own timings ([`Timings`]), and compared
//! with upstream's step when its bundle is given ([`crate::support::upstream`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use prompt_host::prompt::Timings;
use prompt_host::{Facts, Host, HostConfig, RuntimeConfig};
use prompt_host_tests::reference::{self, Guests, Reference};

fn facts() -> Facts {
    Facts::new()
        .with("model", "deepseek-v4")
        .with("cwd", "/work/project")
}

/// One way of calling `Host::render`, with its samples.
struct Way<'a> {
    label: String,
    render: Box<dyn Fn(Facts) -> String + 'a>,
    total: Vec<f64>,
    phases: Phases,
}

impl<'a> Way<'a> {
    fn new(label: String, render: Box<dyn Fn(Facts) -> String + 'a>) -> Self {
        Self {
            label,
            render,
            total: Vec::new(),
            phases: Phases::default(),
        }
    }
}

/// Per-phase samples, in µs, from the host's timings of a render.
#[derive(Default)]
struct Phases {
    assemble: Vec<f64>,
    dynamic_text: Vec<f64>,
    tools: Vec<f64>,
    listeners: Vec<f64>,
    render: Vec<f64>,
    /// The render timed whole, less its assemble and render phases: the facts, the span, the
    /// result and, for an async caller, the gate's way back.
    rest: Vec<f64>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn p99(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * 0.99) as usize]
}

/// `rounds` renders of each way, interleaved and then in blocks; then (with a bundle)
/// upstream's steps on the same host.toml; prints medians, p99s, the phase breakdown and the
/// ratios, one table per way of taking turns.
pub fn host_render_side_by_side(rounds: usize) {
    let dir = tempfile::tempdir().expect("deployment dir");
    let cache = dir.path().join("cache");
    let (v1, v2) = (dir.path().join("v1"), dir.path().join("v2"));
    std::fs::create_dir_all(&v1).expect("v1 dir");
    std::fs::create_dir_all(&v2).expect("v2 dir");
    let toml_v1 = Reference::new().write_deployment(&v1, &Guests::load(), &cache);
    let toml_v2 = Reference::new().write_deployment(&v2, &Guests::load_v2(), &cache);
    let load = |path: &Path| {
        let config = HostConfig::load(path).expect("host.toml");
        Host::from_config(&config, RuntimeConfig::default()).expect("from_config")
    };
    let hosts = [("0.1.0", load(&toml_v1)), ("0.2.0", load(&toml_v2))];
    let mt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let handle = mt.handle().clone();
    let scope = reference::agent(0);
    let mut ways: Vec<Way> = Vec::new();
    for (contract, host) in &hosts {
        let (scope, handle) = (scope.clone(), handle.clone());
        // As `serve` runs a session's request and an in-process client's thread calls.
        ways.push(Way::new(
            format!("{contract} plugins, marked thread (serve, in-process)"),
            Box::new(move |facts| {
                prompt_host::blocking::allow_blocking(|| {
                    handle
                        .block_on(host.render(Some(&scope), facts))
                        .expect("render")
                        .prompt
                })
            }),
        ));
        // As async code calls it: asking for the assembly on its own thread
        // (`Facts::on_caller_thread`), or through the blocking gate.
        for (how, on_caller_thread) in [("on_caller_thread", true), ("(gate)", false)] {
            let (scope, mt) = (reference::agent(0), &mt);
            ways.push(Way::new(
                format!("{contract} plugins, async caller {how}"),
                Box::new(move |facts| {
                    mt.block_on(host.render(Some(&scope), facts.on_caller_thread(on_caller_thread)))
                        .expect("render")
                        .prompt
                }),
            ));
        }
    }
    let expected = (ways[0].render)(facts());
    for way in &ways {
        assert_eq!((way.render)(facts()), expected, "{}", way.label);
    }
    // Interleaved (each way takes one render in turn), then in blocks (each way takes
    // `BLOCK` renders in a row before the next way's turn): an embedder calls one way
    // repeatedly, as upstream's loop does, while interleaving spreads a burst of load over
    // every way alike but lets the gated ways' thread wake-ups land on the others.
    let mut tables = Vec::new();
    for block in [1, BLOCK] {
        for way in &mut ways {
            way.total.clear();
            way.phases = Phases::default();
        }
        run_ways(&mut ways, rounds, block);
        tables.push((block, summarize(&mut ways)));
    }
    // Upstream's step in several fresh Node processes: its median differs from one process
    // to the next by up to 2x (306-318 µs or 516-586 µs on this VM), so the ratios are taken
    // against the fastest process's median, the one least in prompt-host's favour.
    let step_median = |v: &serde_json::Value| v["step_us"]["median"].as_f64().unwrap_or(f64::NAN);
    let upstream_runs: Vec<serde_json::Value> = crate::support::upstream::Upstream::from_env()
        .map(|u| {
            (0..UPSTREAM_PROCESSES)
                .map(|_| u.warm(&toml_v1, 5, rounds.max(2_000)))
                .collect()
        })
        .unwrap_or_default();
    let upstream = upstream_runs
        .iter()
        .min_by(|a, b| step_median(a).total_cmp(&step_median(b)))
        .cloned();
    let upstream_median = upstream.as_ref().map(step_median);
    for (block, rows) in &tables {
        let how = if *block == 1 {
            "interleaved".to_string()
        } else {
            format!("in blocks of {block}")
        };
        println!("\nHost::render on the reference deployment from host.toml, µs ({rounds} rounds, {how})");
        println!(
            "  {:<48} {:>7} {:>7} | {:>8} {:>8} {:>6} {:>9} {:>6} {:>10} | ÷ upstream",
            "way", "median", "p99", "assemble", "dyn text", "tools", "listeners", "render", "rest",
        );
        for row in rows {
            println!(
                "  {:<48} {:>7.1} {:>7.1} | {:>8.1} {:>8.1} {:>6.1} {:>9.1} {:>6.1} {:>10.1} | {}",
                row.label,
                row.median,
                row.p99,
                row.assemble,
                row.dynamic_text,
                row.tools,
                row.listeners,
                row.render,
                row.rest,
                upstream_median.map_or("-".into(), |u| format!("{:.3}", row.median / u)),
            );
        }
    }
    if let Some(v) = &upstream {
        let medians: Vec<String> = upstream_runs
            .iter()
            .map(|v| format!("{:.1}", step_median(v)))
            .collect();
        println!(
            "  upstream step (assemble + render, Node {}), the fastest of {} processes: median {:.1} µs, p99 {:.1} µs, min {:.1} µs (each process's median: {})",
            v["node"],
            upstream_runs.len(),
            step_median(v),
            v["step_us"]["p99"].as_f64().unwrap_or(f64::NAN),
            v["step_us"]["min"].as_f64().unwrap_or(f64::NAN),
            medians.join(", "),
        );
    }
    println!("  (median and p99 from untimed rounds; the phases from the other rounds, with the host's timings on: assemble includes the gate and the calls; dyn text = dynamic sections, contexts and variables; listeners = the outermost listener, which runs the others; rest = that round's total less assemble and render)");
    // The gate with nothing behind it: an empty closure handed to the blocking pool and
    // awaited, as the async caller's render awaits its assembly (two thread wake-ups).
    let mut handoff: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            mt.block_on(async { tokio::task::spawn_blocking(|| ()).await })
                .expect("spawn_blocking");
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let (m, p) = (median(&mut handoff), p99(&mut handoff));
    println!(
        "  the gate alone (an empty closure through spawn_blocking, awaited): median {m:.1} µs, p99 {p:.1} µs{}",
        upstream_median.map_or(String::new(), |u| format!(" = {:.3} of upstream's step", m / u))
    );
}

/// Fresh Node processes upstream's step is timed in.
const UPSTREAM_PROCESSES: usize = 3;

/// Renders in a row per way's turn, for the blocked table.
const BLOCK: usize = 250;

/// `rounds` renders of each way, `block` in a row per turn, the ways taking turns at going
/// first. Every other render is timed whole, the others with the host's timings (which cost
/// a little themselves).
fn run_ways(ways: &mut [Way], rounds: usize, block: usize) {
    let turns = rounds.div_ceil(block);
    for turn in 0..turns {
        for k in 0..ways.len() {
            let way = &mut ways[(turn + k) % ways.len()];
            for j in 0..block {
                if j % 2 == 0 && (block > 1 || turn % 2 == 0) {
                    let started = Instant::now();
                    let prompt = (way.render)(facts());
                    way.total.push(started.elapsed().as_secs_f64() * 1e6);
                    drop(std::hint::black_box(prompt));
                } else {
                    let timings = Timings::new();
                    let started = Instant::now();
                    drop((way.render)(facts().timings(Arc::clone(&timings))));
                    let total = started.elapsed().as_secs_f64() * 1e6;
                    record(&mut way.phases, total, &timings.report());
                }
            }
        }
    }
}

/// One way's figures in one table.
struct Row {
    label: String,
    median: f64,
    p99: f64,
    assemble: f64,
    dynamic_text: f64,
    tools: f64,
    listeners: f64,
    render: f64,
    rest: f64,
}

fn summarize(ways: &mut [Way]) -> Vec<Row> {
    ways.iter_mut()
        .map(|way| {
            let p = &mut way.phases;
            Row {
                label: way.label.clone(),
                median: median(&mut way.total),
                p99: p99(&mut way.total),
                assemble: median(&mut p.assemble),
                dynamic_text: median(&mut p.dynamic_text),
                tools: median(&mut p.tools),
                listeners: median(&mut p.listeners),
                render: median(&mut p.render),
                rest: median(&mut p.rest),
            }
        })
        .collect()
}

/// One render's timings as phase samples.
fn record(phases: &mut Phases, total: f64, report: &prompt_host::prompt::TimingReport) {
    let phase = |name: &str| {
        report
            .phases
            .iter()
            .filter(|p| p.phase == name)
            .map(|p| p.micros)
            .sum::<f64>()
    };
    let calls = |kinds: &[&str]| {
        report
            .calls
            .iter()
            .filter(|c| kinds.contains(&c.kind))
            .map(|c| c.micros)
            .sum::<f64>()
    };
    phases.assemble.push(phase("assemble"));
    phases.render.push(phase("render"));
    phases
        .rest
        .push(total - phase("assemble") - phase("render"));
    phases
        .dynamic_text
        .push(calls(&["section", "context", "variable"]));
    phases.tools.push(calls(&["tool provider"]));
    phases.listeners.push(
        report
            .calls
            .iter()
            .filter(|c| c.kind == "listener")
            .map(|c| c.micros)
            .fold(0.0, f64::max),
    );
}
