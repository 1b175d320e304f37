//! What the `tracing` spans cost: a steady-state step of the reference deployment
//! (`Host::step` as an embedder calls it, the facts unchanged, so nothing new is committed
//! but the user's message and the runtime-context snapshot) with no subscriber (tracing
//! off) and with `tracing_subscriber`'s `Registry` as the thread's subscriber (tracing on,
//! every span created, entered and closed, no exporter), interleaved in one run, each on a
//! session log of its own; then the same for `Host::render` alone (no log write, where the
//! spans' share is largest). Prints min / median / p99 and the ratios.
//! `cargo bench -p prompt-host-tests --bench spans`.

mod support;

use std::time::Instant;

use prompt_host::session::Session;
use prompt_host::StepOptions;
use prompt_host_tests::reference;

/// One row pair and its ratio, as the docs give them.
fn report(what: &str, rounds: usize, off: &mut [f64], on: &mut [f64]) {
    let (off_min, off_med, off_p99) = support::min_median_p99(off);
    let (on_min, on_med, on_p99) = support::min_median_p99(on);
    println!("{what}, {rounds} interleaved rounds; µs min / median / p99");
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

fn main() {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let host = support::reference_host(dir.path(), "host.toml", |text| text);
    let scope = reference::agent(0);
    let options = StepOptions::default().user_texts(vec!["Next.".into()]);
    let (mut off_log, _) = Session::open(dir.path().join("off.jsonl")).expect("log");
    let (mut on_log, _) = Session::open(dir.path().join("on.jsonl")).expect("log");
    let subscriber = tracing::Dispatch::new(tracing_subscriber::registry());
    let step = |log: &mut Session| {
        let started = Instant::now();
        let (rendered, _) = runtime
            .block_on(host.step(log, Some(&scope), support::reference_facts(), &options))
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
    let what = format!("Host::step, reference deployment ({bytes} bytes of prompt)");
    report(&what, rounds, &mut t_off, &mut t_on);

    // The rendering alone: the step's work without the log's write.
    let render = || {
        let started = Instant::now();
        runtime
            .block_on(host.render(Some(&scope), support::reference_facts()))
            .expect("render");
        started.elapsed().as_secs_f64() * 1e6
    };
    let rounds = 10_000;
    let (mut r_off, mut r_on) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        r_off.push(render());
        r_on.push(tracing::dispatcher::with_default(&subscriber, render));
    }
    report(
        "Host::render, the same scope",
        rounds,
        &mut r_off,
        &mut r_on,
    );
}
