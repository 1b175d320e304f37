//! `inspect --timings`: where the time of this scope's assembly went — each plugin call
//! (slowest first), the assemble and render phases — and what loading each plugin cost,
//! with the compile cache's hits and misses.

use std::io::Write;

use prompt_host::prompt::TimingReport;
use prompt_host::Host;

/// Print the timings of one assembly (`report`) and of the plugins' loads for the layers
/// `visible` admits.
pub fn print(
    out: &mut impl Write,
    host: &Host,
    report: &TimingReport,
    visible: impl Fn(&Option<String>) -> bool,
) -> anyhow::Result<()> {
    let phase = |name: &str| {
        report
            .phases
            .iter()
            .find(|p| p.phase == name)
            .map_or(0.0, |p| p.micros)
    };
    let calls: f64 = report.calls.iter().map(|c| c.micros).sum();
    writeln!(out)?;
    writeln!(
        out,
        "timings: assemble {:.0} µs (plugin calls {:.0} µs, {} calls), render {:.0} µs",
        phase("assemble"),
        calls,
        report.calls.len(),
        phase("render")
    )?;
    writeln!(
        out,
        "{:<34} {:<14} {:<18} {:<16} {:>9}",
        "CALL", "KIND", "PLUGIN", "LAYER", "µs"
    )?;
    for call in report.slowest() {
        writeln!(
            out,
            "{:<34} {:<14} {:<18} {:<16} {:>9.1}",
            call.name.as_deref().unwrap_or("-"),
            call.kind,
            call.plugin,
            call.layer,
            call.micros
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<24} {:<16} {:>14} {:>9}",
        "PLUGIN LOAD", "LAYER", "INSTANTIATE µs", "INIT µs"
    )?;
    for plugin in host.plugins() {
        if !visible(&plugin.scope) {
            continue;
        }
        writeln!(
            out,
            "{:<24} {:<16} {:>14.1} {:>9.1}",
            plugin.name,
            plugin.scope.as_deref().unwrap_or("global"),
            plugin.load.instantiate.as_secs_f64() * 1e6,
            plugin.load.init.as_secs_f64() * 1e6
        )?;
    }
    let cache = host.runtime().stats();
    writeln!(
        out,
        "compile cache: {} compiled, {} from disk ({} run from the file), {} from memory, {} disk entries unusable",
        cache.compiles,
        cache.disk_hits,
        cache.disk_in_place,
        cache.memory_hits,
        cache.disk_rejected
    )?;
    Ok(())
}
