//! An engine and a linker built ahead, while the caller reads its host.toml.
//!
//! Every runtime starts by creating its engine (~0.2 ms: the compiler's settings) and its
//! linker (~0.3 ms: WASI and the plugin imports). Neither needs anything a host.toml says,
//! unless it asks for the pooling allocator. [`WasmRuntime::warm_up`] starts both on a thread
//! of their own; the next runtime created with the same engine settings takes them instead
//! of building its own. One warm-up serves one runtime; a warm-up nobody takes costs a thread
//! and an engine that lives until the process ends.
//!
//! [`WasmRuntime::warm_up`]: super::WasmRuntime::warm_up

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Mutex, PoisonError};

use wasmtime::Engine;

use super::engine_build::{build_linker, engine_config, LinkerThread};
use super::settings::RuntimeConfig;

/// What decides the engine: a runtime with the same takes a warm-up.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EngineSettings {
    fuel: bool,
    max_wasm_stack: Option<usize>,
    perfmap: bool,
}

impl EngineSettings {
    /// `None` with the pooling allocator: its pool is sized by host.toml, so it is never
    /// built ahead.
    fn of(config: &RuntimeConfig) -> Option<Self> {
        config.pooling.is_none().then(|| Self {
            fuel: config.fuel,
            max_wasm_stack: config.max_wasm_stack,
            perfmap: std::env::var_os("PROMPT_HOST_PERFMAP").is_some_and(|v| v == "1"),
        })
    }
}

type Built<T> = Result<T, String>;

/// An engine on its way (sent as soon as it exists), then its linker.
struct Warm {
    settings: EngineSettings,
    engine: Receiver<Built<Engine>>,
    linker: LinkerThread,
}

static WARM: Mutex<Option<Warm>> = Mutex::new(None);

/// Start building the engine and linker of `config` on a thread of their own (replacing a
/// warm-up nobody took). Nothing happens with the pooling allocator or on one core.
pub(crate) fn start(config: &RuntimeConfig) {
    let Some(settings) = EngineSettings::of(config) else {
        return;
    };
    if crate::blocking::cores() < 2 {
        return;
    }
    let engine_settings = engine_config(config);
    let (sent, engine) = sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("prompt-host-warm-up".into())
        .spawn(move || {
            let built = Engine::new(&engine_settings).map_err(|e| e.to_string());
            let linker = match &built {
                Ok(engine) => Some(engine.clone()),
                Err(_) => None,
            };
            // The receiver may be gone (a later warm-up replaced this one): nothing to do.
            let _ = sent.send(built);
            match linker {
                Some(engine) => build_linker(&engine),
                None => Err("the engine could not be built".into()),
            }
        });
    if let Ok(linker) = spawned {
        *WARM.lock().unwrap_or_else(PoisonError::into_inner) = Some(Warm {
            settings,
            engine,
            linker,
        });
    }
}

/// The engine built ahead for `config` (waiting for it if it is still being built) and the
/// thread finishing its linker; `None` when there is none for these settings.
pub(crate) fn take(config: &RuntimeConfig) -> Option<(Built<Engine>, LinkerThread)> {
    let settings = EngineSettings::of(config)?;
    let warm = {
        let mut slot = WARM.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.as_ref() {
            Some(warm) if warm.settings == settings => slot.take()?,
            _ => return None,
        }
    };
    let engine = warm
        .engine
        .recv()
        .unwrap_or_else(|_| Err("the thread building the engine ended without it".into()));
    Some((engine, warm.linker))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::wasm::Pooling;

    #[test]
    fn a_warm_up_serves_one_runtime_with_its_engine_settings() {
        // A stack size no other test uses: no runtime of another test takes this warm-up.
        let config = RuntimeConfig {
            max_wasm_stack: Some(777 * 1024),
            ..RuntimeConfig::default()
        };
        start(&config);
        if crate::blocking::cores() < 2 {
            assert!(
                take(&config).is_none(),
                "nothing is built ahead on one core"
            );
            return;
        }
        let other = RuntimeConfig {
            fuel: !config.fuel,
            ..config.clone()
        };
        assert!(
            take(&other).is_none(),
            "other engine settings build their own"
        );
        let (engine, linker) = take(&config).expect("the warm-up, taken");
        let engine = engine.unwrap();
        let linker = linker.join().unwrap().unwrap();
        // An empty component (the binary header of the component layer) links against it.
        let empty = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        let component = wasmtime::component::Component::new(&engine, empty).unwrap();
        assert!(
            linker.instantiate_pre(&component).is_ok(),
            "the linker is the engine's"
        );
        assert!(take(&config).is_none(), "a warm-up serves one runtime");

        let pooled = RuntimeConfig {
            pooling: Some(Pooling::default()),
            ..config.clone()
        };
        start(&pooled);
        assert!(
            take(&pooled).is_none(),
            "the pooling allocator is never built ahead"
        );
    }
}
