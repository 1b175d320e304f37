//! What an embedder pays for a step: the reference deployment loaded from a host.toml through
//! the public API (`HostConfig::load`, `Host::from_config`) and rendered with `Host::render`,
//! as `serve` and the in-process clients call it (on a thread that may block, so the assembly
//! runs in place) and as async code calls it (through the blocking gate). The plugins are
//! the reference's guests built against contract 0.1.0 and their 0.2.0 rebuilds. Each way's
//! time is broken down by phase with the host's own timings ([`Timings`]), and compared
//! with upstream's step when its bundle is given ([`crate::support::upstream`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use prompt_host::prompt::Timings;
use prompt_host::{Facts, Host, HostConfig, RuntimeConfig};
use prompt_host_tests::reference::{self, Guests, Reference};

/// The reference deployment of `guests` as `dir/host.toml` (the components beside it, the
/// compile cache in `cache`).
pub fn write_host_toml(dir: &Path, guests: &Guests, cache: &Path) -> PathBuf {
    let declare = dir.join("declare.wasm");
    let redactor = dir.join("redactor.wasm");
    std::fs::write(&declare, &guests.declare).expect("declare.wasm");
    std::fs::write(&redactor, &guests.redactor).expect("redactor.wasm");
    let path = dir.join("host.toml");
    std::fs::write(
        &path,
        Reference::new().host_toml(&declare, &redactor, cache),
    )
    .expect("host.toml");
    path
}

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

/// `rounds` renders of each way, interleaved; then (with a bundle) upstream's steps on the
/// same host.toml; prints medians, p99s, the phase breakdown and the ratios.
pub fn host_render_side_by_side(rounds: usize) {
    let dir = tempfile::tempdir().expect("deployment dir");
    let cache = dir.path().join("cache");
    let (v1, v2) = (dir.path().join("v1"), dir.path().join("v2"));
    std::fs::create_dir_all(&v1).expect("v1 dir");
    std::fs::create_dir_all(&v2).expect("v2 dir");
    let toml_v1 = write_host_toml(&v1, &Guests::load(), &cache);
    let toml_v2 = write_host_toml(&v2, &Guests::load_v2(), &cache);
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
        ways.push(Way {
            label: format!("{contract} plugins, marked thread (serve, in-process)"),
            render: Box::new(move |facts| {
                prompt_host::blocking::allow_blocking(|| {
                    handle
                        .block_on(host.render(Some(&scope), facts))
                        .expect("render")
                        .prompt
                })
            }),
            total: Vec::new(),
            phases: Phases::default(),
        });
        let (scope, mt) = (reference::agent(0), &mt);
        // As async code calls it: the assembly goes through the blocking gate.
        ways.push(Way {
            label: format!("{contract} plugins, async caller (gate)"),
            render: Box::new(move |facts| {
                mt.block_on(host.render(Some(&scope), facts))
                    .expect("render")
                    .prompt
            }),
            total: Vec::new(),
            phases: Phases::default(),
        });
    }
    let expected = (ways[0].render)(facts());
    for way in &ways {
        assert_eq!((way.render)(facts()), expected, "{}", way.label);
    }
    for round in 0..rounds {
        for k in 0..ways.len() {
            let i = (round + k) % ways.len();
            let way = &mut ways[i];
            // Every other round is timed whole, the others with the host's timings (which
            // cost a little themselves).
            if round % 2 == 0 {
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
    let upstream = crate::support::upstream::Upstream::from_env()
        .map(|u| u.warm(&toml_v1, 5, rounds.max(2_000)));
    let upstream_median = upstream
        .as_ref()
        .map(|v| v["step_us"]["median"].as_f64().unwrap_or(f64::NAN));
    println!("\nHost::render on the reference deployment from host.toml, µs ({rounds} rounds, interleaved)");
    println!(
        "  {:<48} {:>7} {:>7} | {:>8} {:>8} {:>6} {:>9} {:>6} {:>10} | ÷ upstream",
        "way", "median", "p99", "assemble", "dyn text", "tools", "listeners", "render", "rest",
    );
    for way in &mut ways {
        let total = median(&mut way.total);
        let p = &mut way.phases;
        let (assemble, render) = (median(&mut p.assemble), median(&mut p.render));
        println!(
            "  {:<48} {:>7.1} {:>7.1} | {:>8.1} {:>8.1} {:>6.1} {:>9.1} {:>6.1} {:>10.1} | {}",
            way.label,
            total,
            p99(&mut way.total),
            assemble,
            median(&mut p.dynamic_text),
            median(&mut p.tools),
            median(&mut p.listeners),
            render,
            median(&mut p.rest),
            upstream_median.map_or("-".into(), |u| format!("{:.3}", total / u)),
        );
    }
    if let Some(v) = &upstream {
        println!(
            "  upstream step (assemble + render, Node {}): median {:.1} µs, p99 {:.1} µs, min {:.1} µs",
            v["node"],
            v["step_us"]["median"].as_f64().unwrap_or(f64::NAN),
            v["step_us"]["p99"].as_f64().unwrap_or(f64::NAN),
            v["step_us"]["min"].as_f64().unwrap_or(f64::NAN),
        );
    }
    println!("  (median and p99 from untimed rounds; the phases from the other rounds, with the host's timings on: assemble includes the gate and the calls; dyn text = dynamic sections, contexts and variables; listeners = the outermost listener, which runs the others; rest = that round's total less assemble and render)");
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
