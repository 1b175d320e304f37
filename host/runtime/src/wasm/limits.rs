//! Per-plugin sandbox limits and the failure policy, plus the `ResourceLimiter` that enforces
//! the memory and table caps and remembers that a cap was hit (so a failed call is reported
//! as a `Limit` error rather than the trap the guest's allocator turns it into).

use std::time::Duration;

use serde::Deserialize;

/// Resource limits of one plugin instance. Every field has a default (SECURITY.md lists
/// them); host.toml overrides them per plugin in a `limits` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Maximum linear memory per memory, in bytes.
    pub memory_bytes: usize,
    /// Maximum elements per table.
    pub table_elements: usize,
    /// Maximum core instances a component may create.
    pub instances: usize,
    /// Maximum tables.
    pub tables: usize,
    /// Maximum linear memories.
    pub memories: usize,
    /// Maximum declarations (sections, contexts, variables, tool providers, …) per `init`
    /// or `publish`.
    pub max_declarations: usize,
    /// Maximum live host resource handles (WASI streams, pollables, …) per instance.
    pub resource_handles: usize,
    /// Wall-clock deadline of one provider or listener call, in milliseconds.
    pub call_timeout_ms: u64,
    /// Wall-clock deadline of `init` and `publish`, in milliseconds.
    pub init_timeout_ms: u64,
    /// Fuel per call; only used when the runtime was built with fuel metering on.
    pub fuel: Option<u64>,
    /// Bytes one call may hand to the host: its result plus everything passed through host
    /// imports during the call (declarations, assembly edits).
    pub max_output_bytes: usize,
    /// Bytes of stdout/stderr/log output kept per instance; the rest is dropped and counted.
    pub max_log_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 << 20,
            table_elements: 10_000,
            instances: 32,
            tables: 32,
            memories: 4,
            max_declarations: 1_000,
            resource_handles: 10_000,
            call_timeout_ms: 50,
            init_timeout_ms: 1_000,
            fuel: None,
            max_output_bytes: 1 << 20,
            max_log_bytes: 64 << 10,
        }
    }
}

impl Limits {
    /// Refuse limits that cannot work: every limit but `max_log_bytes` and
    /// `max_declarations` (where 0 means "none allowed") must be at least 1. The error is
    /// the key and what is expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let at_least_one = [
            ("memory_bytes", self.memory_bytes as u64),
            ("table_elements", self.table_elements as u64),
            ("instances", self.instances as u64),
            ("tables", self.tables as u64),
            ("memories", self.memories as u64),
            ("resource_handles", self.resource_handles as u64),
            ("call_timeout_ms", self.call_timeout_ms),
            ("init_timeout_ms", self.init_timeout_ms),
            ("max_output_bytes", self.max_output_bytes as u64),
            ("fuel", self.fuel.unwrap_or(1)),
        ];
        match at_least_one.iter().find(|(_, value)| *value == 0) {
            Some((key, _)) => Err((key, "must be at least 1 (0 would fail every call)".into())),
            None => Ok(()),
        }
    }

    /// The deadline of one provider or listener call.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }

    /// The deadline of `init` / `publish`.
    pub fn init_timeout(&self) -> Duration {
        Duration::from_millis(self.init_timeout_ms)
    }
}

/// What a failing plugin does to an assembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Fail the assembly with an error naming plugin, export and scope, as a failing provider
    /// does in the TypeScript DeepSeek Harness.
    #[default]
    Fail,
    /// Drop this plugin's contribution for that assembly; quarantine it after
    /// `quarantine_after` consecutive failures.
    Skip,
}

/// How a plugin is loaded: its limits and failure policy.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PluginOptions {
    /// Sandbox limits.
    pub limits: Limits,
    /// Failure policy.
    pub on_error: OnError,
    /// Consecutive failures after which a `skip` plugin is no longer called.
    pub quarantine_after: u32,
    /// Capabilities granted (none by default), already resolved (see `Grants::resolve`).
    pub grants: super::grants::Grants,
}

impl Default for PluginOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            on_error: OnError::Fail,
            quarantine_after: 3,
            grants: super::grants::Grants::default(),
        }
    }
}

/// Enforces the memory/table/instance caps of one store and records the first cap hit.
#[derive(Debug)]
pub(crate) struct Limiter {
    memory_bytes: usize,
    table_elements: usize,
    instances: usize,
    tables: usize,
    memories: usize,
    /// Set when a growth was refused; cleared at the start of every call.
    pub(crate) hit: Option<String>,
}

impl Limiter {
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            memory_bytes: limits.memory_bytes,
            table_elements: limits.table_elements,
            instances: limits.instances,
            tables: limits.tables,
            memories: limits.memories,
            hit: None,
        }
    }
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            // Refuse (memory.grow returns -1) rather than trap here: the guest may cope; if
            // it does not, the resulting trap is reported as this limit.
            self.hit = Some(format!(
                "memory limit of {} bytes exceeded (growing from {current} to {desired} bytes)",
                self.memory_bytes
            ));
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements {
            self.hit = Some(format!(
                "table limit of {} elements exceeded (growing from {current} to {desired})",
                self.table_elements
            ));
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn tables(&self) -> usize {
        self.tables
    }

    fn memories(&self) -> usize {
        self.memories
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_deserialize_with_defaults() {
        let opts: PluginOptions =
            toml::from_str("on_error = \"skip\"\n[limits]\nmemory_bytes = 1024\n").unwrap();
        assert_eq!(opts.on_error, OnError::Skip);
        assert_eq!(opts.limits.memory_bytes, 1024);
        assert_eq!(opts.limits.call_timeout_ms, 50);
        assert_eq!(opts.quarantine_after, 3);
        assert!(toml::from_str::<Limits>("bogus = 1").is_err());
    }

    #[test]
    fn limiter_refuses_and_records() {
        use wasmtime::ResourceLimiter;
        let mut l = Limiter::new(&Limits {
            memory_bytes: 100,
            ..Limits::default()
        });
        assert!(l.memory_growing(0, 50, None).unwrap());
        assert!(l.hit.is_none());
        assert!(!l.memory_growing(50, 150, None).unwrap());
        assert!(l.hit.as_deref().unwrap().contains("memory limit"));
    }
}
