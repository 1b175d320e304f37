//! The engine context of one runtime: the wasmtime `Engine` and `Linker` (WASI, empty per
//! store, with the sandbox's replacements, plus the plugin imports of every contract
//! version), whether fuel is metered, where plugin output goes, and the epoch ticker that
//! drives every call's wall-clock deadline.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::{Config, Engine};

use super::error::WasmError;
use super::ident::{announce, Ident, LogSink};
use super::settings::RuntimeConfig;
use super::store::StoreData;

/// See the module docs.
pub(crate) struct EngineCtx {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<StoreData>,
    /// Fuel metering is on; each plugin's `limits.fuel` applies per call.
    pub(crate) fuel: bool,
    /// Where plugin output also goes.
    pub(crate) log_sink: Option<LogSink>,
    /// Stops the epoch ticker when the engine context goes.
    stop: Arc<AtomicBool>,
}

impl EngineCtx {
    /// Build the engine and linker of `config` and start the epoch ticker.
    pub(crate) fn new(config: &RuntimeConfig) -> Result<Self, WasmError> {
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
        let engine = Engine::new(&cfg).map_err(WasmError::runtime)?;
        let mut linker = Linker::<StoreData>::new(&engine);
        super::sandbox::add_to_linker(&mut linker).map_err(WasmError::runtime)?;
        super::contract::add_to_linker(&mut linker).map_err(WasmError::runtime)?;
        let stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), stop.clone(), config.epoch_tick)?;
        Ok(Self {
            engine,
            linker,
            fuel: config.fuel,
            log_sink: config.log_sink.clone(),
            stop,
        })
    }

    /// Tell the operator about a plugin: skipped, quarantined, left out at start-up.
    pub(crate) fn announce(&self, ident: &Ident, stream: &'static str, message: &str) {
        announce(self.log_sink.as_ref(), ident, stream, message);
    }
}

impl Drop for EngineCtx {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn spawn_ticker(engine: Engine, stop: Arc<AtomicBool>, tick: Duration) -> Result<(), WasmError> {
    std::thread::Builder::new()
        .name("prompt-host-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })
        .map(drop)
        .map_err(|e| WasmError::runtime(format!("cannot start the epoch ticker: {e}")))
}
