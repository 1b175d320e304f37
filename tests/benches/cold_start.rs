//! Cold start: a new host process (the `cold-start` binary) loading the reference
//! deployment's 12 plugins and running its first step, with a warm on-disk compile cache and
//! with none; the 12 plugins as the reference deploys them (2 distinct components) and as 12
//! distinct components. Prints min / median / max of each phase. Then the same deployment
//! as a host.toml: loaded in a fresh process (`Host::from_config` + first render, timed
//! inside the process), and rendered end to end by the `prompt-host render` command.
//! With `PROMPT_HOST_UPSTREAM_BUNDLE` set (tests/upstream/README.md), the host.toml part runs
//! upstream's service on the same host.toml too, a fresh Node process after each fresh
//! prompt-host process, and prints the ratios.
//! `cargo bench -p prompt-host-tests --bench cold_start`.

mod support;

use std::process::Command;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_cold-start");
const CLI: &str = env!("CARGO_BIN_EXE_prompt-host-cli");

#[derive(Default)]
struct Runs {
    wall: Vec<f64>,
    total: Vec<f64>,
    load: Vec<f64>,
    runtime: Vec<f64>,
    compiles: u64,
    disk_hits: u64,
    disk_rejected: u64,
}

fn run(args: &[String]) -> (f64, serde_json::Value) {
    let started = Instant::now();
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("run cold-start");
    let wall = started.elapsed().as_secs_f64() * 1e3;
    assert!(
        out.status.success(),
        "cold-start failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("json line");
    (wall, v)
}

fn measure(args: &[String], n: usize) -> Runs {
    let mut runs = Runs::default();
    for _ in 0..n {
        let (wall, v) = run(args);
        let ms = |k: &str| v[k].as_f64().unwrap_or(f64::NAN) / 1e3;
        runs.wall.push(wall);
        runs.total.push(ms("total_us"));
        runs.load.push(ms("load_us"));
        runs.runtime.push(ms("runtime_us"));
        runs.compiles = v["compiles"].as_u64().unwrap_or(0);
        runs.disk_hits = v["disk_hits"].as_u64().unwrap_or(0);
        runs.disk_rejected = v["disk_rejected"].as_u64().unwrap_or(0);
    }
    runs
}

fn stats(values: &[f64]) -> String {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    format!("{:>7.1} {:>7.1} {:>7.1}", v[0], median, v[v.len() - 1])
}

fn report(label: &str, runs: &Runs) {
    println!(
        "{label:<34} wall {}  in-process {}  of which engine {}  plugins {}  (compiles {}, disk hits {}, rejected {})",
        stats(&runs.wall),
        stats(&runs.total),
        stats(&runs.runtime),
        stats(&runs.load),
        runs.compiles,
        runs.disk_hits,
        runs.disk_rejected
    );
}

/// The reference deployment as a host.toml, warm: loaded in fresh processes (phases timed
/// inside), repeated in one process, and rendered by the command line.
fn host_toml(runs: usize) {
    let dir = tempfile::tempdir().expect("deployment dir");
    let arg = |extra: &[&str]| {
        let mut a = vec!["--host-toml".to_string(), dir.path().display().to_string()];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // Write the deployment and fill the compile cache; file identities are recorded only for
    // files unchanged for 2 s, so wait, then record them with one more load.
    run(&arg(&[]));
    std::thread::sleep(std::time::Duration::from_millis(2_200));
    run(&arg(&[]));
    let host_toml = dir.path().join("host.toml");
    let upstream = support::upstream::Upstream::from_env();
    let mut phases: [Vec<f64>; 5] = Default::default();
    let mut wall = Vec::new();
    // Ours (parse + load) and upstream's (parse + load), first load of a fresh process each,
    // taken in turn so that both see the same machine.
    let (mut ours_first, mut upstream_first, mut upstream_parse) = (vec![], vec![], vec![]);
    for _ in 0..runs {
        let (w, v) = run(&arg(&["--again", "5"]));
        wall.push(w);
        ours_first.push(
            (v["parse_us"].as_f64().unwrap_or(f64::NAN)
                + v["load_us"].as_f64().unwrap_or(f64::NAN))
                / 1e3,
        );
        if let Some(upstream) = &upstream {
            let (parse, load) = upstream.first_load(&host_toml);
            upstream_parse.push(parse);
            upstream_first.push(load);
        }
        for (i, key) in [
            "parse_us",
            "load_us",
            "first_render_us",
            "total_us",
            "again_min_us",
        ]
        .iter()
        .enumerate()
        {
            phases[i].push(v[key].as_f64().unwrap_or(f64::NAN) / 1e3);
        }
    }
    println!("\nreference deployment from host.toml, warm cache; ms as min / median / max");
    println!("  process wall (spawn to exit)            {}", stats(&wall));
    for (label, values) in [
        "  in process: parse host.toml             ",
        "  in process: Host::from_config (12 plugins)",
        "  in process: first render                ",
        "  in process: total (main to first prompt)",
        "  same process again: parse + load + render",
    ]
    .iter()
    .zip(&phases)
    {
        println!("{label} {}", stats(values));
    }
    if let Some(upstream) = &upstream {
        compare_loads(
            upstream,
            &host_toml,
            &ours_first,
            &upstream_first,
            &upstream_parse,
        );
    }
    let config = host_toml.display().to_string();
    let render = || {
        let started = Instant::now();
        let out = Command::new(CLI)
            .args([
                "render",
                "--config",
                &config,
                "--scope",
                "agent:0",
                "--fact",
                "model=deepseek-v4",
                "--fact",
                "cwd=/work/project",
            ])
            .output()
            .expect("prompt-host render");
        assert!(
            out.status.success(),
            "render failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        started.elapsed().as_secs_f64() * 1e3
    };
    render();
    let renders: Vec<f64> = (0..runs).map(|_| render()).collect();
    println!(
        "  `prompt-host render` end to end          {}",
        stats(&renders)
    );
}

/// Print the load figures of both sides and their ratios: the first load of a fresh process
/// on each side, and upstream's repeated load in a warm process (its registry build once
/// the JIT has run).
fn compare_loads(
    upstream: &support::upstream::Upstream,
    host_toml: &std::path::Path,
    ours_first: &[f64],
    upstream_first: &[f64],
    upstream_parse: &[f64],
) {
    let warm = upstream.warm(host_toml, 50, 100);
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let warm_load = support::upstream::ms(&warm["load_us"]["median"]);
    let warm_parse = support::upstream::ms(&warm["parse_us"]["median"]);
    println!(
        "\nload side by side (parse + load, ms as min / median / max; Node {})",
        warm["node"]
    );
    println!(
        "  prompt-host, first load of a fresh process  {}",
        stats(ours_first)
    );
    println!(
        "  upstream, first load of a fresh process     {}  (of which parse {})",
        stats(upstream_first),
        stats(upstream_parse)
    );
    println!(
        "  upstream, repeated load in a warm process   min {:.1} median {:.1} p99 {:.1}  (of which parse median {:.1})",
        support::upstream::ms(&warm["load_us"]["min"]),
        warm_load,
        support::upstream::ms(&warm["load_us"]["p99"]),
        warm_parse
    );
    let ours = median(ours_first);
    println!(
        "  ratio prompt-host / upstream (medians): against its first load {:.2}, against its warm repeated load {:.2}",
        ours / median(upstream_first),
        ours / warm_load
    );
}

fn main() {
    if std::env::args().skip(1).any(|a| a == "host-toml") {
        host_toml(15);
        return;
    }
    let warm_runs = 15;
    let cold_runs = 3;
    println!("cold start of a host process, 12 plugins + first step; ms as min / median / max");
    for distinct in [false, true] {
        for pooling in [false, true] {
            let mut base: Vec<String> = Vec::new();
            if distinct {
                base.push("--distinct".into());
            }
            if pooling {
                base.push("--pooling".into());
            }
            let what = format!(
                "{}, {}",
                if distinct {
                    "12 components"
                } else {
                    "2 components"
                },
                if pooling { "pooling" } else { "on-demand" }
            );
            let cache = tempfile::tempdir().expect("cache dir");
            let mut warm = base.clone();
            warm.push("--cache".into());
            warm.push(cache.path().display().to_string());
            // Fill the cache once.
            run(&warm);
            report(&format!("warm cache, {what}"), &measure(&warm, warm_runs));
            report(&format!("no cache, {what}"), &measure(&base, cold_runs));
        }
    }
    host_toml(15);
}
