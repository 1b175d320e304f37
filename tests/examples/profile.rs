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
