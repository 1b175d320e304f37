//! The runtime: one engine context and one code cache per host (`engine.rs`, `code.rs`),
//! and the ways in: compiling a component, loading one into a scope of a registry,
//! checking one.

use std::path::Path;
use std::sync::Arc;

use wasmtime::Engine;

use super::ahead::Ahead;
use super::code::{CacheStats, CodeCache, PluginCode};
use super::digest;
use super::engine::EngineCtx;
use super::error::WasmError;
use super::ident::Ident;
use super::plugin::LoadedPlugin;
use super::settings::RuntimeConfig;
use crate::policy::PluginSpec;
use crate::prompt::Registry;

/// What one runtime holds.
struct Runtime {
    engine: Arc<EngineCtx>,
    code: CodeCache,
}

/// The Wasm runtime of one host. Cheap to clone (shared).
///
/// Loading a plugin names its code once, as a path, bytes or code compiled before
/// ([`PluginSource`]); compiling once and loading many times is how a host spins up scopes:
///
/// ```no_run
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::path::Path;
/// use prompt_host::prompt::{PromptConfig, Registry};
/// use prompt_host::{PluginSpec, RuntimeConfig, WasmRuntime};
///
/// let runtime = WasmRuntime::new(RuntimeConfig::default())?;
/// let registry = Registry::new(PromptConfig::default())?;
/// // From a file, pinned to its sha256 …
/// let pinned = PluginSpec::new("persona").scope("agent:1").sha256("9f2c…");
/// let first = runtime.load(&registry, &pinned, Path::new("persona.wasm"))?;
/// // … or compiled once and loaded again without reading or compiling.
/// let code = runtime.compile("persona", Path::new("persona.wasm"), None)?;
/// let second = runtime.load(&registry, &PluginSpec::new("persona").scope("agent:2"), &code)?;
/// drop((first, second)); // each disposes what its plugin registered
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct WasmRuntime {
    inner: Arc<Runtime>,
}

impl std::fmt::Debug for WasmRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmRuntime")
            .field("stats", &self.stats())
            .finish()
    }
}

/// Where a plugin's code comes from.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum PluginSource<'a> {
    /// A component file. With a disk cache, a file unchanged since it was last hashed is not
    /// read again (unless the plugin is pinned: a pinned file is always read and hashed
    /// before anything is compiled from it).
    Path(&'a Path),
    /// A component's bytes.
    Bytes(&'a [u8]),
    /// Code compiled before ([`WasmRuntime::compile`]): nothing is read, hashed or compiled.
    Code(&'a PluginCode),
}

impl<'a> From<&'a Path> for PluginSource<'a> {
    fn from(path: &'a Path) -> Self {
        Self::Path(path)
    }
}

impl<'a> From<&'a std::path::PathBuf> for PluginSource<'a> {
    fn from(path: &'a std::path::PathBuf) -> Self {
        Self::Path(path)
    }
}

impl<'a> From<&'a Vec<u8>> for PluginSource<'a> {
    fn from(bytes: &'a Vec<u8>) -> Self {
        Self::Bytes(bytes)
    }
}

impl<'a> From<&'a [u8]> for PluginSource<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        Self::Bytes(bytes)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for PluginSource<'a> {
    fn from(bytes: &'a [u8; N]) -> Self {
        Self::Bytes(bytes)
    }
}

impl<'a> From<&'a PluginCode> for PluginSource<'a> {
    fn from(code: &'a PluginCode) -> Self {
        Self::Code(code)
    }
}

impl WasmRuntime {
    /// Build the engine and the linker, open the disk cache and start the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self, WasmError> {
        let engine = EngineCtx::new(&config)?;
        let code = CodeCache::new(&config, &engine.engine);
        Ok(Self {
            inner: Arc::new(Runtime {
                engine: Arc::new(engine),
                code,
            }),
        })
    }

    /// Start building, on a thread of its own, the engine and linker that a runtime of
    /// `config` needs (about half a millisecond), so that they are ready when it is created:
    /// call it before reading a host.toml, then [`WasmRuntime::new`] or
    /// [`crate::Host::from_config`] with the same settings takes them. The next runtime with
    /// other engine settings (fuel, stack size, the pooling allocator, which is never built
    /// ahead) builds its own; a warm-up nobody takes is an engine kept until the process
    /// ends. Nothing happens on one core.
    pub fn warm_up(config: &RuntimeConfig) {
        super::warm_up::start(config);
    }

    /// Tell the operator about plugin `plugin` in `scope` (the log at warn, and the log sink
    /// as a line of `stream`, e.g. `skipped`): for decisions the host takes about a plugin
    /// outside any call, such as leaving it out of a deployment.
    pub fn announce(&self, plugin: &str, scope: Option<&str>, stream: &'static str, message: &str) {
        self.inner
            .engine
            .announce(&Ident::new(plugin, scope), stream, message);
    }

    /// The shared engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine.engine
    }

    /// Compiled-code cache counters.
    pub fn stats(&self) -> CacheStats {
        self.inner.code.stats()
    }

    /// The compiled code of a plugin's component (from memory, the disk cache, or compiled
    /// now), ready to be loaded any number of times ([`PluginSource::Code`]). `name` is used
    /// in errors; a `pin` (hex sha256) refuses other bytes before they are compiled.
    pub fn compile<'a>(
        &self,
        name: &str,
        source: impl Into<PluginSource<'a>>,
        pin: Option<&str>,
    ) -> Result<PluginCode, WasmError> {
        let engine = &self.inner.engine;
        let source = source.into();
        // Code already compiled is not compiled again, so it has no span.
        let span = match source {
            PluginSource::Code(_) => tracing::Span::none(),
            _ => tracing::info_span!(
                "prompt_host.compile",
                prompt_host.plugin = name,
                prompt_host.compile_cache = tracing::field::Empty,
            ),
        };
        let _entered = span.enter();
        match source {
            PluginSource::Path(path) => self.inner.code.compile_file(engine, name, path, pin),
            PluginSource::Bytes(wasm) => self.inner.code.compile(engine, name, wasm, pin),
            PluginSource::Code(code) => {
                digest::check_pin(name, pin, code.sha256())?;
                Ok(code.clone())
            }
        }
    }

    /// Load a plugin into `spec.scope` (`None` = global): its compiled code as
    /// [`WasmRuntime::compile`] finds it (checking `spec.sha256`), instantiated, with
    /// `init(spec.config)` run and its declarations going to a fiber owned by `spec.name`.
    /// The returned handle owns that fiber.
    pub fn load<'a>(
        &self,
        registry: &Arc<Registry>,
        spec: &PluginSpec,
        source: impl Into<PluginSource<'a>>,
    ) -> Result<LoadedPlugin, WasmError> {
        let span = tracing::info_span!(
            "prompt_host.load",
            prompt_host.plugin = %spec.name,
            prompt_host.scope = spec.scope.as_deref().unwrap_or("global"),
        );
        let _entered = span.enter();
        let code = self.compile(&spec.name, source, spec.sha256.as_deref())?;
        LoadedPlugin::load(
            self.inner.engine.clone(),
            code.compiled().clone(),
            registry,
            &spec.name,
            spec.scope.as_deref(),
            // `to_string` (not `Display`): the direct writer is about twice as fast, and this
            // runs on every scope spin-up.
            serde_json::to_string(&spec.config).map_err(|e| WasmError::Engine {
                plugin: spec.name.clone(),
                scope: spec.scope.clone(),
                message: format!("cannot serialise the config: {e}"),
            })?,
            spec.options.clone(),
        )
    }

    /// Run a plugin's `init` ahead of its turn, for [`crate::Host::from_config`] (see
    /// `ahead.rs`): commit the answer in the plugin's turn. `None`: load it then, the usual
    /// way, which decides what its load gives.
    pub(crate) fn load_ahead(&self, spec: &PluginSpec, code: &PluginCode) -> Option<Ahead> {
        let span = tracing::info_span!(
            "prompt_host.load",
            prompt_host.plugin = %spec.name,
            prompt_host.scope = spec.scope.as_deref().unwrap_or("global"),
        );
        let _entered = span.enter();
        digest::check_pin(&spec.name, spec.sha256.as_deref(), code.sha256()).ok()?;
        let config_json = serde_json::to_string(&spec.config).ok()?;
        Ahead::run(
            self.inner.engine.clone(),
            code.compiled().clone(),
            &spec.name,
            spec.scope.as_deref(),
            config_json,
            spec.options.clone(),
        )
    }

    /// Read a component file: a regular file of at most `max_wasm_bytes` (a FIFO, a device
    /// or an endless file is refused without being read).
    pub fn read(&self, plugin: &str, path: &Path) -> Result<Vec<u8>, WasmError> {
        self.inner.code.read(plugin, path)
    }

    pub(crate) fn engine_ctx(&self) -> &Arc<EngineCtx> {
        &self.inner.engine
    }
}
