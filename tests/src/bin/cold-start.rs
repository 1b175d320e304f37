//! One cold start of a host process on the reference deployment, for the `cold_start`
//! bench: build the runtime, load the 12 plugins (compiling them, or deserializing them from
//! the on-disk cache), run the first assembly + render, and print the phases as one JSON
//! line.
//!
//! ```text
//! cold-start [--cache DIR] [--distinct] [--pooling]
//! cold-start --host-toml DIR [--again N] [--no-warm-up]
//! ```
//!
//! `--host-toml DIR` writes the reference deployment as `DIR/host.toml` (its components
//! copied into `DIR`, compiled code cached in `DIR/cache`) unless it exists, then does what
//! a host process does with it: `HostConfig::load`, `Host::from_config`, the first render for
//! `agent:0`. `--again N` repeats the load and render N more times in the same process and
//! reports the fastest repeat too. `--no-warm-up` leaves out `WasmRuntime::warm_up` (the
//! engine and linker then start when `Host::from_config` does), for a side-by-side figure.
//!
//! Without `--cache` there is no disk cache (every distinct component is compiled).
//! `--distinct` gives every plugin its own component (a custom section makes the bytes
//! differ), as in a deployment of 12 different plugins; without it the 12 plugins are two
//! components (`declare` ×11, `redactor` ×1).

use std::path::Path;
use std::time::Instant;

use prompt_host::config::HostConfig;
use prompt_host::prompt::render_prompt;
use prompt_host::wasm::{RuntimeConfig, WasmRuntime};
use prompt_host::{Facts, Host};
use prompt_host_tests::reference::{self, Code, Guests, Listener, Reference};

/// `wasm` with a custom section named `prompt-host-bench` holding `tag` appended.
fn tagged(wasm: &[u8], tag: usize) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let name = b"prompt-host-bench";
    let payload = tag.to_le_bytes();
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(&payload);
    let mut out = wasm.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend_from_slice(&body);
    out
}

/// The phases of loading `dir/host.toml` and rendering once, in µs.
fn load_host_toml(
    runtime: &tokio::runtime::Runtime,
    path: &Path,
    warm_up: bool,
) -> (u64, u64, u64, usize) {
    let started = Instant::now();
    // As the command line does: the engine and linker are built while host.toml is read.
    if warm_up {
        WasmRuntime::warm_up(&RuntimeConfig::default());
    }
    let config = HostConfig::load(path).expect("host.toml");
    let parsed = started.elapsed();
    let host = Host::from_config(&config, RuntimeConfig::default()).expect("from_config");
    let loaded = started.elapsed();
    let facts = Facts::new()
        .with("model", "deepseek-v4")
        .with("cwd", "/work/project");
    let rendered = runtime
        .block_on(host.render(Some(&reference::agent(0)), facts))
        .expect("render");
    let done = started.elapsed();
    let us = |d: std::time::Duration| d.as_micros() as u64;
    (
        us(parsed),
        us(loaded - parsed),
        us(done - loaded),
        rendered.prompt.len(),
    )
}

/// `--host-toml DIR [--again N] [--no-warm-up]`.
fn host_toml_mode(dir: &Path, again: usize, warm_up: bool) {
    let started = Instant::now();
    let path = dir.join("host.toml");
    if !path.exists() {
        Reference::new().write_deployment(dir, &Guests::load(), &dir.join("cache"));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let (parse_us, load_us, render_us, prompt_bytes) = load_host_toml(&runtime, &path, warm_up);
    let total_us = started.elapsed().as_micros() as u64;
    let repeats: Vec<u64> = (0..again)
        .map(|_| {
            let (p, l, r, _) = load_host_toml(&runtime, &path, warm_up);
            p + l + r
        })
        .collect();
    println!(
        "{}",
        serde_json::json!({
            "parse_us": parse_us,
            "load_us": load_us,
            "first_render_us": render_us,
            "total_us": total_us,
            "prompt_bytes": prompt_bytes,
            "again_min_us": repeats.iter().min(),
        })
    );
}

fn main() {
    let started = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--host-toml") {
        let dir = args.get(1).expect("--host-toml DIR");
        let again = match (args.get(2).map(String::as_str), args.get(3)) {
            (Some("--again"), Some(n)) => n.parse().expect("--again N"),
            _ => 0,
        };
        let warm_up = !args.iter().any(|a| a == "--no-warm-up");
        host_toml_mode(Path::new(dir), again, warm_up);
        return;
    }
    let mut cache = None;
    let mut distinct = false;
    let mut pooling = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--cache" => cache = Some(args.next().expect("--cache DIR")),
            "--distinct" => distinct = true,
            "--pooling" => pooling = true,
            other => panic!("unknown argument {other}"),
        }
    }
    let guests = Guests::load();
    let config = RuntimeConfig::without_cache();
    let config = match cache {
        Some(dir) => config.cache_dir(dir),
        None => config,
    };
    let config = if pooling {
        config.pooling(prompt_host::wasm::Pooling::default())
    } else {
        config
    };
    let runtime = WasmRuntime::new(config).expect("runtime");
    let runtime_ready = started.elapsed();

    let reference = Reference::new();
    let registry = Reference::registry(1);
    let scope = reference::agent(0);
    let mut loaded = Vec::new();
    for (i, plugin) in reference.plugins.iter().enumerate() {
        let wasm = match plugin.listener {
            Some(Listener::Redactor) => &guests.redactor,
            _ => &guests.declare,
        };
        let wasm = if distinct {
            tagged(wasm, i)
        } else {
            wasm.clone()
        };
        // What loading a plugin from its file does: hash, fetch or compile, instantiate.
        let code = runtime.compile(&plugin.name, &wasm, None).expect("compile");
        let both = Code {
            declare: code.clone(),
            redactor: code,
        };
        loaded.push(plugin.load_wasm(&runtime, &registry, &both, plugin.scope(&scope)));
    }
    let plugins_ready = started.elapsed();
    let assembly = registry
        .assemble_blocking(Some(&scope), Reference::context())
        .expect("assemble");
    let prompt = render_prompt(&assembly).expect("render");
    let first_step = started.elapsed();
    let stats = runtime.stats();
    println!(
        "{}",
        serde_json::json!({
            "plugins": loaded.len(),
            "runtime_us": runtime_ready.as_micros() as u64,
            "load_us": (plugins_ready - runtime_ready).as_micros() as u64,
            "first_step_us": (first_step - plugins_ready).as_micros() as u64,
            "total_us": first_step.as_micros() as u64,
            "prompt_bytes": prompt.len(),
            "compiles": stats.compiles,
            "disk_hits": stats.disk_hits,
            "memory_hits": stats.memory_hits,
            "disk_rejected": stats.disk_rejected,
        })
    );
}
