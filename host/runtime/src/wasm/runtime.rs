//! The runtime: one `Engine` and one `Linker` per host, compiled components cached by the
//! sha256 of their bytes (in memory for this process, on disk across processes), and the
//! epoch ticker that drives every call's wall-clock deadline.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};

use super::bindings::instruction_provider::InstructionProviderPre;
use super::bindings::plugin::{Plugin, PluginPre};
use super::cache::{self, DiskCache};
use super::error::WasmError;
use super::limits::PluginOptions;
use super::plugin::LoadedPlugin;
use super::state::{HostState, Ident};
use super::validate;
use crate::prompt::Registry;

/// Where a plugin's output goes besides the `log` crate: its `log` calls and its
/// stdout/stderr lines (within the per-instance byte cap).
pub type LogSink = Arc<dyn Fn(&PluginLog) + Send + Sync>;

/// One line of plugin output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginLog {
    /// The plugin name.
    pub plugin: String,
    /// Its scope, `None` = global.
    pub scope: Option<String>,
    /// `trace`…`error` for `log` calls, `stdout`/`stderr` for captured output, and the
    /// host's own notices about the plugin: `skipped` (a failure left its entries out of an
    /// assembly, or a load failure left it out of a deployment, under `on_error = "skip"`)
    /// and `quarantined`. Those notices are whole sentences naming plugin and scope.
    pub stream: &'static str,
    /// The line, with control and bidi characters escaped (`\n`, `\u{1b}`, …).
    pub message: String,
}

/// How the runtime is built.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; `None` = no disk cache (memory only).
    pub cache_dir: Option<PathBuf>,
    /// Turn fuel metering on (deterministic limits for tests); each plugin's
    /// `limits.fuel` then applies per call.
    pub fuel: bool,
    /// How often the epoch advances: the resolution of call deadlines.
    pub epoch_tick: Duration,
    /// Maximum Wasm stack per call, in bytes (`None` = wasmtime's default, 512 KiB).
    pub max_wasm_stack: Option<usize>,
    /// Also hand every plugin log line to this sink.
    pub log_sink: Option<LogSink>,
    /// Allocate instances from a pre-reserved pool (wasmtime's pooling allocator) instead of
    /// mapping memory per instantiation; `None` (the default) = on demand.
    pub pooling: Option<Pooling>,
    /// The largest component file read, in bytes.
    pub max_wasm_bytes: u64,
}

/// Default of [`RuntimeConfig::max_wasm_bytes`]: 128 MiB, several times the largest
/// components seen (JavaScript and Python runtimes are tens of MiB).
pub const DEFAULT_MAX_WASM_BYTES: u64 = 128 << 20;

/// Settings of the pooling instance allocator: every instance slot (memory, tables, instance
/// data) is reserved once when the runtime is built and reused, so instantiating a plugin
/// maps nothing new (its memory image is still copy-on-write). A host that spins up agent
/// scopes often should use it: a scope's plugins load about twice as fast as on demand.
///
/// The pool is a hard cap: with `max_instances` plugin instances alive, loading one more
/// fails. Each memory slot reserves address space like an on-demand memory does (about
/// 4 GiB of it, not resident); a memory cannot grow past `max_memory_bytes`, whatever a
/// plugin's `limits.memory_bytes` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pooling {
    /// Plugin instances alive at once.
    pub max_instances: u32,
    /// The largest linear memory of one instance, in bytes.
    pub max_memory_bytes: usize,
    /// How much of a freed slot's memory (and of each table) stays resident, reset with
    /// `memset` instead of being returned to the kernel. The next instance in that slot then
    /// takes no page faults on those pages. On Linux 6.7 or later only the pages the last
    /// instance touched are reset. Costs up to this many bytes of resident memory per warm
    /// slot; `0` returns every page.
    pub keep_resident_bytes: usize,
}

impl Default for Pooling {
    fn default() -> Self {
        Self {
            max_instances: 1_000,
            max_memory_bytes: 256 << 20,
            // A Rust plugin's init touches its stack top, data and first heap pages: well
            // under 1 MiB.
            keep_resident_bytes: 1 << 20,
        }
    }
}

impl Pooling {
    /// The wasmtime allocation strategy for these settings. A Rust `wasm32-wasip2` plugin
    /// is one component of a few core instances (the program and its adapter shims), one
    /// memory and a few tables; the per-component caps leave room for more.
    fn strategy(&self) -> wasmtime::InstanceAllocationStrategy {
        let n = self.max_instances.max(1);
        let mut pool = wasmtime::PoolingAllocationConfig::new();
        pool.total_component_instances(n)
            .total_core_instances(n.saturating_mul(8))
            .total_memories(n)
            .total_tables(n.saturating_mul(4))
            .max_core_instances_per_component(32)
            .max_memories_per_component(4)
            .max_tables_per_component(32)
            .max_memory_size(self.max_memory_bytes)
            .linear_memory_keep_resident(self.keep_resident_bytes)
            .table_keep_resident(self.keep_resident_bytes)
            // Reset only the pages that were touched (PAGEMAP_SCAN, Linux 6.7+), where the
            // kernel has it; elsewhere wasmtime falls back to resetting the whole
            // `keep_resident_bytes` prefix.
            .pagemap_scan(wasmtime::Enabled::Auto);
        wasmtime::InstanceAllocationStrategy::Pooling(pool)
    }
}

impl std::fmt::Debug for RuntimeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeConfig")
            .field("cache_dir", &self.cache_dir)
            .field("fuel", &self.fuel)
            .field("epoch_tick", &self.epoch_tick)
            .field("max_wasm_stack", &self.max_wasm_stack)
            .field("log_sink", &self.log_sink.is_some())
            .field("pooling", &self.pooling)
            .field("max_wasm_bytes", &self.max_wasm_bytes)
            .finish()
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: Some(cache::default_cache_dir()),
            fuel: false,
            epoch_tick: Duration::from_millis(1),
            max_wasm_stack: None,
            log_sink: None,
            pooling: None,
            max_wasm_bytes: DEFAULT_MAX_WASM_BYTES,
        }
    }
}

impl RuntimeConfig {
    /// The default config with the disk cache at `dir` (tests pass a temp dir).
    pub fn with_cache_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            cache_dir: Some(dir.into()),
            ..Self::default()
        }
    }
}

/// What to load: a plugin's name, scope, config, limits and optional pin (one `[[plugin]]`
/// entry of host.toml, minus the path).
#[derive(Debug, Clone, PartialEq)]
pub struct PluginSpec {
    /// Plugin name: the fiber owner, named in every error.
    pub name: String,
    /// Scope key to load into; `None` = global.
    pub scope: Option<String>,
    /// Handed to `init` as JSON text (`{}` when absent).
    pub config: serde_json::Value,
    /// Limits and failure policy.
    pub options: PluginOptions,
    /// Refuse the wasm unless its sha256 (hex) equals this.
    pub sha256: Option<String>,
}

impl PluginSpec {
    /// A global plugin with an empty config and default options.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            scope: None,
            config: serde_json::json!({}),
            options: PluginOptions::default(),
            sha256: None,
        }
    }

    /// Load into `scope`.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// Hand `config` to `init`.
    pub fn config(mut self, config: serde_json::Value) -> Self {
        self.config = config;
        self
    }

    /// Use these limits and failure policy.
    pub fn options(mut self, options: PluginOptions) -> Self {
        self.options = options;
        self
    }
}

/// Compiled-code cache counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Loads served by this process's memory map.
    pub memory_hits: u64,
    /// Loads served by deserializing a verified file from the disk cache.
    pub disk_hits: u64,
    /// Components compiled with Cranelift.
    pub compiles: u64,
    /// Disk-cache files refused or unusable (then recompiled).
    pub disk_rejected: u64,
    /// Component files known unchanged by their identity, so neither read nor hashed.
    pub files_unchanged: u64,
}

/// Which world a component implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    /// `plugin`.
    Plugin,
    /// `instruction-provider`.
    InstructionProvider,
}

/// The version of the plugin contract a component was built against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum WitVersion {
    /// `prompt-host:plugin@0.1.0`.
    #[serde(rename = "0.1.0")]
    V0_1_0,
    /// `prompt-host:plugin@0.2.0`: dynamic answers may be "unchanged"; `control` import.
    #[serde(rename = "0.2.0")]
    V0_2_0,
}

impl WitVersion {
    /// The version of a `prompt-host:plugin` name's `@…` suffix, if this host implements it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "0.1.0" => Some(Self::V0_1_0),
            "0.2.0" => Some(Self::V0_2_0),
            _ => None,
        }
    }

    /// `0.1.0` or `0.2.0`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_1_0 => "0.1.0",
            Self::V0_2_0 => "0.2.0",
        }
    }
}

impl std::fmt::Display for WitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The pre-instantiation of a component, by world and contract version.
pub(crate) enum Pre {
    Plugin(PluginPre<HostState>),
    Instructions(InstructionProviderPre<HostState>),
    PluginV2(super::bindings::plugin_v2::PluginPre<HostState>),
    InstructionsV2(super::bindings::instruction_provider_v2::InstructionProviderPre<HostState>),
}

/// A plugin's compiled code and its pre-instantiation, from [`WasmRuntime::compile`]: load
/// it into any number of scopes with [`WasmRuntime::load_code`]. Cheap to clone.
#[derive(Clone)]
pub struct PluginCode {
    compiled: Arc<Compiled>,
}

impl PluginCode {
    /// Lower-case hex sha256 of the wasm it was compiled from.
    pub fn sha256(&self) -> &str {
        &self.compiled.sha256
    }

    /// The world the component implements.
    pub fn world(&self) -> World {
        self.compiled.world
    }

    /// The contract version it was built against.
    pub fn wit_version(&self) -> WitVersion {
        self.compiled.version
    }

    pub(crate) fn compiled(&self) -> &Arc<Compiled> {
        &self.compiled
    }
}

impl std::fmt::Debug for PluginCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginCode")
            .field("sha256", &self.compiled.sha256)
            .field("world", &self.compiled.world)
            .field("version", &self.compiled.version)
            .finish()
    }
}

/// A compiled component and its pre-instantiation, shared by every instance of that wasm.
pub(crate) struct Compiled {
    pub(crate) world: World,
    pub(crate) version: WitVersion,
    pub(crate) pre: Pre,
    /// Lower-case hex sha256 of the wasm.
    pub(crate) sha256: String,
}

type Slot = Arc<Mutex<Option<Arc<Compiled>>>>;

pub(crate) struct RuntimeInner {
    pub(crate) engine: Engine,
    linker: Linker<HostState>,
    disk: Option<DiskCache>,
    compiled: Mutex<HashMap<[u8; 32], Slot>>,
    pub(crate) fuel: bool,
    pub(crate) log_sink: Option<LogSink>,
    max_wasm_bytes: u64,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    compiles: AtomicU64,
    disk_rejected: AtomicU64,
    files_unchanged: AtomicU64,
    stop: Arc<AtomicBool>,
}

impl RuntimeInner {
    /// Tell the operator about a plugin: skipped, quarantined, left out at start-up. Goes to
    /// the `log` crate (warn) and to the log sink as a line of `stream`.
    pub(crate) fn announce(&self, ident: &Ident, stream: &'static str, message: &str) {
        log::warn!(target: "prompt_host::plugin", "{message}");
        if let Some(sink) = &self.log_sink {
            sink(&PluginLog {
                plugin: ident.plugin.to_string(),
                scope: ident.scope.as_deref().map(str::to_string),
                stream,
                message: message.to_string(),
            });
        }
    }
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The Wasm runtime of one host. Cheap to clone (shared).
#[derive(Clone)]
pub struct WasmRuntime {
    inner: Arc<RuntimeInner>,
}

impl std::fmt::Debug for WasmRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmRuntime")
            .field("stats", &self.stats())
            .finish()
    }
}

fn engine_err(plugin: &str, e: impl std::fmt::Display) -> WasmError {
    WasmError::Engine {
        plugin: plugin.to_string(),
        scope: None,
        message: e.to_string(),
    }
}

impl WasmRuntime {
    /// Build the engine, the linker (WASI, empty per store, plus the plugin imports), open
    /// the disk cache and start the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self, WasmError> {
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
        let engine = Engine::new(&cfg).map_err(|e| engine_err("(runtime)", e))?;
        let mut linker = Linker::<HostState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| engine_err("(runtime)", e))?;
        super::clock::add_capped_sleep(&mut linker).map_err(|e| engine_err("(runtime)", e))?;
        super::random::add_bounded_random(&mut linker).map_err(|e| engine_err("(runtime)", e))?;
        super::files::add_guarded_files(&mut linker).map_err(|e| engine_err("(runtime)", e))?;
        Plugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)
            .map_err(|e| engine_err("(runtime)", e))?;
        // 0.2.0 imports the 0.1.0 interfaces above, plus `control`.
        super::bindings::plugin_v2::prompt_host::plugin0_2_0::control::add_to_linker::<
            HostState,
            HasSelf<HostState>,
        >(&mut linker, |s| s)
        .map_err(|e| engine_err("(runtime)", e))?;
        // A cache that cannot be used (a read-only or foreign directory, another user's
        // key) costs speed, not correctness: warn and compile in memory.
        let disk = config
            .cache_dir
            .as_ref()
            .and_then(|dir| match DiskCache::open(dir, &engine) {
                Ok(cache) => Some(cache),
                Err(e) => {
                    log::warn!("{e}; running without a compiled-code cache");
                    None
                }
            });
        let stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), stop.clone(), config.epoch_tick)?;
        Ok(Self {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                disk,
                compiled: Mutex::new(HashMap::new()),
                fuel: config.fuel,
                log_sink: config.log_sink.clone(),
                max_wasm_bytes: config.max_wasm_bytes,
                memory_hits: AtomicU64::new(0),
                disk_hits: AtomicU64::new(0),
                compiles: AtomicU64::new(0),
                disk_rejected: AtomicU64::new(0),
                files_unchanged: AtomicU64::new(0),
                stop,
            }),
        })
    }

    /// Tell the operator about plugin `plugin` in `scope` (the log at warn, and the log sink
    /// as a line of `stream`, e.g. `skipped`): for decisions the host takes about a plugin
    /// outside any call, such as leaving it out of a deployment.
    pub fn announce(&self, plugin: &str, scope: Option<&str>, stream: &'static str, message: &str) {
        let ident = Ident {
            plugin: plugin.into(),
            scope: scope.map(Into::into),
        };
        self.inner.announce(&ident, stream, message);
    }

    /// The shared engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// Compiled-code cache counters.
    pub fn stats(&self) -> CacheStats {
        let i = &self.inner;
        CacheStats {
            memory_hits: i.memory_hits.load(Ordering::Relaxed),
            disk_hits: i.disk_hits.load(Ordering::Relaxed),
            compiles: i.compiles.load(Ordering::Relaxed),
            disk_rejected: i.disk_rejected.load(Ordering::Relaxed),
            files_unchanged: i.files_unchanged.load(Ordering::Relaxed),
        }
    }

    /// Load the plugin in the file at `path` (see [`WasmRuntime::load_bytes`]): its compiled
    /// code as [`WasmRuntime::compile_file`] finds it, then [`WasmRuntime::load_code`]. A
    /// file with a `sha256` pin is read and checked before anything is compiled.
    pub fn load_file(
        &self,
        registry: &Arc<Registry>,
        spec: &PluginSpec,
        path: &Path,
    ) -> Result<LoadedPlugin, WasmError> {
        if spec.sha256.is_some() {
            // A pinned file is hashed before anything is compiled from it.
            let bytes = self.read(&spec.name, path)?;
            return self.load_bytes(registry, spec, &bytes);
        }
        let code = self.compile_file(&spec.name, path)?;
        self.load_code(registry, spec, &code)
    }

    /// Load a plugin into `spec.scope` (`None` = global): check its `sha256` pin, compile
    /// (or reuse) the component, instantiate it, and run `init(spec.config)` with its
    /// declarations going to a fiber owned by `spec.name`. The returned handle owns that
    /// fiber.
    ///
    /// This hashes `wasm` to find its compiled code; to load the same plugin again (a new
    /// agent scope), keep the [`PluginCode`] of [`WasmRuntime::compile`] and use
    /// [`WasmRuntime::load_code`], which only instantiates.
    pub fn load_bytes(
        &self,
        registry: &Arc<Registry>,
        spec: &PluginSpec,
        wasm: &[u8],
    ) -> Result<LoadedPlugin, WasmError> {
        let sha = cache::sha256(wasm);
        if let Some(expected) = &spec.sha256 {
            let actual = cache::hex(&sha);
            if !actual.eq_ignore_ascii_case(expected.trim()) {
                return Err(WasmError::PinMismatch {
                    plugin: spec.name.clone(),
                    expected: expected.clone(),
                    actual,
                });
            }
        }
        let code = PluginCode {
            compiled: self.prepare_hashed(&spec.name, wasm, sha)?,
        };
        self.load_code(registry, spec, &code)
    }

    /// The compiled code of `wasm` (from memory, the disk cache, or compiled now), ready to
    /// be instantiated any number of times by [`WasmRuntime::load_code`]. `name` is used in
    /// errors.
    pub fn compile(&self, name: &str, wasm: &[u8]) -> Result<PluginCode, WasmError> {
        Ok(PluginCode {
            compiled: self.prepare(name, wasm)?,
        })
    }

    /// The compiled code of the component file at `path` (see [`WasmRuntime::compile`]).
    ///
    /// With a disk cache, a file whose identity (device, inode, size, modification and
    /// status-change times) is the one recorded when it was last hashed is not read at all:
    /// its recorded sha256 finds the code in memory or in the cache. Any other file is read,
    /// hashed, and its identity recorded for the next start.
    pub fn compile_file(&self, name: &str, path: &Path) -> Result<PluginCode, WasmError> {
        if let Some(compiled) = self.compiled_unchanged(name, path)? {
            return Ok(PluginCode { compiled });
        }
        let (bytes, identity) = self.read_with_identity(name, path)?;
        let sha = cache::sha256(&bytes);
        let compiled = self.prepare_hashed(name, &bytes, sha)?;
        if let (Some(disk), Some(identity)) = (&self.inner.disk, identity) {
            disk.remember_source(path, identity, &sha);
        }
        Ok(PluginCode { compiled })
    }

    /// The compiled code of `path` when the file is unchanged since it was last hashed and
    /// its code is in memory or in the disk cache; `None` when it has to be read.
    fn compiled_unchanged(
        &self,
        name: &str,
        path: &Path,
    ) -> Result<Option<Arc<Compiled>>, WasmError> {
        let Some(disk) = &self.inner.disk else {
            return Ok(None);
        };
        // `metadata` does not open the file, so a FIFO is not waited on; anything that is
        // not a regular file within the size limit takes the reading path and its errors.
        let Ok(metadata) = std::fs::metadata(path) else {
            return Ok(None);
        };
        if !metadata.is_file() || metadata.len() > self.inner.max_wasm_bytes {
            return Ok(None);
        }
        let Some(sha) = disk.known_source(path, &metadata) else {
            return Ok(None);
        };
        let compiled = self.prepare_known(name, sha)?;
        if compiled.is_some() {
            self.inner.files_unchanged.fetch_add(1, Ordering::Relaxed);
        }
        Ok(compiled)
    }

    /// Read a component file as [`WasmRuntime::read`] does, with the identity it had while
    /// it was read (`None` when it changed meanwhile, or the platform has none).
    fn read_with_identity(
        &self,
        name: &str,
        path: &Path,
    ) -> Result<(Vec<u8>, Option<cache::FileIdentity>), WasmError> {
        let before = std::fs::metadata(path)
            .ok()
            .and_then(|m| cache::FileIdentity::of(&m));
        let bytes = self.read(name, path)?;
        let after = std::fs::metadata(path)
            .ok()
            .and_then(|m| cache::FileIdentity::of(&m));
        Ok((bytes, before.filter(|b| Some(*b) == after)))
    }

    /// Load a plugin from its compiled code: instantiate it from the shared `InstancePre` and
    /// run `init(spec.config)`, as [`WasmRuntime::load_bytes`] does, without reading, hashing
    /// or compiling anything. A `spec.sha256` pin is checked against the code's hash.
    pub fn load_code(
        &self,
        registry: &Arc<Registry>,
        spec: &PluginSpec,
        code: &PluginCode,
    ) -> Result<LoadedPlugin, WasmError> {
        if let Some(expected) = &spec.sha256 {
            let actual = &code.compiled.sha256;
            if !actual.eq_ignore_ascii_case(expected.trim()) {
                return Err(WasmError::PinMismatch {
                    plugin: spec.name.clone(),
                    expected: expected.clone(),
                    actual: actual.clone(),
                });
            }
        }
        LoadedPlugin::load(
            self.inner.clone(),
            code.compiled.clone(),
            registry,
            &spec.name,
            spec.scope.as_deref(),
            // `to_string` (not `Display`): the direct writer is about twice as fast, and this
            // runs on every scope spin-up.
            serde_json::to_string(&spec.config).map_err(|e| engine_err(&spec.name, e))?,
            spec.options.clone(),
        )
    }

    /// Read a component file: a regular file of at most `max_wasm_bytes` (a FIFO, a device
    /// or an endless file is refused without being read).
    pub fn read(&self, plugin: &str, path: &Path) -> Result<Vec<u8>, WasmError> {
        crate::fsutil::read_regular(path, self.inner.max_wasm_bytes).map_err(|source| {
            WasmError::Read {
                plugin: plugin.to_string(),
                source,
            }
        })
    }

    pub(crate) fn inner(&self) -> &Arc<RuntimeInner> {
        &self.inner
    }

    /// The compiled form of `wasm`: from memory, else from the disk cache, else compiled
    /// (and written to the disk cache). Concurrent requests for the same wasm compile once.
    pub(crate) fn prepare(&self, name: &str, wasm: &[u8]) -> Result<Arc<Compiled>, WasmError> {
        self.prepare_hashed(name, wasm, cache::sha256(wasm))
    }

    /// [`WasmRuntime::prepare`] with the sha256 of `wasm` already computed.
    fn prepare_hashed(
        &self,
        name: &str,
        wasm: &[u8],
        sha: [u8; 32],
    ) -> Result<Arc<Compiled>, WasmError> {
        validate::header(name, wasm)?;
        let slot = self.slot(name, sha)?;
        let mut slot = slot
            .lock()
            .map_err(|_| engine_err(name, "compiled-code slot lock poisoned"))?;
        if let Some(compiled) = slot.as_ref() {
            self.inner.memory_hits.fetch_add(1, Ordering::Relaxed);
            log::debug!(
                "plugin \"{name}\": compiled code reused from memory ({})",
                &compiled.sha256[..12]
            );
            return Ok(compiled.clone());
        }
        let component = self.component(name, wasm, &sha)?;
        let compiled = Arc::new(self.pre(name, &component, &sha)?);
        *slot = Some(compiled.clone());
        Ok(compiled)
    }

    /// The compiled code of the wasm with digest `sha`, from memory or the disk cache only
    /// (`None` when it would have to be compiled, which needs the wasm itself).
    fn prepare_known(&self, name: &str, sha: [u8; 32]) -> Result<Option<Arc<Compiled>>, WasmError> {
        let slot = self.slot(name, sha)?;
        let mut slot = slot
            .lock()
            .map_err(|_| engine_err(name, "compiled-code slot lock poisoned"))?;
        if let Some(compiled) = slot.as_ref() {
            self.inner.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(compiled.clone()));
        }
        let Some(component) = self.cached_component(name, &sha) else {
            return Ok(None);
        };
        let compiled = Arc::new(self.pre(name, &component, &sha)?);
        *slot = Some(compiled.clone());
        Ok(Some(compiled))
    }

    /// The slot of the compiled code for the wasm with digest `sha` (created empty): whoever
    /// holds its lock compiles or fetches that code, so concurrent requests do it once.
    fn slot(&self, name: &str, sha: [u8; 32]) -> Result<Slot, WasmError> {
        let mut map = self
            .inner
            .compiled
            .lock()
            .map_err(|_| engine_err(name, "compiled-code map lock poisoned"))?;
        Ok(map.entry(sha).or_default().clone())
    }

    /// The component for `sha` from the disk cache, if it holds a usable one.
    fn cached_component(&self, name: &str, sha: &[u8; 32]) -> Option<Component> {
        let inner = &self.inner;
        let artifact = inner.disk.as_ref()?.load(sha)?;
        let started = Instant::now();
        // SAFETY: `artifact` passed `DiskCache::load`'s check: this host wrote it (HMAC under
        // the cache directory's key, or the identity of the file it verified before) for this
        // exact wasm and engine fingerprint, so it is output of `Component::serialize` on a
        // compatible engine.
        match unsafe { Component::deserialize(&inner.engine, artifact.code()) } {
            Ok(c) => {
                inner.disk_hits.fetch_add(1, Ordering::Relaxed);
                log::info!(
                    "plugin \"{name}\": compiled code loaded from disk cache in {:?}",
                    started.elapsed()
                );
                Some(c)
            }
            Err(e) => {
                inner.disk_rejected.fetch_add(1, Ordering::Relaxed);
                log::warn!("plugin \"{name}\": disk cache entry unusable ({e}); recompiling");
                None
            }
        }
    }

    fn component(&self, name: &str, wasm: &[u8], sha: &[u8; 32]) -> Result<Component, WasmError> {
        let inner = &self.inner;
        if let Some(component) = self.cached_component(name, sha) {
            return Ok(component);
        }
        let started = Instant::now();
        let component = Component::new(&inner.engine, wasm)
            .map_err(|e| validate::compile_error(name, wasm, &e))?;
        inner.compiles.fetch_add(1, Ordering::Relaxed);
        log::info!(
            "plugin \"{name}\": compiled {} bytes in {:?}",
            wasm.len(),
            started.elapsed()
        );
        if let Some(disk) = &inner.disk {
            match component.serialize() {
                Ok(bytes) => {
                    if let Err(e) = disk.store(sha, &bytes) {
                        log::warn!("plugin \"{name}\": cannot write the compiled-code cache: {e}");
                    }
                }
                Err(e) => log::warn!("plugin \"{name}\": cannot serialize compiled code: {e}"),
            }
        }
        Ok(component)
    }

    fn pre(
        &self,
        name: &str,
        component: &Component,
        sha: &[u8; 32],
    ) -> Result<Compiled, WasmError> {
        let (world, version) = validate::world(name, &self.inner.engine, component)?;
        let instance_pre = self
            .inner
            .linker
            .instantiate_pre(component)
            .map_err(|e| validate::link_error(name, &e))?;
        let link = |e: wasmtime::Error| validate::link_error(name, &e);
        let pre = match (world, version) {
            (World::Plugin, WitVersion::V0_1_0) => {
                Pre::Plugin(PluginPre::new(instance_pre).map_err(link)?)
            }
            (World::InstructionProvider, WitVersion::V0_1_0) => {
                Pre::Instructions(InstructionProviderPre::new(instance_pre).map_err(link)?)
            }
            (World::Plugin, WitVersion::V0_2_0) => Pre::PluginV2(
                super::bindings::plugin_v2::PluginPre::new(instance_pre).map_err(link)?,
            ),
            (World::InstructionProvider, WitVersion::V0_2_0) => Pre::InstructionsV2(
                super::bindings::instruction_provider_v2::InstructionProviderPre::new(instance_pre)
                    .map_err(link)?,
            ),
        };
        Ok(Compiled {
            world,
            version,
            pre,
            sha256: cache::hex(sha),
        })
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
        .map_err(|e| engine_err("(runtime)", format!("cannot start the epoch ticker: {e}")))
}
