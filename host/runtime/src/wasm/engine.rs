//! The engine context of one runtime: the wasmtime `Engine` and `Linker` (WASI, empty per
//! store, with the sandbox's replacements, plus the plugin imports of every contract
//! version), whether fuel is metered, where plugin output goes, and the epoch ticker that
//! drives every call's wall-clock deadline.
//!
//! The linker is built on a thread of its own when the machine has more than one core: it
//! takes a third of a millisecond, and nothing needs it before the first component's code
//! has been read and deserialised (`instantiate_pre`), which is work of about the same size
//! that can run beside it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::Engine;

use super::engine_build::{build_linker, engine_config, LinkerThread};
use super::error::WasmError;
use super::ident::{announce, Ident, LogSink};
use super::settings::RuntimeConfig;
use super::store::StoreData;

/// See the module docs.
pub(crate) struct EngineCtx {
    pub(crate) engine: Engine,
    /// Built, or being built (see the module docs); read it through [`EngineCtx::linker`].
    linker: OnceLock<Result<Linker<StoreData>, String>>,
    building: Mutex<Option<LinkerThread>>,
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
        let (engine, building) = match super::warm_up::take(config) {
            // Built ahead (`WasmRuntime::warm_up`): the engine is there or nearly, the
            // linker on its way.
            Some((engine, linker)) => (engine.map_err(WasmError::runtime)?, Some(linker)),
            None => {
                let engine = Engine::new(&engine_config(config)).map_err(WasmError::runtime)?;
                let building = if crate::blocking::cores() > 1 {
                    let engine = engine.clone();
                    std::thread::Builder::new()
                        .name("prompt-host-linker".into())
                        .spawn(move || build_linker(&engine))
                        .ok()
                } else {
                    None
                };
                (engine, building)
            }
        };
        let linker = OnceLock::new();
        if building.is_none() {
            // One core (or no thread to be had): now, on this one.
            let _ = linker.set(build_linker(&engine));
        }
        let stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), stop.clone(), config.epoch_tick)?;
        Ok(Self {
            engine,
            linker,
            building: Mutex::new(building),
            fuel: config.fuel,
            log_sink: config.log_sink.clone(),
            stop,
        })
    }

    /// The linker, waiting for its thread the first time if it is still being built.
    pub(crate) fn linker(&self) -> Result<&Linker<StoreData>, WasmError> {
        let built = self.linker.get_or_init(|| {
            let handle = self
                .building
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            match handle.map(JoinHandle::join) {
                Some(Ok(built)) => built,
                Some(Err(_)) => Err("the thread building the linker panicked".into()),
                // Not reached: without a thread, the linker was set at creation.
                None => build_linker(&self.engine),
            }
        });
        built
            .as_ref()
            .map_err(|message| WasmError::runtime(message.as_str()))
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
