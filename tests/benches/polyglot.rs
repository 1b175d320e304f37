//! A JavaScript, a Python and a Rust plugin of the same content, side by side in one run:
//! component and compiled-artifact sizes, the first compile, the first load from a warm
//! compile cache, spin-up (instantiate + `init` from compiled code), resident memory per
//! live instance, and what one assembly costs with the plugin against without it.
//!
//! The JavaScript and Python plugins are the examples in `guest-examples-js/` and
//! `guest-examples-py/` (their `dist/plugin.wasm`); the Rust twin is the `declare` guest with
//! a config declaring the same four entries (see [`rust_twin_config`] for what differs). When
//! a component is missing this skips with a message, unless `PROMPT_HOST_POLYGLOT=1`, which
//! builds it (as the polyglot test does). `cargo bench -p prompt-host-tests --bench
//! polyglot`; the figures and their reading are in docs/benchmarks.md.

// Test code: a failed unwrap is a failed test, with its message.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prompt_host::policy::PluginSpec;
use prompt_host::prompt::{render_prompt, AssembleContext, PromptConfig, Registry};
use prompt_host::wasm::{LoadedPlugin, PluginCode, RuntimeConfig, WasmRuntime};
use prompt_host::Host;
use prompt_host_tests::polyglot::{self, Example, Freshness};
use prompt_host_tests::reference::bench_options;
use serde_json::{json, Value};

/// Spin-up samples per plugin (interleaved).
const SPINUPS: usize = 200;
/// Assembly rounds (interleaved; one assembly per deployment per round). The JavaScript
/// instance leaks ~0.9 KB per listener call (its README), far from its 64 MiB over this.
const ROUNDS: usize = 3_000;
/// Warm first loads per plugin, each in a fresh runtime.
const WARM_LOADS: usize = 10;
/// Instances kept alive for the memory figure.
const INSTANCES: usize = 100;

/// One plugin under test.
struct Plugin {
    /// Column label.
    label: &'static str,
    /// The component file.
    wasm: PathBuf,
    /// Entry prefix and stamp.
    prefix: &'static str,
    stamp: &'static str,
    /// The greeting's language word.
    language: &'static str,
    /// `init` config.
    config: Value,
}

impl Plugin {
    fn example(example: &Example) -> Self {
        Self {
            label: example.language,
            wasm: example.component(),
            prefix: example.prefix,
            stamp: example.stamp,
            language: example.language,
            config: json!({ "greeting": example.greeting() }),
        }
    }

    fn rust() -> Self {
        Self {
            label: "Rust",
            wasm: PathBuf::from(env!("GUEST_DECLARE")),
            prefix: "rs",
            stamp: "RS",
            language: "Rust",
            config: rust_twin_config(),
        }
    }

    fn spec(&self, scope: Option<&str>) -> PluginSpec {
        let mut spec = PluginSpec::new(format!("{}-twin", self.prefix))
            .config(self.config.clone())
            .options(bench_options());
        if let Some(scope) = scope {
            spec = spec.scope(scope);
        }
        spec
    }

    /// The prompt of the `n`th assembly of one instance, global scope, fact `model=m1`.
    fn expected(&self, n: u32) -> String {
        format!(
            "You are an AI agent powered by the DeepSeek Harness SDK.\n\n\
             You run on m1. These lines come from a {} plugin. This is assembly {n}. [{}: checked 4 sections]\n\n\
             Scope: global. Facts from the caller: model.",
            self.language, self.stamp
        )
    }
}

/// The `declare` guest config that renders what the JavaScript and Python examples render,
/// with the same four entries (`rs:hello`, `rs:scope`, `rs_assembly`, `rs:stamp`) and the
/// same calls per assembly (one `section-text`, one `variable`, one `on-assemble` that calls
/// `next()` and `set-section`). What differs: `declare`'s templates cannot list the fact
/// names or fall back to "global", so `rs:scope` returns the text those give here (global
/// scope, one fact `model`) from a template without placeholders; and its listener script
/// cannot read the assembly and count, so it writes the stamped text as a constant, without
/// the `section-names` and `section` calls the other two make before `set-section`.
fn rust_twin_config() -> Value {
    let hello = "You run on {{model}}. These lines come from a Rust plugin. This is assembly {{rs_assembly}}.";
    json!({
        "sections": [
            { "name": "rs:hello", "order": 150, "text": hello },
            { "name": "rs:scope", "order": 160,
              "text": { "dynamic": "Scope: global. Facts from the caller: model." } },
        ],
        "variables": [{ "name": "rs_assembly", "dynamic": "${call}" }],
        "listener": {
            "key": "rs:stamp",
            "prepend": false,
            "global": false,
            "steps": [
                { "next": true },
                { "set_section": { "name": "rs:hello",
                                   "text": format!("{hello} [RS: checked 4 sections]") } },
            ],
        },
    })
}

fn context() -> AssembleContext {
    AssembleContext::with_facts([("model", "m1")])
}

fn host(cache: &Path) -> Host {
    Host::new(
        PromptConfig::default(),
        RuntimeConfig::with_cache_dir(cache),
    )
    .expect("host")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn quantile(v: &[f64], q: f64) -> f64 {
    v[((v.len() - 1) as f64 * q) as usize]
}

fn mb(bytes: f64) -> String {
    format!("{:.2} MB", bytes / 1e6)
}

fn ms(d: f64) -> String {
    format!("{:.1} ms", d / 1e6)
}

/// The compressed size of `path` (`gzip -9`), if gzip is there.
fn gzipped(path: &Path) -> Option<u64> {
    let out = Command::new("gzip").arg("-9c").arg(path).output().ok()?;
    out.status.success().then_some(out.stdout.len() as u64)
}

/// The `.cwasm` artifact in a cache dir that holds one.
fn artifact(cache: &Path) -> PathBuf {
    std::fs::read_dir(cache)
        .expect("cache dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .expect("a compiled artifact in the cache")
}

/// Figures of one plugin.
#[derive(Default)]
struct Figures {
    component: f64,
    gzipped: Option<f64>,
    artifact: f64,
    compile_ns: f64,
    warm_ns: f64,
    warm_p10_p90: (f64, f64),
    warm_read_artifact_ns: f64,
    warm_bytes_ns: f64,
    spinup_ns: f64,
    spinup_p10_p90: (f64, f64),
    rss_per_instance: f64,
    assembly_ns: f64,
    assembly_p10_p90: (f64, f64),
}

/// Compile cold into a fresh cache, then time first loads from it in fresh runtimes.
fn loads(plugin: &Plugin, cache: &Path, f: &mut Figures) {
    f.component = std::fs::metadata(&plugin.wasm).expect("component").len() as f64;
    f.gzipped = gzipped(&plugin.wasm).map(|n| n as f64);
    let runtime = WasmRuntime::new(RuntimeConfig::with_cache_dir(cache)).expect("runtime");
    let started = Instant::now();
    runtime
        .compile(plugin.label, &plugin.wasm, None)
        .expect("compile");
    f.compile_ns = started.elapsed().as_nanos() as f64;
    assert_eq!(
        runtime.stats().compiles,
        1,
        "{}: a cold cache",
        plugin.label
    );
    drop(runtime);
    let artifact = artifact(cache);
    f.artifact = std::fs::metadata(&artifact).expect("artifact").len() as f64;
    // Identities are recorded only for files unchanged for 2 s: let the new artifact age,
    // then one load records it (and the component's), as the second start of a host would.
    let age = SystemTime::now()
        .duration_since(std::fs::metadata(&artifact).unwrap().modified().unwrap())
        .unwrap_or_default();
    std::thread::sleep(Duration::from_millis(2_500).saturating_sub(age));
    let warm = |timed: &mut Vec<f64>| {
        let runtime = WasmRuntime::new(RuntimeConfig::with_cache_dir(cache)).expect("runtime");
        let started = Instant::now();
        let _code = runtime
            .compile(plugin.label, &plugin.wasm, None)
            .expect("warm load");
        timed.push(started.elapsed().as_nanos() as f64);
        let stats = runtime.stats();
        assert_eq!(
            (stats.compiles, stats.disk_hits),
            (0, 1),
            "{}",
            plugin.label
        );
        stats.files_unchanged
    };
    warm(&mut Vec::new());
    let mut times = Vec::new();
    for _ in 0..WARM_LOADS {
        let unchanged = warm(&mut times);
        assert_eq!(
            unchanged, 1,
            "{}: the component's identity is on record",
            plugin.label
        );
    }
    f.warm_ns = median(&mut times);
    f.warm_p10_p90 = (quantile(&times, 0.1), quantile(&times, 0.9));
    // Where a warm load's time goes: reading the artifact alone, and the path that reads and
    // hashes the component (what every start did before file identities were recorded).
    let mut reads = Vec::new();
    let mut hashed = Vec::new();
    for _ in 0..WARM_LOADS {
        let started = Instant::now();
        std::hint::black_box(std::fs::read(&artifact).expect("artifact"));
        reads.push(started.elapsed().as_nanos() as f64);
        let runtime = WasmRuntime::new(RuntimeConfig::with_cache_dir(cache)).expect("runtime");
        let started = Instant::now();
        let bytes = std::fs::read(&plugin.wasm).expect("component");
        runtime
            .compile(plugin.label, &bytes, None)
            .expect("warm load by bytes");
        hashed.push(started.elapsed().as_nanos() as f64);
    }
    f.warm_read_artifact_ns = median(&mut reads);
    f.warm_bytes_ns = median(&mut hashed);
}

/// A host with `plugin` loaded globally, checked to assemble and render what the examples'
/// READMEs show (and so the others do).
fn deployed(plugin: &Plugin, cache: &Path) -> (Host, LoadedPlugin) {
    let host = host(cache);
    let code = host
        .runtime()
        .compile(plugin.label, &plugin.wasm, None)
        .expect("compiled code");
    let loaded = host
        .runtime()
        .load(host.registry(), &plugin.spec(None), &code)
        .unwrap_or_else(|e| panic!("{}: {e}", plugin.label));
    let assembly = host
        .registry()
        .assemble_blocking(None, context())
        .unwrap_or_else(|e| panic!("{}: {e}", plugin.label));
    assert_eq!(
        render_prompt(&assembly).expect("render"),
        plugin.expected(1),
        "{}",
        plugin.label
    );
    (host, loaded)
}

/// Spin-up, interleaved: each round loads (instantiate + `init` + registration) and drops one
/// instance of every plugin; only the load is timed. A runtime per plugin (its own cache).
fn spinups(plugins: &[Plugin], caches: &[PathBuf], figures: &mut [Figures]) {
    let runtimes: Vec<WasmRuntime> = caches
        .iter()
        .map(|c| WasmRuntime::new(RuntimeConfig::with_cache_dir(c)).expect("runtime"))
        .collect();
    let codes: Vec<PluginCode> = plugins
        .iter()
        .zip(&runtimes)
        .map(|(p, r)| r.compile(p.label, &p.wasm, None).expect("compiled code"))
        .collect();
    let registries: Vec<Arc<Registry>> = plugins
        .iter()
        .map(|_| Registry::new(PromptConfig::default()).expect("registry"))
        .collect();
    let specs: Vec<PluginSpec> = plugins.iter().map(|p| p.spec(None)).collect();
    let mut times = vec![Vec::with_capacity(SPINUPS); plugins.len()];
    for round in 0..SPINUPS + 5 {
        for k in 0..plugins.len() {
            let i = (round + k) % plugins.len();
            let started = Instant::now();
            let loaded = runtimes[i]
                .load(&registries[i], &specs[i], &codes[i])
                .expect("load");
            let elapsed = started.elapsed().as_nanos() as f64;
            drop(loaded);
            if round >= 5 {
                times[i].push(elapsed);
            }
        }
    }
    for (f, t) in figures.iter_mut().zip(&mut times) {
        f.spinup_ns = median(t);
        f.spinup_p10_p90 = (quantile(t, 0.1), quantile(t, 0.9));
    }
}

/// One assembly with each plugin and without any, interleaved; the plugin's cost is the
/// difference of the medians.
fn assemblies(plugins: &[Plugin], caches: &[PathBuf], figures: &mut [Figures]) {
    let deployments: Vec<(Host, LoadedPlugin)> = plugins
        .iter()
        .zip(caches)
        .map(|(p, c)| deployed(p, c))
        .collect();
    let bare = host(&caches[0]);
    let mut registries: Vec<&Arc<Registry>> =
        deployments.iter().map(|(h, _)| h.registry()).collect();
    registries.push(bare.registry());
    let mut times = vec![Vec::with_capacity(ROUNDS); registries.len()];
    for round in 0..ROUNDS {
        for k in 0..registries.len() {
            let i = (round + k) % registries.len();
            let started = Instant::now();
            let assembly = registries[i]
                .assemble_blocking(None, context())
                .expect("assemble");
            times[i].push(started.elapsed().as_nanos() as f64);
            std::hint::black_box(assembly);
        }
    }
    // Still what the READMEs show, counted on: round N + 1 plus the check's first one.
    for ((p, (host, _)), n) in plugins
        .iter()
        .zip(&deployments)
        .zip(std::iter::repeat(ROUNDS as u32 + 2))
    {
        let a = host
            .registry()
            .assemble_blocking(None, context())
            .expect("assemble");
        assert_eq!(
            render_prompt(&a).expect("render"),
            p.expected(n),
            "{}",
            p.label
        );
    }
    let base = median(times.last_mut().expect("bare"));
    println!(
        "assembly without a plugin (identity only): median {}",
        support::fmt_ns(base)
    );
    for (f, t) in figures.iter_mut().zip(&mut times) {
        let m = median(t);
        f.assembly_ns = m - base;
        f.assembly_p10_p90 = (quantile(t, 0.1) - base, quantile(t, 0.9) - base);
    }
}

/// Child process: `INSTANCES` live instances of one plugin, one per scope, each called once;
/// prints the resident-memory growth per instance.
fn child_memory(index: usize, cache: &Path) {
    let plugin = &plugins()[index];
    let host = host(cache);
    let code = host
        .runtime()
        .compile(plugin.label, &plugin.wasm, None)
        .expect("compiled code");
    // One instance first, called once, so what is shared (code, the runtime's first
    // allocations) is resident before the baseline.
    host.bind_scope("agent:0", None).expect("bind");
    let mut keep = vec![host
        .runtime()
        .load(host.registry(), &plugin.spec(Some("agent:0")), &code)
        .expect("load")];
    host.registry()
        .assemble_blocking(Some("agent:0"), context())
        .expect("assemble");
    let before = support::rss();
    for i in 1..=INSTANCES {
        let scope = format!("agent:{i}");
        host.bind_scope(&scope, None).expect("bind");
        keep.push(
            host.runtime()
                .load(host.registry(), &plugin.spec(Some(&scope)), &code)
                .expect("load"),
        );
        host.registry()
            .assemble_blocking(Some(&scope), context())
            .expect("assemble");
    }
    let after = support::rss();
    println!(
        "rss-per-instance {}",
        (after - before) as f64 / INSTANCES as f64
    );
    drop(keep);
}

/// `--loop INDEX WHAT N`: only do one of the measured things `n` times, for a profiler
/// (`perf record`, with `PROMPT_HOST_PERFMAP=1` to name the plugins' functions): `assemble`
/// (one instance, global scope), `spinup` (load and drop), `load` (a warm first load in a
/// fresh runtime). The compile cache is `target/bench-cache`.
fn profile_loop(index: usize, what: &str, n: usize) {
    let plugin = &plugins()[index];
    let cache = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-cache");
    let started = Instant::now();
    match what {
        "assemble" => {
            let (host, _loaded) = deployed(plugin, &cache);
            for _ in 0..n {
                std::hint::black_box(
                    host.registry()
                        .assemble_blocking(None, context())
                        .expect("assemble"),
                );
            }
        }
        "spinup" => {
            let host = host(&cache);
            let code = host
                .runtime()
                .compile(plugin.label, &plugin.wasm, None)
                .expect("compiled code");
            for _ in 0..n {
                drop(
                    host.runtime()
                        .load(host.registry(), &plugin.spec(None), &code)
                        .expect("load"),
                );
            }
        }
        "load" => {
            for _ in 0..n {
                let runtime =
                    WasmRuntime::new(RuntimeConfig::with_cache_dir(&cache)).expect("runtime");
                runtime
                    .compile(plugin.label, &plugin.wasm, None)
                    .expect("load");
            }
        }
        other => panic!("--loop: unknown {other:?} (assemble, spinup, load)"),
    }
    println!(
        "{} {what} × {n}: {:.1} µs each",
        plugin.label,
        started.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}

fn plugins() -> Vec<Plugin> {
    vec![
        Plugin::example(&polyglot::JAVASCRIPT),
        Plugin::example(&polyglot::PYTHON),
        Plugin::rust(),
    ]
}

/// Whether both example components can be used: built (building them when
/// `PROMPT_HOST_POLYGLOT=1`), else a message saying why not.
fn components_ready() -> Result<(), String> {
    for example in polyglot::EXAMPLES {
        let state = example
            .freshness()
            .map_err(|e| format!("{}: {e}", example.dir))?;
        match state {
            Freshness::UpToDate => {}
            _ if polyglot::enabled() => {
                example.ensure_built()?;
            }
            Freshness::Missing => {
                return Err(format!(
                    "{}/dist/plugin.wasm is not built (run its ./build.sh, or set \
                     PROMPT_HOST_POLYGLOT=1 to build it here; needs {})",
                    example.dir, example.needs
                ))
            }
            Freshness::Stale(_) => eprintln!(
                "note: {}/dist/plugin.wasm is {state}; measuring it anyway \
                 (PROMPT_HOST_POLYGLOT=1 rebuilds it)",
                example.dir
            ),
        }
    }
    Ok(())
}

fn row(
    label: &str,
    figures: &[Figures],
    value: impl Fn(&Figures) -> Option<f64>,
    show: impl Fn(f64) -> String,
) {
    let values: Vec<Option<f64>> = figures.iter().map(&value).collect();
    let cell = |v: Option<f64>| v.map_or("–".to_string(), &show);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.0}×", a / b),
        _ => "–".to_string(),
    };
    println!(
        "| {label} | {} | {} | {} | {} | {} |",
        cell(values[0]),
        cell(values[1]),
        cell(values[2]),
        ratio(values[0], values[2]),
        ratio(values[1], values[2]),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child-memory") {
        child_memory(args[i + 1].parse().expect("index"), Path::new(&args[i + 2]));
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--loop") {
        let arg = |k: usize| args.get(i + k).map(String::as_str).unwrap_or_default();
        profile_loop(
            arg(1)
                .parse()
                .expect("--loop INDEX (0 JavaScript, 1 Python, 2 Rust)"),
            arg(2),
            arg(3).parse().expect("--loop INDEX WHAT N"),
        );
        return;
    }
    if let Err(why) = components_ready() {
        println!("polyglot bench skipped: {why}");
        return;
    }
    let plugins = plugins();
    let mut figures: Vec<Figures> = plugins.iter().map(|_| Figures::default()).collect();
    let root = tempfile::tempdir().expect("temp dir");
    let caches: Vec<PathBuf> = plugins
        .iter()
        .map(|p| root.path().join(format!("cache-{}", p.prefix)))
        .collect();

    println!("== compile and first loads");
    for ((p, cache), f) in plugins.iter().zip(&caches).zip(&mut figures) {
        loads(p, cache, f);
        println!(
                "{:<10} compile {}, warm first load median {} (p10–p90 {}–{}), of which reading the artifact {}; by bytes (read + hash the component) {}",
                p.label,
                ms(f.compile_ns),
                ms(f.warm_ns),
                ms(f.warm_p10_p90.0),
                ms(f.warm_p10_p90.1),
                ms(f.warm_read_artifact_ns),
            ms(f.warm_bytes_ns)
        );
    }

    println!("== spin-up ({SPINUPS} per plugin, interleaved)");
    spinups(&plugins, &caches, &mut figures);
    for (p, f) in plugins.iter().zip(&figures) {
        println!(
            "{:<10} median {} (p10–p90 {}–{})",
            p.label,
            support::fmt_ns(f.spinup_ns),
            support::fmt_ns(f.spinup_p10_p90.0),
            support::fmt_ns(f.spinup_p10_p90.1)
        );
    }

    println!("== per assembly ({ROUNDS} rounds, interleaved with a bare host)");
    assemblies(&plugins, &caches, &mut figures);
    for (p, f) in plugins.iter().zip(&figures) {
        println!(
            "{:<10} +{} (p10–p90 +{}–+{})",
            p.label,
            support::fmt_ns(f.assembly_ns),
            support::fmt_ns(f.assembly_p10_p90.0),
            support::fmt_ns(f.assembly_p10_p90.1)
        );
    }

    println!("== memory ({INSTANCES} live instances, one process per plugin)");
    let me = std::env::current_exe().expect("current exe");
    for (i, (p, f)) in plugins.iter().zip(&mut figures).enumerate() {
        let out = Command::new(&me)
            .args(["--child-memory", &i.to_string()])
            .arg(&caches[i])
            .output()
            .expect("child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{} memory run failed:\n{stdout}\n{}",
            p.label,
            String::from_utf8_lossy(&out.stderr)
        );
        f.rss_per_instance = stdout
            .lines()
            .find_map(|l| l.strip_prefix("rss-per-instance "))
            .and_then(|v| v.parse().ok())
            .expect("the child's figure");
        println!("{:<10} {} per instance", p.label, mb(f.rss_per_instance));
    }

    println!("\n== summary (this run; ratios against the Rust twin)\n");
    println!("| | JavaScript | Python | Rust (`declare`) | JS / Rust | Py / Rust |");
    println!("|---|---|---|---|---|---|");
    row("component", &figures, |f| Some(f.component), mb);
    row("component, gzip -9", &figures, |f| f.gzipped, mb);
    row(
        "compiled artifact (compile cache)",
        &figures,
        |f| Some(f.artifact),
        mb,
    );
    row(
        "first compile (cold cache)",
        &figures,
        |f| Some(f.compile_ns),
        ms,
    );
    row(
        "first load, warm cache (fresh runtime, `compile_file`), median",
        &figures,
        |f| Some(f.warm_ns),
        ms,
    );
    row(
        "spin-up: instantiate + `init` from compiled code, median",
        &figures,
        |f| Some(f.spinup_ns),
        support::fmt_ns,
    );
    row(
        &format!("resident memory per live instance ({INSTANCES} alive)"),
        &figures,
        |f| Some(f.rss_per_instance),
        mb,
    );
    row(
        "one assembly: with the plugin − without, median",
        &figures,
        |f| Some(f.assembly_ns),
        support::fmt_ns,
    );
}
