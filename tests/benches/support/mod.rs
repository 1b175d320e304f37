//! Shared by the benches: criterion settings that keep the suite short, and reading back
//! criterion's medians to print side-by-side ratios.

#![allow(dead_code)]

pub mod upstream;

use std::path::PathBuf;
use std::time::Duration;

use criterion::Criterion;

/// Short runs: the whole suite must finish in a few minutes on a 2-core machine.
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args()
}

/// Where criterion writes its reports (`<workspace target>/criterion`).
fn criterion_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("criterion")
}

/// The median (ns) criterion measured for `group/id` in this run, if it ran.
pub fn median_ns(group: &str, id: &str) -> Option<f64> {
    let path = criterion_dir()
        .join(group)
        .join(id)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

/// Human-readable duration.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Print `a / b` for two benches of this run.
pub fn ratio(label: &str, group: &str, a: &str, b: &str) {
    match (median_ns(group, a), median_ns(group, b)) {
        (Some(x), Some(y)) => println!(
            "{label}: {group}/{a} {} vs {group}/{b} {} → ratio {:.2}×",
            fmt_ns(x),
            fmt_ns(y),
            x / y
        ),
        _ => println!("{label}: {group}/{a} or {group}/{b} did not run"),
    }
}

/// Resident set size of this process, bytes.
pub fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    pages * 4096
}

/// The median of `values` (sorted in place).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A figure of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in KiB.
pub fn resident_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .expect("a number of kB")
}

/// min / median / p99 of `values`.
pub fn min_median_p99(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let p99 = values[(values.len() * 99 / 100).min(values.len() - 1)];
    (values[0], median(values), p99)
}

/// The reference deployment's host.toml written to `dir/name` (the components beside it, the
/// compile cache in `dir/cache`), changed by `edit`, and its host.
pub fn reference_host(
    dir: &std::path::Path,
    name: &str,
    edit: impl FnOnce(String) -> String,
) -> prompt_host::Host {
    use prompt_host_tests::reference::{Guests, Reference};
    let guests = Guests::load();
    let declare = dir.join("declare.wasm");
    let redactor = dir.join("redactor.wasm");
    std::fs::write(&declare, &guests.declare).expect("declare.wasm");
    std::fs::write(&redactor, &guests.redactor).expect("redactor.wasm");
    let text = edit(Reference::new().host_toml(&declare, &redactor, &dir.join("cache")));
    let path = dir.join(name);
    std::fs::write(&path, text).expect("host.toml");
    let config = prompt_host::config::HostConfig::load(&path).expect("host.toml");
    prompt_host::Host::from_config(&config, prompt_host::RuntimeConfig::default())
        .expect("from_config")
}

/// The reference deployment's facts.
pub fn reference_facts() -> prompt_host::Facts {
    prompt_host::Facts::new()
        .with("model", "deepseek-v4")
        .with("cwd", "/work/project")
}
