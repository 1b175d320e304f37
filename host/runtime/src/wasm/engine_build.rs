//! What building a runtime's engine and linker takes: the engine settings of a
//! [`RuntimeConfig`], and the linker with WASI (the sandbox's replacements included) and the
//! plugin imports of every contract version. Built by `engine.rs` when a runtime is created,
//! or ahead of it by `warm_up.rs`.

use std::thread::JoinHandle;

use wasmtime::component::Linker;
use wasmtime::{Config, Engine};

use super::settings::RuntimeConfig;
use super::store::StoreData;

/// A thread building a linker, and what it gives.
pub(crate) type LinkerThread = JoinHandle<Result<Linker<StoreData>, String>>;

/// The engine settings of `config`.
pub(crate) fn engine_config(config: &RuntimeConfig) -> Config {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true);
    cfg.epoch_interruption(true);
    cfg.consume_fuel(config.fuel);
    if std::env::var_os("PROMPT_HOST_PERFMAP").is_some_and(|v| v == "1") {
        cfg.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    if let Some(stack) = config.max_wasm_stack {
        cfg.max_wasm_stack(stack);
    }
    if let Some(pooling) = &config.pooling {
        cfg.allocation_strategy(pooling.strategy());
    }
    cfg
}

/// WASI (with the sandbox's replacements), `wasi:http` (every request refused but to the
/// origins a plugin is granted) and the plugin imports of every contract version.
pub(crate) fn build_linker(engine: &Engine) -> Result<Linker<StoreData>, String> {
    let mut linker = Linker::<StoreData>::new(engine);
    super::sandbox::add_to_linker(&mut linker).map_err(|e| e.to_string())?;
    #[cfg(feature = "http")]
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker).map_err(|e| e.to_string())?;
    super::contract::add_to_linker(&mut linker).map_err(|e| e.to_string())?;
    Ok(linker)
}
