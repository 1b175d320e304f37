//! The code cache of one runtime: compiled components by the sha256 of their bytes, in memory
//! for this process and on disk across processes (`cache.rs`), each with its
//! pre-instantiation. Concurrent requests for the same component compile it once.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wasmtime::component::Component;

use super::cache::{self, DiskCache, Placement};
use super::contract::{Pre, WitVersion, World};
use super::digest;
use super::engine::EngineCtx;
use super::error::WasmError;
use super::settings::RuntimeConfig;
use super::validate;

/// Where a plugin's code came from (`memory`, `disk` or `compiled`), on the current
/// `prompt_host.compile` span (nothing without a subscriber).
fn record_cache(outcome: &'static str) {
    tracing::Span::current().record("prompt_host.compile_cache", outcome);
}

/// Compiled-code cache counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Loads served by this process's memory map.
    pub memory_hits: u64,
    /// Loads served by deserializing a verified file from the disk cache.
    pub disk_hits: u64,
    /// Of those, the ones whose code runs from the cache file's own pages (on Linux, where
    /// the file can be mapped executable); the others run a copy.
    pub disk_in_place: u64,
    /// Components compiled with Cranelift.
    pub compiles: u64,
    /// Disk-cache files refused or unusable (then recompiled).
    pub disk_rejected: u64,
    /// Component files known unchanged by their identity, so neither read nor hashed.
    pub files_unchanged: u64,
}

/// A plugin's compiled code and its pre-instantiation, from
/// [`WasmRuntime::compile`](super::WasmRuntime::compile): load it into any number of scopes
/// with [`WasmRuntime::load`](super::WasmRuntime::load). Cheap to clone.
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

/// See the module docs.
pub(crate) struct CodeCache {
    disk: Option<DiskCache>,
    /// Where a slow compile is announced, and after how long.
    progress: Option<super::ProgressSink>,
    progress_after: std::time::Duration,
    compiled: Mutex<HashMap<[u8; 32], Slot>>,
    max_wasm_bytes: u64,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    disk_in_place: AtomicU64,
    compiles: AtomicU64,
    disk_rejected: AtomicU64,
    files_unchanged: AtomicU64,
}

fn lock_error(name: &str, what: &str) -> WasmError {
    WasmError::Engine {
        plugin: name.to_string(),
        scope: None,
        message: format!("{what} lock poisoned"),
    }
}

impl CodeCache {
    /// The cache of `config` for code compiled by `engine`. A cache directory that cannot
    /// be used (read-only, another user's, a foreign key) costs speed, not correctness: a
    /// warning, and code is compiled in memory.
    pub(crate) fn new(config: &RuntimeConfig, engine: &wasmtime::Engine) -> Self {
        let disk = config
            .cache_dir
            .as_ref()
            .and_then(|dir| match DiskCache::open(dir, engine) {
                Ok(cache) => Some(cache),
                Err(e) => {
                    log::warn!("{e}; running without a compiled-code cache");
                    None
                }
            });
        Self {
            disk,
            progress: config.progress.clone(),
            progress_after: config.progress_after,
            compiled: Mutex::new(HashMap::new()),
            max_wasm_bytes: config.max_wasm_bytes,
            memory_hits: AtomicU64::new(0),
            disk_hits: AtomicU64::new(0),
            disk_in_place: AtomicU64::new(0),
            compiles: AtomicU64::new(0),
            disk_rejected: AtomicU64::new(0),
            files_unchanged: AtomicU64::new(0),
        }
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            disk_in_place: self.disk_in_place.load(Ordering::Relaxed),
            compiles: self.compiles.load(Ordering::Relaxed),
            disk_rejected: self.disk_rejected.load(Ordering::Relaxed),
            files_unchanged: self.files_unchanged.load(Ordering::Relaxed),
        }
    }

    /// The compiled code of `wasm` (from memory, the disk cache, or compiled now), ready to
    /// be instantiated any number of times by [`WasmRuntime::load`](super::WasmRuntime::load). `name` is used in
    /// errors.
    pub(crate) fn compile(
        &self,
        engine: &EngineCtx,
        name: &str,
        wasm: &[u8],
        pin: Option<&str>,
    ) -> Result<PluginCode, WasmError> {
        let sha = digest::sha256(wasm);
        // A pinned component is refused before anything is compiled from it.
        digest::check_pin(name, pin, &digest::hex(&sha))?;
        Ok(PluginCode {
            compiled: self.prepare_hashed(engine, name, wasm, sha)?,
        })
    }

    /// The compiled code of the component file at `path` (see [`WasmRuntime::compile`]).
    ///
    /// With a disk cache, a file whose identity (device, inode, size, modification and
    /// status-change times) is the one recorded when it was last hashed is not read at all:
    /// its recorded sha256 finds the code in memory or in the cache. Any other file is read,
    /// hashed, and its identity recorded for the next start.
    pub(crate) fn compile_file(
        &self,
        engine: &EngineCtx,
        name: &str,
        path: &Path,
        pin: Option<&str>,
    ) -> Result<PluginCode, WasmError> {
        // A pinned file is always read and hashed: its identity record is not trusted with
        // the decision.
        if pin.is_none() {
            if let Some(compiled) = self.compiled_unchanged(engine, name, path)? {
                return Ok(PluginCode { compiled });
            }
        }
        let (bytes, identity) = self.read_with_identity(name, path)?;
        let sha = digest::sha256(&bytes);
        digest::check_pin(name, pin, &digest::hex(&sha))?;
        let compiled = self.prepare_hashed(engine, name, &bytes, sha)?;
        if let (Some(disk), Some(identity)) = (&self.disk, identity) {
            disk.remember_source(path, identity, &sha);
        }
        Ok(PluginCode { compiled })
    }

    /// The compiled code of `path` when the file is unchanged since it was last hashed and
    /// its code is in memory or in the disk cache; `None` when it has to be read.
    fn compiled_unchanged(
        &self,
        engine: &EngineCtx,
        name: &str,
        path: &Path,
    ) -> Result<Option<Arc<Compiled>>, WasmError> {
        let Some(disk) = &self.disk else {
            return Ok(None);
        };
        // `metadata` does not open the file, so a FIFO is not waited on; anything that is
        // not a regular file within the size limit takes the reading path and its errors.
        let Ok(metadata) = std::fs::metadata(path) else {
            return Ok(None);
        };
        if !metadata.is_file() || metadata.len() > self.max_wasm_bytes {
            return Ok(None);
        }
        let Some(sha) = disk.known_source(path, &metadata) else {
            return Ok(None);
        };
        let compiled = self.prepare_known(engine, name, sha)?;
        if compiled.is_some() {
            self.files_unchanged.fetch_add(1, Ordering::Relaxed);
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

    /// Read a component file: a regular file of at most `max_wasm_bytes` (a FIFO, a device
    /// or an endless file is refused without being read).
    pub(crate) fn read(&self, plugin: &str, path: &Path) -> Result<Vec<u8>, WasmError> {
        crate::fsutil::read_regular(path, self.max_wasm_bytes).map_err(|error| WasmError::Read {
            plugin: plugin.to_string(),
            error,
        })
    }

    /// The compiled form of `wasm` (of digest `sha`): from memory, else from the disk cache,
    /// else compiled (and written to the disk cache).
    fn prepare_hashed(
        &self,
        engine: &EngineCtx,
        name: &str,
        wasm: &[u8],
        sha: [u8; 32],
    ) -> Result<Arc<Compiled>, WasmError> {
        validate::header(name, wasm)?;
        let slot = self.slot(name, sha)?;
        let mut slot = slot
            .lock()
            .map_err(|_| lock_error(name, "compiled-code slot"))?;
        if let Some(compiled) = slot.as_ref() {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            record_cache("memory");
            log::debug!(
                "plugin \"{name}\": compiled code reused from memory ({})",
                &compiled.sha256[..12]
            );
            return Ok(compiled.clone());
        }
        let component = self.component(engine, name, wasm, &sha)?;
        let compiled = Arc::new(self.pre(engine, name, &component, &sha)?);
        *slot = Some(compiled.clone());
        Ok(compiled)
    }

    /// The compiled code of the wasm with digest `sha`, from memory or the disk cache only
    /// (`None` when it would have to be compiled, which needs the wasm itself).
    fn prepare_known(
        &self,
        engine: &EngineCtx,
        name: &str,
        sha: [u8; 32],
    ) -> Result<Option<Arc<Compiled>>, WasmError> {
        let slot = self.slot(name, sha)?;
        let mut slot = slot
            .lock()
            .map_err(|_| lock_error(name, "compiled-code slot"))?;
        if let Some(compiled) = slot.as_ref() {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            record_cache("memory");
            return Ok(Some(compiled.clone()));
        }
        let Some(component) = self.cached_component(engine, name, &sha) else {
            return Ok(None);
        };
        let compiled = Arc::new(self.pre(engine, name, &component, &sha)?);
        *slot = Some(compiled.clone());
        Ok(Some(compiled))
    }

    /// The slot of the compiled code for the wasm with digest `sha` (created empty): whoever
    /// holds its lock compiles or fetches that code, so concurrent requests do it once.
    fn slot(&self, name: &str, sha: [u8; 32]) -> Result<Slot, WasmError> {
        let mut map = self
            .compiled
            .lock()
            .map_err(|_| lock_error(name, "compiled-code map"))?;
        Ok(map.entry(sha).or_default().clone())
    }

    /// The component for `sha` from the disk cache, if it holds a usable one.
    fn cached_component(
        &self,
        engine: &EngineCtx,
        name: &str,
        sha: &[u8; 32],
    ) -> Option<Component> {
        let artifact = self.disk.as_ref()?.load(sha)?;
        let started = Instant::now();
        // SAFETY: `artifact` passed `DiskCache::load`'s check: this host wrote it (HMAC under
        // the cache directory's key, or the identity of the file it verified before) for this
        // exact wasm and engine fingerprint, so it is output of `Component::serialize` on a
        // compatible engine.
        match unsafe { artifact.component(&engine.engine) } {
            Ok((c, placement)) => {
                self.disk_hits.fetch_add(1, Ordering::Relaxed);
                if placement == Placement::InPlace {
                    self.disk_in_place.fetch_add(1, Ordering::Relaxed);
                }
                record_cache("disk");
                log::info!(
                    "plugin \"{name}\": compiled code loaded from disk cache in {:?} ({})",
                    started.elapsed(),
                    match placement {
                        Placement::InPlace => "run from the file",
                        Placement::Copied => "copied",
                    }
                );
                Some(c)
            }
            Err(e) => {
                self.disk_rejected.fetch_add(1, Ordering::Relaxed);
                log::warn!("plugin \"{name}\": disk cache entry unusable ({e}); recompiling");
                None
            }
        }
    }

    fn component(
        &self,
        engine: &EngineCtx,
        name: &str,
        wasm: &[u8],
        sha: &[u8; 32],
    ) -> Result<Component, WasmError> {
        if let Some(component) = self.cached_component(engine, name, sha) {
            return Ok(component);
        }
        let started = Instant::now();
        let component = super::progress::announced(
            self.progress.as_ref(),
            self.progress_after,
            name,
            wasm.len(),
            || Component::new(&engine.engine, wasm),
        )
        .map_err(|e| validate::compile_error(name, wasm, &e))?;
        self.compiles.fetch_add(1, Ordering::Relaxed);
        record_cache("compiled");
        log::info!(
            "plugin \"{name}\": compiled {} bytes in {:?}",
            wasm.len(),
            started.elapsed()
        );
        if let Some(disk) = &self.disk {
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
        engine: &EngineCtx,
        name: &str,
        component: &Component,
        sha: &[u8; 32],
    ) -> Result<Compiled, WasmError> {
        let (world, version) = super::contract::detect(name, &engine.engine, component)?;
        let instance_pre = engine
            .linker()?
            .instantiate_pre(component)
            .map_err(|e| validate::link_error(name, &e))?;
        let pre =
            Pre::new(world, version, instance_pre).map_err(|e| validate::link_error(name, &e))?;
        Ok(Compiled {
            world,
            version,
            pre,
            sha256: digest::hex(sha),
        })
    }
}
