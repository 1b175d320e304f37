//! What the `tracing` spans cost: a steady-state step of the reference deployment
//! (`Host::step` as an embedder calls it, the facts unchanged, so nothing new is committed
//! but the user's message and the runtime-context snapshot) with no subscriber (tracing
//! off) and with `tracing_subscriber`'s `Registry` as the thread's subscriber (tracing on,
//! every span created, entered and closed, no exporter), interleaved in one run, each on a
//! session log of its own; then the same for `Host::render` alone (no log write, where the
//! spans' share is largest). Prints min / median / p99 and the ratios.
//! `cargo bench -p prompt-host-tests --bench spans`.

mod support;

use std::path::Path;
use std::time::Instant;

use prompt_host::config::HostConfig;
use prompt_host::session::Session;
use prompt_host::{Facts, Host, RuntimeConfig, StepOptions};
use prompt_host_tests::reference::{self, Guests, Reference};

fn host(dir: &Path) -> Host {
    let guests = Guests::load();
    let declare = dir.join("declare.wasm");
    let redactor = dir.join("redactor.wasm");
    std::fs::write(&declare, &guests.declare).expect("declare.wasm");
    std::fs::write(&redactor, &guests.redactor).expect("redactor.wasm");
    let text = Reference::new().host_toml(&declare, &redactor, &dir.join("cache"));
    let path = dir.join("host.toml");
    std::fs::write(&path, text).expect("host.toml");
    let config = HostConfig::load(&path).expect("host.toml");
    Host::from_config(&config, RuntimeConfig::default()).expect("from_config")
}

fn facts() -> Facts {
    Facts::new()
        .with("model", "deepseek-v4")
        .with("cwd", "/work/project")
}

/// min / median / p99 of `values` (µs).
fn stats(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let p99 = values[(values.len() * 99 / 100).min(values.len() - 1)];
    (values[0], support::median(values), p99)
}

fn main() {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let host = host(dir.path());
    let scope = reference::agent(0);
    let options = StepOptions::default().user_texts(vec!["Next.".into()]);
    let (mut off_log, _) = Session::open(dir.path().join("off.jsonl")).expect("log");
    let (mut on_log, _) = Session::open(dir.path().join("on.jsonl")).expect("log");
    let subscriber = tracing::Dispatch::new(tracing_subscriber::registry());
    let step = |log: &mut Session| {
        let started = Instant::now();
        let (rendered, _) = runtime
            .block_on(host.step(log, Some(&scope), facts(), &options))
            .expect("step");
        (started.elapsed().as_secs_f64() * 1e6, rendered.prompt.len())
    };
    let (_, bytes) = step(&mut off_log);
    tracing::dispatcher::with_default(&subscriber, || step(&mut on_log));
    // Interleaved: off, on, off, … so drift on a shared machine hits both alike.
    let rounds = 3_000;
    let (mut t_off, mut t_on) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        t_off.push(step(&mut off_log).0);
        t_on.push(tracing::dispatcher::with_default(&subscriber, || step(&mut on_log)).0);
    }
    let (off_min, off_med, off_p99) = stats(&mut t_off);
    let (on_min, on_med, on_p99) = stats(&mut t_on);
    println!(
        "Host::step, reference deployment ({bytes} bytes of prompt), {rounds} interleaved rounds; µs min / median / p99"
    );
    println!(
        "  tracing off (no subscriber)              {off_min:>8.1} {off_med:>8.1} {off_p99:>8.1}"
    );
    println!(
        "  tracing on (Registry, no exporter)       {on_min:>8.1} {on_med:>8.1} {on_p99:>8.1}"
    );
    println!(
        "  ratio on / off: median {:.3}, p99 {:.3}",
        on_med / off_med,
        on_p99 / off_p99
    );

    // The rendering alone: the step's work without the log's write.
    let render = || {
        let started = Instant::now();
        runtime
            .block_on(host.render(Some(&scope), facts()))
            .expect("render");
        started.elapsed().as_secs_f64() * 1e6
    };
    let rounds = 10_000;
    let (mut r_off, mut r_on) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        r_off.push(render());
        r_on.push(tracing::dispatcher::with_default(&subscriber, render));
    }
    let (off_min, off_med, off_p99) = stats(&mut r_off);
    let (on_min, on_med, on_p99) = stats(&mut r_on);
    println!("Host::render, the same scope, {rounds} interleaved rounds; µs min / median / p99");
    println!(
        "  tracing off (no subscriber)              {off_min:>8.1} {off_med:>8.1} {off_p99:>8.1}"
    );
    println!(
        "  tracing on (Registry, no exporter)       {on_min:>8.1} {on_med:>8.1} {on_p99:>8.1}"
    );
    println!(
        "  ratio on / off: median {:.3}, p99 {:.3}",
        on_med / off_med,
        on_p99 / off_p99
    );
}
