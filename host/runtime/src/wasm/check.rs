//! `check`: validate a component and report what it declares, without touching any registry.

use serde::Serialize;

use super::contract::{WitVersion, World};
use super::declare::Declaration;
use super::error::WasmError;
use super::plugin::LoadedPlugin;
use super::runtime::{PluginSource, WasmRuntime};
use crate::policy::PluginOptions;

/// What `check` found: the world and contract version, the digest and size, and what
/// `init` declared (or why it failed).
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct PluginReport {
    /// The world implemented.
    pub world: World,
    /// The contract version it was built against.
    pub version: WitVersion,
    /// Lower-case hex sha256 of the component.
    pub sha256: String,
    /// Its size in bytes (0 when checked from compiled code).
    pub wasm_bytes: usize,
    /// What `init` declared (empty when it failed).
    pub declarations: Vec<Declaration>,
    /// Why `init` failed, naming the plugin and the export, if it did.
    pub init_error: Option<String>,
}

impl PluginReport {
    /// The names of the declared sections, in declaration order.
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

/// How to check a plugin: the name used in messages, the config handed to `init`, and the
/// options (limits, grants) it runs under.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckOptions {
    /// The plugin's name in messages (default `check`).
    pub name: String,
    /// Handed to `init` (default `{}`).
    pub config: serde_json::Value,
    /// Limits and grants.
    pub options: PluginOptions,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            name: "check".into(),
            config: serde_json::json!({}),
            options: PluginOptions::default(),
        }
    }
}

impl CheckOptions {
    /// Name the plugin `name` in messages.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Hand `config` to `init`.
    pub fn config(mut self, config: serde_json::Value) -> Self {
        self.config = config;
        self
    }

    /// Run under `options`.
    pub fn options(mut self, options: PluginOptions) -> Self {
        self.options = options;
        self
    }
}

impl WasmRuntime {
    /// Compile the component (validating it) and run its `init` on its own, with
    /// declarations buffered: nothing reaches any registry. A failing `init` is reported in
    /// [`PluginReport::init_error`], not as an error.
    pub fn check<'a>(
        &self,
        source: impl Into<PluginSource<'a>>,
        check: &CheckOptions,
    ) -> Result<PluginReport, WasmError> {
        let source = source.into();
        let wasm_bytes = match source {
            PluginSource::Bytes(wasm) => wasm.len(),
            PluginSource::Path(path) => std::fs::metadata(path).map_or(0, |m| m.len() as usize),
            PluginSource::Code(_) => 0,
        };
        let code = self.compile(&check.name, source, None)?;
        let compiled = code.compiled().clone();
        let name = &check.name;
        let (declarations, init_error) = match LoadedPlugin::probe(
            self.engine_ctx().clone(),
            compiled,
            name,
            check.config.to_string(),
            check.options.clone(),
        ) {
            Ok(d) => (d, None),
            Err(f) => (
                Vec::new(),
                Some(format!("plugin \"{name}\" export \"init\": {}", f.message)),
            ),
        };
        Ok(PluginReport {
            world: code.world(),
            version: code.wit_version(),
            sha256: code.sha256().to_string(),
            wasm_bytes,
            declarations,
            init_error,
        })
    }
}
