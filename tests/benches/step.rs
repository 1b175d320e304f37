//! Per-step cost of the sandbox: the reference deployment assembled and rendered for an
//! agent scope through Wasm plugins and through native closures, side by side; what a
//! pass-through listener costs; spinning up an agent scope's plugins; and how a step grows
//! with 10 → 100 → 1,000 plugins in one scope chain; and (`embedder`) what an embedder pays
//! through `Host::render`, phase by phase, beside upstream's step when
//! `PROMPT_HOST_UPSTREAM_BUNDLE` is set. `cargo bench -p prompt-host-tests --bench step`;
//! figures and their reading in docs/benchmarks.md.

mod support;
// Only this bench measures through `Host`; the other benches that share `support` do not
// compile it.
#[path = "support/embedder.rs"]
mod embedder;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use prompt_host::prompt::{
    join_context_sections, render_context_sections, render_prompt, Assembly, Fiber, Registry,
};
use prompt_host::wasm::{LoadedPlugin, Pooling, RuntimeConfig, WasmRuntime};
use prompt_host_tests::reference::{self, Code, Guests, PluginDef, Reference};

/// One step's prompt work: assemble for `scope`, render the prompt and the context snapshot.
fn step(registry: &Registry, scope: &str) -> (String, String, usize) {
    let assembly = registry
        .assemble_blocking(Some(scope), Reference::context())
        .expect("assemble");
    rendered(&assembly)
}

fn rendered(assembly: &Assembly) -> (String, String, usize) {
    let prompt = render_prompt(assembly).expect("render");
    let contexts = render_context_sections(assembly).expect("render contexts");
    (
        prompt,
        join_context_sections(&contexts),
        assembly.tools.len(),
    )
}

fn runtime(cache: &std::path::Path, pooling: bool) -> WasmRuntime {
    let mut config = RuntimeConfig::with_cache_dir(cache);
    // Room for the growth bench's 1,000 plugins next to everything else.
    config.pooling = pooling.then_some(Pooling::new(4_096));
    WasmRuntime::new(config).expect("runtime")
}

/// One deployment of the reference content, kept alive while it is measured.
struct Deployed {
    label: &'static str,
    registry: Arc<Registry>,
    _loaded: Vec<LoadedPlugin>,
    _fibers: Vec<Fiber>,
}

/// Deploy `reference` for agent 0 through Wasm (`code`) or natively (`None`).
fn deploy(
    label: &'static str,
    reference: &Reference,
    wasm: Option<(&WasmRuntime, &Code)>,
) -> Deployed {
    let registry = Reference::registry(1);
    let (loaded, fibers) = match wasm {
        Some((runtime, code)) => (
            reference.deploy_wasm(runtime, &registry, code, 1),
            Vec::new(),
        ),
        None => (Vec::new(), reference.deploy_native(&registry, 1)),
    };
    Deployed {
        label,
        registry,
        _loaded: loaded,
        _fibers: fibers,
    }
}

/// Assert that every deployment assembles the same step (the comparison is only fair then),
/// twice: the second step is the steady state where 0.2.0 plugins answer "unchanged".
fn assert_same_step(deployments: &[Deployed]) {
    let scope = reference::agent(0);
    let mut first: Option<Assembly> = None;
    for _ in 0..2 {
        for d in deployments {
            let a = d
                .registry
                .assemble_blocking(Some(&scope), Reference::context())
                .unwrap_or_else(|e| panic!("{} assemble: {e}", d.label));
            match &first {
                None => first = Some(a),
                Some(expected) => assert_eq!(
                    &a, expected,
                    "{} must assemble what {} does",
                    d.label, deployments[0].label
                ),
            }
        }
    }
    let a = first.expect("a deployment");
    let (prompt, snapshot, tools) = rendered(&a);
    assert!(prompt.contains("[redacted]") && !prompt.contains(reference::REDACTED_WORD));
    assert_eq!(tools, 30);
    eprintln!(
        "reference step: {} sections, {} contexts, {tools} tools ({} bytes of parameters), {} variables; prompt {} bytes, snapshot {} bytes",
        a.sections.len(),
        a.contexts.len(),
        a.tools.iter().map(|t| t.parameters.to_string().len()).sum::<usize>(),
        a.variables.len(),
        prompt.len(),
        snapshot.len()
    );
}

/// The per-step cost of each deployment measured interleaved: each round times one step of
/// every deployment (rotating which goes first), so load on a shared machine hits all sides
/// alike. Prints each median with its 10th–90th percentiles and its ratio to the last
/// deployment (native).
fn interleaved(title: &str, deployments: &[Deployed], rounds: usize) {
    let scope = reference::agent(0);
    let mut times: Vec<Vec<f64>> = deployments
        .iter()
        .map(|_| Vec::with_capacity(rounds))
        .collect();
    for round in 0..rounds {
        for k in 0..deployments.len() {
            let i = (round + k) % deployments.len();
            let started = Instant::now();
            black_box(step(&deployments[i].registry, &scope));
            times[i].push(started.elapsed().as_nanos() as f64);
        }
    }
    let quantiles: Vec<(f64, f64, f64)> = times
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
            (at(0.1), at(0.5), at(0.9))
        })
        .collect();
    let base = quantiles.last().map(|q| q.1).unwrap_or(1.0);
    println!("{title}, interleaved ({rounds} rounds):");
    for (d, (p10, p50, p90)) in deployments.iter().zip(&quantiles) {
        println!(
            "  {:<12} median {} (p10–p90 {}–{}) → {:.2}× {}",
            d.label,
            support::fmt_ns(*p50),
            support::fmt_ns(*p10),
            support::fmt_ns(*p90),
            p50 / base,
            deployments.last().map(|d| d.label).unwrap_or("")
        );
    }
}

/// Whether criterion's filter (the first free argument) would run `group`, so a filtered
/// run skips the interleaved measurements it did not ask for.
fn wanted(group: &str) -> bool {
    match std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        Some(filter) => group.contains(&filter) || filter.contains(group),
        None => true,
    }
}

/// The reference deployment: Wasm plugins built against contract 0.1.0 and their 0.2.0
/// rebuilds, against native closures.
fn bench_step(c: &mut Criterion, runtime: &WasmRuntime, code: &Code, code_v2: &Code) {
    let reference = Reference::new();
    let deployments = [
        deploy("wasm", &reference, Some((runtime, code))),
        deploy("wasm-0.2.0", &reference, Some((runtime, code_v2))),
        deploy("native", &reference, None),
    ];
    assert_same_step(&deployments);
    interleaved("reference step", &deployments, 5_000);
    let scope = reference::agent(0);
    let mut group = c.benchmark_group("step");
    for d in &deployments {
        group.bench_function(d.label, |b| b.iter(|| black_box(step(&d.registry, &scope))));
    }
    group.finish();

    // Where the time goes: assembly alone, rendering alone.
    let [wasm, _, native] = &deployments;
    let assembly = native
        .registry
        .assemble_blocking(Some(&scope), Reference::context())
        .expect("assemble");
    let mut group = c.benchmark_group("step-parts");
    for (label, d) in [("native-assemble", native), ("wasm-assemble", wasm)] {
        group.bench_function(label, |b| {
            b.iter(|| {
                black_box(
                    d.registry
                        .assemble_blocking(Some(&scope), Reference::context())
                        .expect("assemble"),
                )
            })
        });
    }
    group.bench_function("render", |b| b.iter(|| black_box(rendered(&assembly))));
    group.bench_function("clone-assembly", |b| b.iter(|| black_box(assembly.clone())));
    group.finish();
}

/// The reference content with every section, context, variable and tool provider dynamic:
/// 0.1.0 plugins copy every value out on every step; 0.2.0 plugins compute it and answer
/// "unchanged" (the SDK's default); "kept" 0.2.0 plugins ask the host to keep each answer
/// until the context changes, so a steady-state step calls only the two listeners.
fn bench_dynamic(c: &mut Criterion, runtime: &WasmRuntime, code: &Code, code_v2: &Code) {
    let reference = Reference::all_dynamic();
    let kept = Reference::all_dynamic().keeping();
    let deployments = [
        deploy("wasm-0.1.0", &reference, Some((runtime, code))),
        deploy("wasm-0.2.0", &reference, Some((runtime, code_v2))),
        deploy("wasm-kept", &kept, Some((runtime, code_v2))),
        deploy("native", &reference, None),
    ];
    assert_same_step(&deployments);
    interleaved("every provider dynamic", &deployments, 5_000);
    let scope = reference::agent(0);
    let mut group = c.benchmark_group("dynamic");
    for d in &deployments {
        group.bench_function(d.label, |b| b.iter(|| black_box(step(&d.registry, &scope))));
    }
    group.finish();
}

/// A pass-through Wasm listener on a small assembly (identity + persona) and on the
/// reference-sized one (native content), against the same registries without it; and one
/// plain export call (a dynamic section) for scale.
fn bench_listener(c: &mut Criterion, runtime: &WasmRuntime, code: &Code) {
    let reference = Reference::new();
    let pass = reference
        .plugins
        .iter()
        .find(|p| p.name == "pass-through")
        .expect("pass-through plugin")
        .clone();
    let mut group = c.benchmark_group("listener");
    for size in ["small", "large"] {
        let registry = Reference::registry(1);
        let mut fibers = Vec::new();
        if size == "large" {
            for p in reference.plugins.iter().filter(|p| p.listener.is_none()) {
                fibers.push(p.load_native(&registry, p.scope("agent:0")));
            }
        }
        let scope = "agent:0";
        let ctx = || Reference::context();
        group.bench_function(format!("{size}-none"), |b| {
            b.iter(|| black_box(registry.assemble_blocking(Some(scope), ctx()).expect("a")))
        });
        let listener = pass.load_wasm(runtime, &registry, code, Some(reference::PARENT));
        group.bench_function(format!("{size}-pass-through"), |b| {
            b.iter(|| black_box(registry.assemble_blocking(Some(scope), ctx()).expect("a")))
        });
        drop(listener);
        drop(fibers);
    }
    // One dynamic section: one export call taking the context, returning a short string.
    let registry = Reference::registry(1);
    let mut one = PluginDef::clone(&reference.plugins[0]);
    one.name = "one-call".into();
    one.sections.retain(|s| s.dynamic);
    one.sections[0].text = "Serving ${scope}.".into();
    let _plugin = one.load_wasm(runtime, &registry, code, None);
    group.bench_function("small-one-call", |b| {
        b.iter(|| {
            black_box(
                registry
                    .assemble_blocking(Some("agent:0"), Reference::context())
                    .expect("a"),
            )
        })
    });
    group.finish();
}

/// Where a plugin's spin-up goes, from each load's own timing (`LoadedPlugin::load_timing`):
/// instantiating the component, running `init`, and the rest of `WasmRuntime::load` (the
/// config serialised, grants opened, the fiber and its registrations). Medians per plugin
/// over 300 spin-ups of the three plugins, printed at once.
fn spinup_parts(
    label: &str,
    runtime: &WasmRuntime,
    registry: &Arc<prompt_host::prompt::Registry>,
    specs: &[(
        prompt_host::policy::PluginSpec,
        &prompt_host::wasm::PluginCode,
    )],
) {
    let (mut instantiate, mut init, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..300 {
        for (spec, code) in specs {
            let started = Instant::now();
            let loaded = runtime.load(registry, spec, *code).expect("load");
            let whole = started.elapsed();
            let timing = loaded.load_timing();
            instantiate.push(timing.instantiate);
            init.push(timing.init);
            rest.push(whole.saturating_sub(timing.instantiate + timing.init));
            drop(black_box(loaded));
        }
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        support::fmt_ns(v[v.len() / 2].as_nanos() as f64)
    };
    println!(
        "spin-up parts, {label}, per plugin (median of 900 loads): instantiate {}, init {}, the rest of load {}",
        median(instantiate),
        median(init),
        median(rest)
    );
}

/// A new agent scope loading its three plugins (instantiate from `InstancePre` + `init` +
/// registration), timed; disposing them is not.
fn bench_spinup(c: &mut Criterion, runtimes: &[(&str, &WasmRuntime, &Code)]) {
    let reference = Reference::new();
    let per_agent: Vec<PluginDef> = reference.per_agent().cloned().collect();
    assert_eq!(per_agent.len(), 3);
    let mut group = c.benchmark_group("spinup");
    for (label, runtime, code) in runtimes {
        let registry = Reference::registry(0);
        let _shared = reference
            .shared()
            .map(|p| p.load_wasm(runtime, &registry, code, p.scope("")))
            .collect::<Vec<_>>();
        registry
            .bind_scope_parent("agent:spin", reference::PARENT)
            .expect("bind");
        let specs: Vec<_> = per_agent
            .iter()
            .map(|p| (p.wasm_spec(Some("agent:spin")), p.code(code)))
            .collect();
        group.bench_function(format!("{label}-3-plugins"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    let loaded: Vec<LoadedPlugin> = specs
                        .iter()
                        .map(|(spec, code)| runtime.load(&registry, spec, *code).expect("load"))
                        .collect();
                    total += started.elapsed();
                    drop(black_box(loaded));
                }
                total
            })
        });
        spinup_parts(label, runtime, &registry, &specs);
    }
    let registry = Reference::registry(0);
    let _shared: Vec<Fiber> = reference
        .shared()
        .map(|p| p.load_native(&registry, p.scope("")))
        .collect();
    registry
        .bind_scope_parent("agent:spin", reference::PARENT)
        .expect("bind");
    group.bench_function("native-3-plugins", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                let fibers: Vec<Fiber> = per_agent
                    .iter()
                    .map(|p| p.load_native(&registry, Some("agent:spin")))
                    .collect();
                total += started.elapsed();
                drop(black_box(fibers));
            }
            total
        })
    });
    group.finish();
}

/// 10 → 100 → 1,000 plugins along one ten-scope chain, Wasm and native.
fn bench_growth(c: &mut Criterion, runtime: &WasmRuntime, code: &Code) {
    let mut group = c.benchmark_group("growth");
    group.sample_size(15);
    let scope = reference::chain_agent();
    for n in [10usize, 100, 1000] {
        let plugins = reference::chain_plugins(n);
        let wasm = reference::chain_registry();
        let _base_w = reference::chain_base().load_wasm(runtime, &wasm, code, None);
        let _loaded: Vec<LoadedPlugin> = plugins
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let s = reference::chain_scope(i, n);
                p.load_wasm(runtime, &wasm, code, Some(&s))
            })
            .collect();
        let native = reference::chain_registry();
        let _base_n = reference::chain_base().load_native(&native, None);
        let _fibers: Vec<Fiber> = plugins
            .iter()
            .enumerate()
            .map(|(i, p)| p.load_native(&native, Some(&reference::chain_scope(i, n))))
            .collect();
        let a = wasm
            .assemble_blocking(Some(&scope), Reference::context())
            .expect("a");
        let b = native
            .assemble_blocking(Some(&scope), Reference::context())
            .expect("b");
        assert_eq!(a, b);
        assert_eq!(a.sections.len(), 2 * n + 2);
        group.bench_with_input(BenchmarkId::new("wasm", n), &n, |b, _| {
            b.iter(|| black_box(step(&wasm, &scope)))
        });
        group.bench_with_input(BenchmarkId::new("native", n), &n, |b, _| {
            b.iter(|| black_box(step(&native, &scope)))
        });
    }
    group.finish();
}

fn summary() {
    println!("\n== summary (medians of this run)");
    support::ratio("per step, Wasm vs native", "step", "wasm", "native");
    support::ratio(
        "per step, Wasm 0.2.0 vs native",
        "step",
        "wasm-0.2.0",
        "native",
    );
    support::ratio(
        "every provider dynamic, Wasm 0.2.0 vs native",
        "dynamic",
        "wasm-0.2.0",
        "native",
    );
    support::ratio(
        "every provider dynamic, Wasm 0.2.0 kept vs native",
        "dynamic",
        "wasm-kept",
        "native",
    );
    support::ratio(
        "every provider dynamic, Wasm 0.1.0 vs native",
        "dynamic",
        "wasm-0.1.0",
        "native",
    );
    support::ratio(
        "assembly only, Wasm vs native",
        "step-parts",
        "wasm-assemble",
        "native-assemble",
    );
    for size in ["small", "large"] {
        if let (Some(with), Some(without)) = (
            support::median_ns("listener", &format!("{size}-pass-through")),
            support::median_ns("listener", &format!("{size}-none")),
        ) {
            println!(
                "pass-through listener on the {size} assembly: +{}",
                support::fmt_ns(with - without)
            );
        }
    }
    if let (Some(one), Some(none)) = (
        support::median_ns("listener", "small-one-call"),
        support::median_ns("listener", "small-none"),
    ) {
        println!(
            "one export call (dynamic section): +{}",
            support::fmt_ns(one - none)
        );
    }
    for label in ["wasm-on-demand", "wasm-pooling", "native"] {
        if let Some(ns) = support::median_ns("spinup", &format!("{label}-3-plugins")) {
            println!(
                "agent scope spin-up, {label}: {} for 3 plugins, {} per plugin",
                support::fmt_ns(ns),
                support::fmt_ns(ns / 3.0)
            );
        }
    }
    for kind in ["wasm", "native"] {
        let figures: Vec<String> = [10, 100, 1000]
            .iter()
            .filter_map(|n| {
                support::median_ns(&format!("growth/{kind}"), &n.to_string()).map(|ns| {
                    format!(
                        "{n}: {} ({} per plugin)",
                        support::fmt_ns(ns),
                        support::fmt_ns(ns / *n as f64)
                    )
                })
            })
            .collect();
        println!("growth, {kind}: {}", figures.join(", "));
    }
}

fn main() {
    let cache = tempfile::tempdir().expect("cache dir");
    let guests = Guests::load();
    let guests_v2 = Guests::load_v2();
    let on_demand = runtime(cache.path(), false);
    let pooling = runtime(cache.path(), true);
    let on_demand_code = Code::compile(&on_demand, &guests);
    let code = Code::compile(&pooling, &guests);
    let code_v2 = Code::compile(&pooling, &guests_v2);
    let mut c = support::criterion();
    if wanted("embedder") {
        embedder::host_render_side_by_side(3_000);
    }
    if wanted("step") {
        bench_step(&mut c, &pooling, &code, &code_v2);
    }
    if wanted("dynamic") {
        bench_dynamic(&mut c, &pooling, &code, &code_v2);
    }
    bench_listener(&mut c, &pooling, &code);
    bench_spinup(
        &mut c,
        &[
            ("wasm-on-demand", &on_demand, &on_demand_code),
            ("wasm-pooling", &pooling, &code),
        ],
    );
    bench_growth(&mut c, &pooling, &code);
    c.final_summary();
    summary();
}
