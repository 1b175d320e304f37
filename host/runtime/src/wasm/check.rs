//! `check`: validate a component and report what it declares, without touching any registry.

use serde::Serialize;

use super::error::WasmError;
use super::limits::PluginOptions;
use super::plugin::PluginCell;
use super::registry_host::Declaration;
use super::runtime::{WasmRuntime, World};

/// What `check` found.
#[derive(Debug, Clone, Serialize)]
pub struct PluginReport {
    /// The world the component implements.
    pub world: World,
    /// The contract version it was built against.
    pub version: super::runtime::WitVersion,
    /// Lower-case hex sha256 of the file (the value for a `sha256` pin).
    pub sha256: String,
    /// Size of the file in bytes.
    pub wasm_bytes: usize,
    /// What `init` declared with the given config, in declaration order.
    pub declarations: Vec<Declaration>,
    /// Why `init` failed with the given config, if it did (the component itself is valid;
    /// many plugins need a config).
    pub init_error: Option<String>,
}

impl PluginReport {
    /// The declared section names.
    pub fn section_names(&self) -> Vec<&str> {
        self.declarations
            .iter()
            .filter_map(|d| match d {
                Declaration::Section { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl WasmRuntime {
    /// Validate `wasm` (a component of world `plugin` or `instruction-provider` at
    /// prompt-host:plugin@0.1.0) and run its `init` with `{}` in isolation to list what it
    /// declares.
    pub fn check(&self, wasm: &[u8]) -> Result<PluginReport, WasmError> {
        self.check_with_config(wasm, &serde_json::json!({}))
    }

    /// [`WasmRuntime::check`] with a given config.
    pub fn check_with_config(
        &self,
        wasm: &[u8],
        config: &serde_json::Value,
    ) -> Result<PluginReport, WasmError> {
        self.check_named("check", wasm, config)
    }

    /// [`WasmRuntime::check_with_config`] under plugin name `name` (used in every message).
    pub fn check_named(
        &self,
        name: &str,
        wasm: &[u8],
        config: &serde_json::Value,
    ) -> Result<PluginReport, WasmError> {
        self.check_with_options(name, wasm, config, PluginOptions::default())
    }

    /// [`WasmRuntime::check_named`] with options (limits, and grants `init` runs with).
    pub fn check_with_options(
        &self,
        name: &str,
        wasm: &[u8],
        config: &serde_json::Value,
        options: PluginOptions,
    ) -> Result<PluginReport, WasmError> {
        let compiled = self.prepare(name, wasm)?;
        let world = compiled.world;
        let version = compiled.version;
        let sha256 = compiled.sha256.clone();
        let (declarations, init_error) = match PluginCell::probe(
            name,
            self.inner().clone(),
            compiled,
            config.to_string(),
            options,
        ) {
            Ok(d) => (d, None),
            Err(f) => (
                Vec::new(),
                Some(format!("plugin \"{name}\" export \"init\": {}", f.message)),
            ),
        };
        Ok(PluginReport {
            world,
            version,
            sha256,
            wasm_bytes: wasm.len(),
            declarations,
            init_error,
        })
    }
}
