//! A profiling driver for the benchmarks' hot paths, to run under
//! `valgrind --tool=callgrind` (instruction counts) or `perf`:
//!
//! ```text
//! cargo build --release -p prompt-host-tests --example profile
//! valgrind --tool=callgrind target/release/examples/profile spinup 200
//! valgrind --tool=callgrind target/release/examples/profile step 2000
//! ```
//!
//! `step`: assemble + render the reference deployment for an agent scope (Wasm plugins);
//! `step-native`: the same through native closures; `spinup`: load an agent scope's three
//! plugins and drop them; `growth-100` / `growth-1000`: a step over a chain of 100 or
//! 1,000 plugins (these two need `perf`: valgrind cannot reserve the address space of many
//! instances); `cold-warm N`: N plugins in N scopes, each scope assembled twice in a row,
//! printing the median first (cold) and second (warm) assembly. Compiled plugins are
//! cached in `target/bench-cache`. `PROFILE_V2=1` uses the guests built against contract
//! 0.2.0, `PROFILE_DYNAMIC=1` the reference content with every provider dynamic.

use prompt_host::prompt::render_prompt;
use prompt_host::wasm::{RuntimeConfig, WasmRuntime};
use prompt_host_tests::reference::{self, Code, Guests, Reference};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("step", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let cache = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-cache");
    let mut config = RuntimeConfig::with_cache_dir(cache);
    // `PROFILE_POOLING=1`: the same run with the pooling allocator.
    if std::env::var_os("PROFILE_POOLING").is_some_and(|v| v == "1") {
        config.pooling = Some(prompt_host::wasm::Pooling::new(4_096));
    }
    let runtime = WasmRuntime::new(config).expect("runtime");
    // `PROFILE_V2=1`: the guests built against contract 0.2.0; `PROFILE_DYNAMIC=1`: every
    // provider of the reference deployment dynamic.
    let on = |name: &str| std::env::var_os(name).is_some_and(|v| v == "1");
    let mut guests = if on("PROFILE_V2") {
        Guests::load_v2()
    } else {
        Guests::load()
    };
    // `PROFILE_GUESTS=DIR`: `declare*.wasm` and `redactor*.wasm` built without stripping
    // their names (`CARGO_PROFILE_RELEASE_STRIP=false`), so `perf` can name guest functions
    // (with `PROMPT_HOST_PERFMAP=1`).
    if let Some(dir) = std::env::var_os("PROFILE_GUESTS") {
        let suffix = if on("PROFILE_V2") { "_v2" } else { "" };
        let dir = std::path::Path::new(&dir);
        guests.declare = std::fs::read(dir.join(format!("declare{suffix}.wasm"))).expect("declare");
        guests.redactor =
            std::fs::read(dir.join(format!("redactor{suffix}.wasm"))).expect("redactor");
    }
    let code = Code::compile(&runtime, &guests);
    let reference = if on("PROFILE_DYNAMIC") {
        Reference::all_dynamic()
    } else {
        Reference::new()
    };
    let registry = Reference::registry(1);
    let scope = reference::agent(0);
    match what {
        "spinup" => {
            let _shared: Vec<_> = reference
                .shared()
                .map(|p| p.load_wasm(&runtime, &registry, &code, p.scope("")))
                .collect();
            for _ in 0..n {
                let loaded: Vec<_> = reference
                    .per_agent()
                    .map(|p| p.load_wasm(&runtime, &registry, &code, Some(&scope)))
                    .collect();
                drop(loaded);
            }
        }
        "step" | "step-native" => {
            let _w;
            let _n;
            if what == "step" {
                _w = reference.deploy_wasm(&runtime, &registry, &code, 1);
            } else {
                _n = reference.deploy_native(&registry, 1);
            }
            for _ in 0..n {
                let a = registry
                    .assemble_blocking(Some(&scope), Reference::context())
                    .expect("assemble");
                std::hint::black_box(render_prompt(&a).expect("render"));
            }
        }
        "growth-100" | "growth-1000" => {
            // 100 steps of a chain of 100 or 1,000 plugins (see `reference::chain_plugins`).
            let plugins: usize = what[7..].parse().expect("count");
            let registry = reference::chain_registry();
            let _base = reference::chain_base().load_wasm(&runtime, &registry, &code, None);
            let _loaded: Vec<_> = reference::chain_plugins(plugins)
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let s = reference::chain_scope(i, plugins);
                    p.load_wasm(&runtime, &registry, &code, Some(&s))
                })
                .collect();
            let scope = reference::chain_agent();
            for _ in 0..n {
                let a = registry
                    .assemble_blocking(Some(&scope), Reference::context())
                    .expect("assemble");
                std::hint::black_box(render_prompt(&a).expect("render"));
            }
        }
        "host-render" => host_render(&guests, n),
        "compile-file" => {
            // `n` fresh runtimes on the same cache directory, each finding the `declare`
            // component's code: the warm-start path (identity check, artifact read,
            // deserialization, linking).
            let dir =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-cache");
            let wasm = dir.join("profile-declare.wasm");
            if !wasm.exists() {
                std::fs::write(&wasm, &guests.declare).expect("write wasm");
            }
            for _ in 0..n {
                let mut config = RuntimeConfig::with_cache_dir(&dir);
                config.epoch_tick = std::time::Duration::from_secs(1);
                let runtime = WasmRuntime::new(config).expect("runtime");
                std::hint::black_box(runtime.compile("declare", &wasm, None).expect("compile"));
            }
        }
        "cold-warm" => {
            // `n` plugins, each alone in a scope of its own (one dynamic section, one
            // variable). Each scope is assembled twice in a row: the first assembly finds
            // the instance's memory and store cold (the previous assembly touched another
            // instance), the second finds them warm. Prints the medians of both.
            let registry = reference::chain_registry();
            let _base = reference::chain_base().load_wasm(&runtime, &registry, &code, None);
            let plugins = reference::chain_plugins(n);
            let scopes: Vec<String> = (0..n).map(|i| format!("solo:{i}")).collect();
            let _loaded: Vec<_> = plugins
                .iter()
                .zip(&scopes)
                .map(|(p, s)| p.load_wasm(&runtime, &registry, &code, Some(s)))
                .collect();
            let (mut cold, mut warm) = (Vec::new(), Vec::new());
            for _ in 0..(20_000 / n).max(3) {
                for scope in &scopes {
                    for into in [&mut cold, &mut warm] {
                        let started = std::time::Instant::now();
                        let a = registry
                            .assemble_blocking(Some(scope), Reference::context())
                            .expect("assemble");
                        std::hint::black_box(render_prompt(&a).expect("render"));
                        into.push(started.elapsed().as_nanos() as f64);
                    }
                }
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2] / 1000.0
            };
            println!(
                "{n} instances: first assembly of a scope {:.1} µs, the same scope again {:.1} µs",
                median(&mut cold),
                median(&mut warm)
            );
        }
        other => panic!("unknown {other}"),
    }
}

/// `host-render N`: where an embedder's step goes. The reference deployment is loaded from
/// a host.toml through the public API (`HostConfig::load`, `Host::from_config`), then four
/// ways of producing the same prompt are timed, interleaved round by round so that each
/// sees the same machine state, and their medians and p99s printed in µs:
///
/// - `assemble_blocking + render`: what the step bench measures (no runtime, no gate);
/// - `Registry::assemble + render` on a current-thread runtime: adds the blocking gate
///   (`spawn_blocking` and its hand-off);
/// - `Host::render`, current-thread runtime;
/// - `Host::render`, multi-thread runtime;
/// - `Host::render` driven by the multi-thread runtime's handle on a thread marked by
///   `blocking::allow_blocking`, as `serve` runs a session's request and an in-process
///   client's thread calls: no gate.
///
/// `PROFILE_ONLY=blocking|gate|host-ct|host-mt|host-marked` runs one of them alone (for
/// `perf`).
fn host_render(guests: &Guests, n: usize) {
    use prompt_host::{Facts, Host, HostConfig};
    let dir = tempfile_dir();
    let cache = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-cache");
    let path = Reference::new().write_deployment(&dir, guests, &cache);
    let config = HostConfig::load(&path).expect("host.toml");
    let host = Host::from_config(&config, RuntimeConfig::default()).expect("from_config");
    let scope = reference::agent(0);
    let facts = || {
        Facts::new()
            .with("model", "deepseek-v4")
            .with("cwd", "/work/project")
    };
    let ct = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let mt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let registry = std::sync::Arc::clone(host.registry());
    let expected = ct
        .block_on(host.render(Some(&scope), facts()))
        .expect("render")
        .prompt;
    let blocking = || {
        let a = registry
            .assemble_blocking(Some(&scope), Reference::context())
            .expect("assemble");
        render_prompt(&a).expect("render")
    };
    let gate = || {
        ct.block_on(async {
            let a = registry
                .assemble(Some(&scope), Reference::context())
                .await
                .expect("assemble");
            render_prompt(&a).expect("render")
        })
    };
    let host_ct = || {
        ct.block_on(host.render(Some(&scope), facts()))
            .expect("render")
            .prompt
    };
    // As `serve` runs a session's request, and as an in-process client's calling thread
    // does: on a thread marked as one that may block, which assembles without the gate.
    let handle = mt.handle().clone();
    let host_marked = || {
        prompt_host::blocking::allow_blocking(|| {
            handle
                .block_on(host.render(Some(&scope), facts()))
                .expect("render")
                .prompt
        })
    };
    let host_mt = || {
        mt.block_on(host.render(Some(&scope), facts()))
            .expect("render")
            .prompt
    };
    assert_eq!(blocking(), expected);
    assert_eq!(gate(), expected);
    assert_eq!(host_mt(), expected);
    assert_eq!(host_marked(), expected);
    type Way<'a> = (&'a str, &'a dyn Fn() -> String);
    let ways: [Way; 5] = [
        ("blocking", &blocking),
        ("gate", &gate),
        ("host-ct", &host_ct),
        ("host-mt", &host_mt),
        ("host-marked", &host_marked),
    ];
    let only = std::env::var("PROFILE_ONLY").ok();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(n); ways.len()];
    for _ in 0..n {
        for (i, (name, way)) in ways.iter().enumerate() {
            if only.as_deref().is_some_and(|o| o != *name) {
                continue;
            }
            let started = std::time::Instant::now();
            let prompt = way();
            let took = started.elapsed();
            drop(std::hint::black_box(prompt));
            times[i].push(took.as_secs_f64() * 1e6);
        }
    }
    for ((name, _), mut t) in ways.iter().zip(times) {
        if t.is_empty() {
            continue;
        }
        t.sort_by(f64::total_cmp);
        let at = |q: f64| t[((t.len() - 1) as f64 * q) as usize];
        println!(
            "{name:>11}: median {:7.1} µs  p99 {:7.1} µs  min {:7.1} µs",
            at(0.5),
            at(0.99),
            t[0]
        );
    }
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prompt-host-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
