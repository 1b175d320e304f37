//! Policy: what an operator decides about a plugin — its sandbox limits, what a failure does,
//! what it is granted, and how it is loaded (name, scope, config, pin). Plain data, read from
//! host.toml or built in code; the Wasm runtime enforces it.

mod grants;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use grants::{DirGrant, Grants, OriginGrant};

/// A policy value that cannot work: the key (as host.toml spells it, e.g. `call_timeout_ms`
/// or `dirs[0].host`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
#[non_exhaustive]
pub struct PolicyError {
    /// The key.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl PolicyError {
    /// An error about `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// Resource limits of one plugin instance. Every field has a default (docs/host-toml.md lists
/// them); host.toml overrides them per plugin in a `limits` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
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
    #[serde(skip_serializing_if = "Option::is_none")]
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
    /// `max_declarations` (where 0 means "none allowed") must be at least 1. The error names
    /// the key and what is expected.
    pub fn validate(&self) -> Result<(), PolicyError> {
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
            Some((key, _)) => Err(PolicyError::new(
                *key,
                "must be at least 1 (0 would fail every call)",
            )),
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[non_exhaustive]
pub struct PluginOptions {
    /// Sandbox limits.
    pub limits: Limits,
    /// Failure policy.
    pub on_error: OnError,
    /// Consecutive failures after which a `skip` plugin is no longer called.
    pub quarantine_after: u32,
    /// Capabilities granted (none by default), already resolved (see `Grants::resolve`).
    pub grants: Grants,
}

impl Default for PluginOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            on_error: OnError::Fail,
            quarantine_after: 3,
            grants: Grants::default(),
        }
    }
}

/// What to load: a plugin's name, scope, config, limits and optional pin (one `[[plugin]]`
/// entry of host.toml, minus the path).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

impl Limits {
    /// Sets [`Limits::memory_bytes`].
    pub fn memory_bytes(mut self, value: usize) -> Self {
        self.memory_bytes = value;
        self
    }

    /// Sets [`Limits::table_elements`].
    pub fn table_elements(mut self, value: usize) -> Self {
        self.table_elements = value;
        self
    }

    /// Sets [`Limits::instances`].
    pub fn instances(mut self, value: usize) -> Self {
        self.instances = value;
        self
    }

    /// Sets [`Limits::tables`].
    pub fn tables(mut self, value: usize) -> Self {
        self.tables = value;
        self
    }

    /// Sets [`Limits::memories`].
    pub fn memories(mut self, value: usize) -> Self {
        self.memories = value;
        self
    }

    /// Sets [`Limits::max_declarations`].
    pub fn max_declarations(mut self, value: usize) -> Self {
        self.max_declarations = value;
        self
    }

    /// Sets [`Limits::resource_handles`].
    pub fn resource_handles(mut self, value: usize) -> Self {
        self.resource_handles = value;
        self
    }

    /// Sets [`Limits::call_timeout_ms`].
    pub fn call_timeout_ms(mut self, value: u64) -> Self {
        self.call_timeout_ms = value;
        self
    }

    /// Sets [`Limits::init_timeout_ms`].
    pub fn init_timeout_ms(mut self, value: u64) -> Self {
        self.init_timeout_ms = value;
        self
    }

    /// Sets [`Limits::fuel`].
    pub fn fuel(mut self, value: u64) -> Self {
        self.fuel = Some(value);
        self
    }

    /// Sets [`Limits::max_output_bytes`].
    pub fn max_output_bytes(mut self, value: usize) -> Self {
        self.max_output_bytes = value;
        self
    }

    /// Sets [`Limits::max_log_bytes`].
    pub fn max_log_bytes(mut self, value: usize) -> Self {
        self.max_log_bytes = value;
        self
    }
}

impl PluginOptions {
    /// Sets [`PluginOptions::limits`].
    pub fn limits(mut self, value: Limits) -> Self {
        self.limits = value;
        self
    }

    /// Sets [`PluginOptions::on_error`].
    pub fn on_error(mut self, value: OnError) -> Self {
        self.on_error = value;
        self
    }

    /// Sets [`PluginOptions::quarantine_after`].
    pub fn quarantine_after(mut self, value: u32) -> Self {
        self.quarantine_after = value;
        self
    }

    /// Sets [`PluginOptions::grants`].
    pub fn grants(mut self, value: Grants) -> Self {
        self.grants = value;
        self
    }
}

impl PluginSpec {
    /// Sets [`PluginSpec::sha256`].
    pub fn sha256(mut self, value: impl Into<String>) -> Self {
        self.sha256 = Some(value.into());
        self
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
}
