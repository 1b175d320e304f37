//! How a runtime is built: the compile cache, fuel, the deadline resolution, the stack, the
//! log sink, pooling, the largest component read.

use std::path::PathBuf;
use std::time::Duration;

use super::cache;
use super::ident::LogSink;

/// How the runtime is built.
#[derive(Clone)]
#[non_exhaustive]
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
    /// Told of a compile (a component not in the compile cache) still running after
    /// `progress_after`, and of its time when it ends; `None` = not told.
    pub progress: Option<super::ProgressSink>,
    /// How long a compile runs before it is announced to `progress`
    /// ([`super::DEFAULT_PROGRESS_AFTER`]; zero announces every compile).
    pub progress_after: Duration,
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
#[non_exhaustive]
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
    pub(crate) fn strategy(&self) -> wasmtime::InstanceAllocationStrategy {
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
            .field("progress", &self.progress.is_some())
            .field("progress_after", &self.progress_after)
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
            progress: None,
            progress_after: super::DEFAULT_PROGRESS_AFTER,
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

    /// The default config with no disk cache: every component is compiled in memory.
    pub fn without_cache() -> Self {
        Self {
            cache_dir: None,
            ..Self::default()
        }
    }

    /// Sets [`RuntimeConfig::cache_dir`].
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Sets [`RuntimeConfig::fuel`].
    pub fn fuel(mut self, on: bool) -> Self {
        self.fuel = on;
        self
    }

    /// Sets [`RuntimeConfig::epoch_tick`].
    pub fn epoch_tick(mut self, tick: Duration) -> Self {
        self.epoch_tick = tick;
        self
    }

    /// Sets [`RuntimeConfig::max_wasm_stack`].
    pub fn max_wasm_stack(mut self, bytes: usize) -> Self {
        self.max_wasm_stack = Some(bytes);
        self
    }

    /// Sets [`RuntimeConfig::log_sink`].
    pub fn log_sink(mut self, sink: LogSink) -> Self {
        self.log_sink = Some(sink);
        self
    }

    /// Sets [`RuntimeConfig::pooling`].
    pub fn pooling(mut self, pooling: Pooling) -> Self {
        self.pooling = Some(pooling);
        self
    }

    /// Sets [`RuntimeConfig::max_wasm_bytes`].
    pub fn max_wasm_bytes(mut self, bytes: u64) -> Self {
        self.max_wasm_bytes = bytes;
        self
    }
}

impl Pooling {
    /// Pooling for up to `max_instances` plugin instances, other settings at their defaults.
    pub fn new(max_instances: u32) -> Self {
        Self {
            max_instances,
            ..Self::default()
        }
    }

    /// Sets [`Pooling::max_memory_bytes`].
    pub fn max_memory_bytes(mut self, bytes: usize) -> Self {
        self.max_memory_bytes = bytes;
        self
    }

    /// Sets [`Pooling::keep_resident_bytes`].
    pub fn keep_resident_bytes(mut self, bytes: usize) -> Self {
        self.keep_resident_bytes = bytes;
        self
    }
}
