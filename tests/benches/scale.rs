//! Memory and scale: 1,000 agent scopes × 3 plugins alive in one process (resident memory
//! per live instance), and assemblies per second over those scopes from concurrent tokio
//! tasks. Each configuration runs in a child process of its own so resident-memory figures
//! do not mix. `cargo bench -p prompt-host-tests --bench scale`.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use prompt_host::prompt::{render_prompt, Registry};
use prompt_host::wasm::{Pooling, RuntimeConfig, WasmRuntime};
use prompt_host_tests::reference::{self, Code, Guests, Reference};

const AGENTS: usize = 1_000;
const STEPS_PER_SCOPE: usize = 10;

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1u64 << 20) as f64)
}

fn step(registry: &Registry, scope: &str) -> usize {
    let a = registry
        .assemble_blocking(Some(scope), Reference::context())
        .expect("assemble");
    render_prompt(&a).expect("render").len()
}

fn child(mode: &str) {
    let guests = Guests::load();
    let cache = tempfile::tempdir().expect("cache");
    let reference = Reference::new();
    let registry = Reference::registry(AGENTS);
    let config = RuntimeConfig::with_cache_dir(cache.path());
    let config = if mode == "pooling" {
        config.pooling(Pooling::new(4_096))
    } else {
        config
    };
    let runtime = WasmRuntime::new(config).expect("runtime");
    let code = Code::compile(&runtime, &guests);
    let native = mode == "native";
    let mut keep_w = Vec::new();
    let mut keep_n = Vec::new();
    // Shared plugins and the first agent, warmed by a step.
    if native {
        keep_n.extend(reference.deploy_native(&registry, 1));
    } else {
        keep_w.extend(reference.deploy_wasm(&runtime, &registry, &code, 1));
    }
    step(&registry, &reference::agent(0));
    let before = support::rss();
    let started = Instant::now();
    for i in 1..AGENTS {
        let scope = reference::agent(i);
        for p in reference.per_agent() {
            if native {
                keep_n.push(p.load_native(&registry, Some(&scope)));
            } else {
                keep_w.push(p.load_wasm(&runtime, &registry, &code, Some(&scope)));
            }
        }
    }
    let spin_up = started.elapsed();
    // Every instance called at least once, as live agents' would be.
    for i in 1..AGENTS {
        step(&registry, &reference::agent(i));
    }
    let after = support::rss();
    let instances = ((AGENTS - 1) * 3) as f64;
    println!(
        "{mode:<10} memory: {} scopes × 3 plugins: RSS {} → {} = {} per plugin instance ({} KiB); spin-up of the {} scopes {:.0} ms ({:.1} µs per plugin)",
        AGENTS - 1,
        mib(before as f64),
        mib(after as f64),
        mib((after - before) as f64 / instances),
        (after - before) as f64 / instances / 1024.0,
        AGENTS - 1,
        spin_up.as_secs_f64() * 1e3,
        spin_up.as_secs_f64() * 1e6 / instances
    );

    // Throughput: sequential on one thread, then concurrent tokio tasks (one per scope).
    let total = AGENTS * STEPS_PER_SCOPE;
    let started = Instant::now();
    for round in 0..STEPS_PER_SCOPE {
        for i in 0..AGENTS {
            std::hint::black_box(step(&registry, &reference::agent((i + round) % AGENTS)));
        }
    }
    let sequential = started.elapsed();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let concurrent = rt.block_on(concurrent(registry.clone()));
    let per_sec = |d: Duration| total as f64 / d.as_secs_f64();
    println!(
        "{mode:<10} throughput over {AGENTS} scopes, {total} assemblies + renders: one thread {:.0}/s ({:.1} µs each); {AGENTS} tokio tasks on {} cores {:.0}/s ({:.1} µs each)",
        per_sec(sequential),
        sequential.as_secs_f64() * 1e6 / total as f64,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        per_sec(concurrent),
        concurrent.as_secs_f64() * 1e6 / total as f64,
    );
    drop(keep_w);
    drop(keep_n);
}

async fn concurrent(registry: Arc<Registry>) -> Duration {
    let started = Instant::now();
    let tasks: Vec<_> = (0..AGENTS)
        .map(|i| {
            let registry = registry.clone();
            tokio::spawn(async move {
                let scope = reference::agent(i);
                for _ in 0..STEPS_PER_SCOPE {
                    let a = registry
                        .assemble(Some(&scope), Reference::context())
                        .await
                        .expect("assemble");
                    std::hint::black_box(render_prompt(&a).expect("render"));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    started.elapsed()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1]);
        return;
    }
    let me = std::env::current_exe().expect("current exe");
    for mode in ["on-demand", "pooling", "native"] {
        let status = std::process::Command::new(&me)
            .args(["--child", mode])
            .status()
            .expect("child");
        assert!(status.success(), "{mode} run failed");
    }
}
