//! `host.toml`: the deployment a host runs (prompt settings, scopes, plugins, MCP servers).
//!
//! Everything is checked at load, before any plugin runs: unknown keys, wrong types, missing
//! wasm files, undeclared or cyclic scopes and sha256 mismatches are refused with a message
//! that names the file, the key and what was expected. Relative paths are relative to the
//! file; a plugin written as a name (`wasm = "persona"`) is found on the plugin search path
//! ([`crate::plugin_path`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

pub use crate::policy::OnError;
use crate::prompt::PromptConfig;

#[cfg(feature = "mcp")]
mod mcp_entry;
#[cfg(not(all(feature = "mcp", feature = "oci", feature = "tokens")))]
mod missing;
#[cfg(feature = "oci")]
mod oci_plugins;
mod parse_error;
mod sessions;

#[cfg(feature = "mcp")]
pub use mcp_entry::{McpConfig, McpLifecycleConfig, McpOAuthConfig};
#[cfg(not(feature = "tokens"))]
pub(crate) use missing::token_setting;
pub use sessions::SessionsConfig;

/// A parsed and validated host.toml.
#[derive(Debug, Clone, PartialEq)]
pub struct HostConfig {
    /// The file it was read from (`None` when built in memory).
    pub path: Option<PathBuf>,
    /// The `[prompt]` table.
    pub prompt: PromptConfig,
    /// The `[host]` table.
    pub host: HostSettings,
    /// Scopes in declaration order; parents are declared before use or later in the file.
    pub scopes: Vec<ScopeConfig>,
    /// Plugins in load order.
    pub plugins: Vec<PluginConfig>,
    /// MCP servers.
    #[cfg(feature = "mcp")]
    pub mcp: Vec<McpConfig>,
    /// The `[sessions]` table: the store a bare session name is an id in.
    pub sessions: SessionsConfig,
}

/// The `[host]` table: process-level settings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostSettings {
    /// Where compiled components are cached; default: the user cache directory.
    pub cache_dir: Option<PathBuf>,
    /// The instruction-provider plugin of every `[[mcp]]` entry without a `provider` of its
    /// own (e.g. the `mcp-instructions` example): a plugin name found on the search path
    /// ([`crate::plugin_path`]), or a path resolved against the file's directory.
    pub mcp_provider: Option<PathBuf>,
    /// The largest plugin component accepted, in bytes (default
    /// [`crate::wasm::DEFAULT_MAX_WASM_BYTES`], 128 MiB): a larger file is refused unread.
    pub max_wasm_bytes: Option<u64>,
    /// `[host.pooling]`: allocate plugin instances from a pool reserved at start-up (see
    /// [`crate::wasm::Pooling`]); an empty table takes the defaults. Worth it for a host
    /// that spins up agent scopes often: their plugins load about twice as fast.
    pub pooling: Option<PoolingSettings>,
    /// `[host.registry]`: how `oci://` plugins are fetched.
    pub registry: RegistryConfig,
}

/// The `[host.registry]` table: how the host talks to OCI registries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegistryConfig {
    /// Registries (`host:port`) spoken to over plain HTTP; only loopback ones are accepted.
    pub plain_http: Vec<String>,
    /// PEM root certificates trusted beside the platform's (relative to the file).
    pub ca_file: Option<PathBuf>,
    /// Connect timeout, and the longest wait for any one read, in milliseconds (default
    /// 30000).
    pub timeout_ms: Option<u64>,
    /// The longest one pull, tag resolution or push may take in all, in milliseconds
    /// (default 300000): a registry that trickles its answer is stopped by it.
    pub total_timeout_ms: Option<u64>,
}

/// The `[host.pooling]` table; every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PoolingSettings {
    /// Plugin instances alive at once (a hard cap).
    pub max_instances: Option<u32>,
    /// The largest linear memory of one instance, in bytes.
    pub max_memory_bytes: Option<usize>,
    /// Bytes of a freed slot kept resident for the next instance.
    pub keep_resident_bytes: Option<usize>,
}

impl PoolingSettings {
    /// The runtime setting: the defaults of [`crate::wasm::Pooling`] with this table's keys.
    pub fn pooling(&self) -> crate::wasm::Pooling {
        let d = crate::wasm::Pooling::default();
        crate::wasm::Pooling::new(self.max_instances.unwrap_or(d.max_instances))
            .max_memory_bytes(self.max_memory_bytes.unwrap_or(d.max_memory_bytes))
            .keep_resident_bytes(self.keep_resident_bytes.unwrap_or(d.keep_resident_bytes))
    }
}

/// One `[[scope]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeConfig {
    /// The scope key, e.g. `preset:coder` or `agent:7`.
    pub name: String,
    /// The parent scope key, declared in another `[[scope]]` entry.
    #[serde(default)]
    pub parent: Option<String>,
}

/// One `[[plugin]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// The plugin's name, used in errors and `inspect`; unique per scope.
    pub name: String,
    /// Path of the component (`.wasm`), resolved against the config file's directory; for
    /// a plugin name (`persona`), the file found on the search path
    /// ([`crate::plugin_path`]); for an `oci://` reference, the content-store file
    /// [`HostConfig::pin`] points it at.
    pub wasm: PathBuf,
    /// The scope it is loaded into; absent = global.
    #[serde(default)]
    pub scope: Option<String>,
    /// Handed to the plugin's `init` as JSON.
    #[serde(default = "empty_table")]
    pub config: toml::Table,
    /// Sandbox limit overrides (see the `wasm` module's `Limits`).
    #[serde(default)]
    pub limits: toml::Table,
    /// Failure policy.
    #[serde(default)]
    pub on_error: OnError,
    /// Under `on_error = "skip"`: consecutive failures of one entry after which the plugin
    /// is quarantined (no longer called); default 3, at least 1.
    #[serde(default)]
    pub quarantine_after: Option<u32>,
    /// Capabilities granted to the plugin (none by default): read-only directories and
    /// environment variables. Host paths are resolved against the file's directory.
    #[serde(default)]
    pub grants: crate::policy::Grants,
    /// How `prompt-host dev` rebuilds this plugin (inferred from its project when absent).
    #[serde(default)]
    pub dev: Option<DevSettings>,
    /// If set, the wasm file's sha256 (hex) must match.
    #[serde(default)]
    pub sha256: Option<String>,
    /// The typed options (`limits`, `on_error`, `quarantine_after`, `grants` resolved),
    /// parsed once when the file is loaded.
    #[serde(skip)]
    pub options: crate::policy::PluginOptions,
    /// The `oci://` reference `wasm` was written as, if it was one.
    #[cfg(feature = "oci")]
    #[serde(skip)]
    pub oci: Option<crate::oci::OciReference>,
    /// The plugin name `wasm` was written as (found on the search path), if it was one: no
    /// project of the user's builds it.
    #[serde(skip)]
    pub wasm_name: Option<String>,
    /// For an `oci://` plugin, the component digest (hex) [`HostConfig::prepare_oci`]
    /// verified and pinned: the runtime checks the bytes it compiles against it.
    #[serde(skip)]
    pub oci_component: Option<String>,
}

/// A plugin's `dev` table: how `prompt-host dev` rebuilds it when its sources change.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DevSettings {
    /// The shell command that rebuilds the `.wasm` (run in `dir`).
    pub build: Option<String>,
    /// Files and directories whose changes trigger a rebuild (relative to the file).
    #[serde(default)]
    pub watch: Vec<PathBuf>,
    /// Where the build runs (relative to the file; default: the file's directory).
    pub dir: Option<PathBuf>,
}

fn empty_table() -> toml::Table {
    toml::Table::new()
}

/// Why a host.toml was refused. Every message names the file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The file could not be read (missing, not a regular file, too large).
    #[error("{path}: cannot read the configuration file: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why (the message names the file and the reason).
        error: crate::fsutil::ReadError,
    },
    /// TOML syntax, an unknown key or a wrong type (the message names key and expectation).
    /// Displayed as toml means it to be read: the message on the first line, then the
    /// offending line with a caret under the place; [`ConfigFileError::one_line`] leaves the
    /// snippet out.
    #[error("{path}: {message}{}", below(.snippet))]
    Parse {
        /// The file.
        path: String,
        /// What the parser said, on one line, with the place when it gave one:
        /// `line 4, column 1: unknown field …`.
        message: String,
        /// toml's snippet of the offending line (`  |`, `4 | confg={}`, `  | ^^^^^`), its
        /// text escaped; empty when the parser gave no place.
        snippet: String,
    },
    /// A semantically invalid entry.
    #[error("{path}: {key}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// The offending key, e.g. `plugin[2].wasm`.
        key: String,
        /// What was expected.
        message: String,
    },
}

/// A snippet on the lines below its message, or nothing.
fn below(snippet: &str) -> String {
    if snippet.is_empty() {
        String::new()
    } else {
        format!("\n{snippet}")
    }
}

impl ConfigFileError {
    /// The error on one line, for a reader that takes one line per message (`serve`'s
    /// answers and its stderr): a parse error without its snippet, which the message's
    /// place (`line 4, column 1`) stands for.
    pub fn one_line(&self) -> String {
        match self {
            Self::Parse { path, message, .. } => format!("{path}: {message}"),
            other => other.to_string(),
        }
    }
}

/// The raw shape, before validation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    prompt: PromptConfig,
    #[serde(default)]
    host: HostSettings,
    #[serde(default)]
    scope: Vec<ScopeConfig>,
    #[serde(default)]
    plugin: Vec<PluginConfig>,
    #[serde(default)]
    sessions: sessions::RawSessions,
    #[cfg(feature = "mcp")]
    #[serde(default)]
    mcp: Vec<McpConfig>,
    // Read only to be refused by name: this build has no MCP client.
    #[cfg(not(feature = "mcp"))]
    #[serde(default)]
    mcp: Vec<toml::Table>,
}

impl HostConfig {
    /// Read and validate a host.toml file (a regular file of at most 16 MiB).
    pub fn load(path: &Path) -> Result<Self, ConfigFileError> {
        let shown = path.display().to_string();
        let text =
            crate::fsutil::read_regular_to_string(path, MAX_CONFIG_BYTES).map_err(|source| {
                ConfigFileError::Read {
                    path: shown.clone(),
                    error: source,
                }
            })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, &shown, base).map(|mut c| {
            c.path = Some(path.to_path_buf());
            c
        })
    }

    /// Parse and validate host.toml text; `shown` names it in errors, `base` resolves paths.
    pub fn parse(text: &str, shown: &str, base: &Path) -> Result<Self, ConfigFileError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let (message, snippet) = parse_error::describe(&e, text);
            ConfigFileError::Parse {
                path: shown.to_string(),
                message,
                snippet,
            }
        })?;
        let invalid = |key: String, message: String| ConfigFileError::Invalid {
            path: shown.to_string(),
            key,
            message,
        };
        #[cfg(not(feature = "mcp"))]
        missing::mcp(&raw.mcp, &raw.host).map_err(|(k, m)| invalid(k, m))?;
        #[cfg(not(feature = "oci"))]
        missing::registry(&raw.host.registry).map_err(|(k, m)| invalid(k, m))?;
        #[cfg(not(feature = "tokens"))]
        if let Some((key, value)) = token_setting(&raw.prompt) {
            return Err(invalid(
                format!("{key} = {value}"),
                crate::feature::Feature::Tokens.to_string(),
            ));
        }
        let sessions = raw.sessions.check(base).map_err(|(k, m)| invalid(k, m))?;
        let mut config = HostConfig {
            path: None,
            prompt: raw.prompt,
            host: raw.host,
            scopes: raw.scope,
            plugins: raw.plugin,
            #[cfg(feature = "mcp")]
            mcp: raw.mcp,
            sessions,
        };
        if let Some(dir) = &config.host.cache_dir {
            config.host.cache_dir = Some(base.join(dir));
        }
        // A tokenizer file is the deployment's, like its plugins: found beside host.toml.
        #[cfg(feature = "tokens")]
        if let Some(spec) = &config.prompt.tokenizer {
            if crate::tokens::is_file_spec(spec) {
                config.prompt.tokenizer = Some(base.join(spec).display().to_string());
            }
        }
        #[cfg(feature = "mcp")]
        if let Some(p) = &config.host.mcp_provider {
            let (p, _) = crate::plugin_path::resolve(p, base).map_err(|e| {
                invalid(
                    "host.mcp_provider".into(),
                    format!("expected an instruction-provider component: {e}"),
                )
            })?;
            check_component_file(&p, config.host.max_wasm_bytes()).map_err(|e| {
                invalid(
                    "host.mcp_provider".into(),
                    format!("expected a readable instruction-provider component: {e}"),
                )
            })?;
            config.host.mcp_provider = Some(p);
        }
        validate_settings(&config).map_err(|(k, m)| invalid(k, m))?;
        #[cfg(feature = "oci")]
        oci_plugins::check_registry(&mut config.host.registry, base)
            .map_err(|(k, m)| invalid(k, m))?;
        let max_wasm = config.host.max_wasm_bytes();
        validate_scopes(&config.scopes).map_err(|(k, m)| invalid(k, m))?;
        let declared: HashMap<&str, ()> = config
            .scopes
            .iter()
            .map(|s| (s.name.as_str(), ()))
            .collect();
        let check_scope = |key: String, scope: &Option<String>| match scope {
            Some(s) if !declared.contains_key(s.as_str()) => Err(invalid(
                key,
                format!("scope \"{s}\" is not declared; add a [[scope]] entry named \"{s}\""),
            )),
            _ => Ok(()),
        };
        let mut seen = HashMap::new();
        for (i, plugin) in config.plugins.iter_mut().enumerate() {
            check_scope(format!("plugin[{i}].scope"), &plugin.scope)?;
            if plugin.name.is_empty() {
                return Err(invalid(
                    format!("plugin[{i}].name"),
                    "expected a non-empty plugin name".into(),
                ));
            }
            let limits =
                plugin_limits(plugin).map_err(|(k, m)| invalid(format!("plugin[{i}].{k}"), m))?;
            plugin.grants = plugin
                .grants
                .resolve(base)
                .map_err(|e| invalid(format!("plugin[{i}].grants.{}", e.key), e.message))?;
            let defaults = crate::policy::PluginOptions::default();
            plugin.options = crate::policy::PluginOptions {
                limits,
                on_error: plugin.on_error,
                quarantine_after: plugin.quarantine_after.unwrap_or(defaults.quarantine_after),
                grants: plugin.grants.clone(),
            };
            if let Some(dev) = &mut plugin.dev {
                dev.watch = dev.watch.iter().map(|p| base.join(p)).collect();
                dev.dir = Some(base.join(dev.dir.as_deref().unwrap_or(Path::new("."))));
            }
            let slot = (plugin.scope.clone(), plugin.name.clone());
            if seen.insert(slot, i).is_some() {
                return Err(invalid(
                    format!("plugin[{i}].name"),
                    format!(
                        "plugin \"{}\" is loaded twice into the same scope; names must be unique per scope",
                        plugin.name
                    ),
                ));
            }
            #[cfg(not(feature = "oci"))]
            missing::oci_plugin(i, plugin).map_err(|(k, m)| invalid(k, m))?;
            #[cfg(feature = "oci")]
            if let Some(text) = plugin.wasm.to_str().filter(|t| crate::oci::is_oci(t)) {
                let reference = crate::oci::OciReference::parse(text).map_err(|message| {
                    invalid(
                        format!("plugin[{i}].wasm"),
                        format!("plugin \"{}\": {message}", plugin.name),
                    )
                })?;
                if let Some(pin) = &plugin.sha256 {
                    let hex = pin.trim().trim_start_matches("sha256:");
                    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(invalid(
                            format!("plugin[{i}].sha256"),
                            format!(
                                "plugin \"{}\": expected 64 hex digits, got \"{pin}\"",
                                plugin.name
                            ),
                        ));
                    }
                }
                // Fetched and verified by `prepare_oci`, which points `wasm` at the store.
                plugin.oci = Some(reference);
                continue;
            }
            let (wasm, wasm_name) =
                crate::plugin_path::resolve(&plugin.wasm, base).map_err(|e| {
                    invalid(
                        format!("plugin[{i}].wasm"),
                        format!("plugin \"{}\": {e}", plugin.name),
                    )
                })?;
            plugin.wasm = wasm;
            plugin.wasm_name = wasm_name;
            let unreadable = |e: &dyn std::fmt::Display| {
                invalid(
                    format!("plugin[{i}].wasm"),
                    format!(
                        "expected a readable component file for plugin \"{}\": {e}",
                        plugin.name
                    ),
                )
            };
            // Only a pin needs the bytes now; otherwise the runtime reads the file once.
            check_component_file(&plugin.wasm, max_wasm).map_err(|e| unreadable(&e))?;
            if let Some(pin) = &plugin.sha256 {
                let bytes = crate::fsutil::read_regular(&plugin.wasm, max_wasm)
                    .map_err(|e| unreadable(&e))?;
                let actual = crate::wasm::sha256_hex(&bytes);
                if !crate::wasm::pin_matches(pin, &actual) {
                    return Err(invalid(
                        format!("plugin[{i}].sha256"),
                        format!(
                            "plugin \"{}\": {} has sha256 {actual}, expected {pin}",
                            plugin.name,
                            plugin.wasm.display()
                        ),
                    ));
                }
            }
        }
        #[cfg(feature = "mcp")]
        let mut names = HashMap::new();
        #[cfg(feature = "mcp")]
        for (i, mcp) in config.mcp.iter_mut().enumerate() {
            check_scope(format!("mcp[{i}].scope"), &mcp.scope)?;
            if !crate::mcp::valid_server_name(&mcp.name) {
                return Err(invalid(
                    format!("mcp[{i}].name"),
                    format!(
                        "expected a server name matching ^[A-Za-z0-9_-]{{1,32}}$, got \"{}\"",
                        mcp.name
                    ),
                ));
            }
            if names.insert(mcp.name.clone(), i).is_some() {
                return Err(invalid(
                    format!("mcp[{i}].name"),
                    format!("MCP server name \"{}\" is used twice", mcp.name),
                ));
            }
            mcp_entry::check(i, mcp, base).map_err(|(k, m)| invalid(k, m))?;
            if let Some(p) = &mcp.provider {
                let (p, _) = crate::plugin_path::resolve(p, base).map_err(|e| {
                    invalid(
                        format!("mcp[{i}].provider"),
                        format!("expected an instruction-provider component: {e}"),
                    )
                })?;
                check_component_file(&p, max_wasm).map_err(|e| {
                    invalid(
                        format!("mcp[{i}].provider"),
                        format!("expected a readable instruction-provider component: {e}"),
                    )
                })?;
                mcp.provider = Some(p);
            } else if config.host.mcp_provider.is_none() {
                return Err(invalid(
                    format!("mcp[{i}].provider"),
                    format!(
                        "MCP server \"{}\" has no instruction-provider plugin; set mcp[{i}].provider \
                         or [host] mcp_provider to one, such as the bundled \"mcp-instructions\"",
                        mcp.name
                    ),
                ));
            }
        }
        Ok(config)
    }

    /// The instruction-provider plugin of `[[mcp]]` entry `index`: its own `provider`, else
    /// `[host] mcp_provider`. `None` only for a config built in memory without either.
    #[cfg(feature = "mcp")]
    pub fn mcp_provider(&self, index: usize) -> Option<&Path> {
        let entry = self.mcp.get(index)?;
        entry
            .provider
            .as_deref()
            .or(self.host.mcp_provider.as_deref())
    }

    /// The `config` table of a plugin as JSON text for its `init`.
    pub fn plugin_config_json(table: &toml::Table) -> String {
        serde_json::to_string(table).unwrap_or_else(|_| "{}".to_string())
    }
}

/// The largest host.toml read: configuration, not data.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

impl HostSettings {
    /// `max_wasm_bytes`, or its default.
    pub fn max_wasm_bytes(&self) -> u64 {
        self.max_wasm_bytes
            .unwrap_or(crate::wasm::DEFAULT_MAX_WASM_BYTES)
    }
}

/// `path` is a regular file of at most `max` bytes (checked on the opened descriptor, so a
/// FIFO is never waited on).
fn check_component_file(path: &Path, max: u64) -> Result<(), String> {
    let (_, metadata) = crate::fsutil::open_regular(path, std::fs::OpenOptions::new().read(true))
        .map_err(|e| match crate::fsutil::not_regular(&e) {
        Some(not_regular) => not_regular.to_string(),
        None => format!("{} cannot be read: {e}", path.display()),
    })?;
    if metadata.len() > max {
        return Err(format!(
            "{} has {} bytes, more than max_wasm_bytes = {max}",
            path.display(),
            metadata.len()
        ));
    }
    Ok(())
}

/// Settings that parse but cannot work: zero budgets, an empty instance pool.
fn validate_settings(config: &HostConfig) -> Result<(), (String, String)> {
    let at_least_one = |key: &str, value: usize| {
        if value == 0 {
            Err((key.to_string(), "must be at least 1".to_string()))
        } else {
            Ok(())
        }
    };
    at_least_one("prompt.max_prompt_bytes", config.prompt.max_prompt_bytes)?;
    at_least_one("prompt.max_context_bytes", config.prompt.max_context_bytes)?;
    for (key, value) in [
        ("prompt.max_prompt_tokens", config.prompt.max_prompt_tokens),
        (
            "prompt.max_context_tokens",
            config.prompt.max_context_tokens,
        ),
    ] {
        if let Some(value) = value {
            at_least_one(key, value)?;
            if config.prompt.tokenizer.is_none() {
                return Err((
                    key.to_string(),
                    "a token budget needs prompt.tokenizer, the tokenizer that counts it".into(),
                ));
            }
        }
    }
    if config.sessions.max_request_tokens.is_some() && config.prompt.tokenizer.is_none() {
        return Err((
            "sessions.max_request_tokens".to_string(),
            "a token budget needs prompt.tokenizer, the tokenizer that counts it".into(),
        ));
    }
    #[cfg(feature = "mcp")]
    for (i, mcp) in config.mcp.iter().enumerate() {
        if let Some(value) = mcp.max_instruction_tokens {
            let key = format!("mcp[{i}].max_instruction_tokens");
            at_least_one(&key, value)?;
            if config.prompt.tokenizer.is_none() {
                return Err((
                    key,
                    "a token budget needs prompt.tokenizer, the tokenizer that counts it".into(),
                ));
            }
        }
    }
    if config.host.max_wasm_bytes == Some(0) {
        at_least_one("host.max_wasm_bytes", 0)?;
    }
    if let Some(pooling) = &config.host.pooling {
        if let Some(n) = pooling.max_instances {
            at_least_one("host.pooling.max_instances", n as usize)?;
        }
        if let Some(n) = pooling.max_memory_bytes {
            at_least_one("host.pooling.max_memory_bytes", n)?;
        }
    }
    Ok(())
}

/// A plugin's `limits` table, typed, and its `quarantine_after`, checked by key (relative
/// to the plugin's entry).
fn plugin_limits(plugin: &PluginConfig) -> Result<crate::policy::Limits, (String, String)> {
    use serde::Deserialize as _;
    let limits = crate::policy::Limits::deserialize(toml::Value::Table(plugin.limits.clone()))
        .map_err(|e| ("limits".to_string(), e.to_string().trim_end().to_string()))?;
    limits
        .validate()
        .map_err(|e| (format!("limits.{}", e.key), e.message))?;
    if plugin.quarantine_after == Some(0) {
        return Err(("quarantine_after".into(), "must be at least 1".into()));
    }
    Ok(limits)
}

/// Scope names unique and non-empty, parents declared, no cycles.
fn validate_scopes(scopes: &[ScopeConfig]) -> Result<(), (String, String)> {
    let mut index = HashMap::new();
    for (i, scope) in scopes.iter().enumerate() {
        if scope.name.is_empty() {
            return Err((
                format!("scope[{i}].name"),
                "expected a non-empty scope key".into(),
            ));
        }
        if index.insert(scope.name.as_str(), i).is_some() {
            return Err((
                format!("scope[{i}].name"),
                format!("scope \"{}\" is declared twice", scope.name),
            ));
        }
    }
    for (i, scope) in scopes.iter().enumerate() {
        let Some(parent) = &scope.parent else {
            continue;
        };
        if !index.contains_key(parent.as_str()) {
            return Err((
                format!("scope[{i}].parent"),
                format!(
                    "parent \"{parent}\" of scope \"{}\" is not declared in any [[scope]] entry",
                    scope.name
                ),
            ));
        }
        // Walk up from the parent; reaching this scope again closes a cycle.
        let mut cursor = Some(parent.as_str());
        let mut steps = 0;
        while let Some(key) = cursor {
            if key == scope.name || steps > scopes.len() {
                // The core's `scope:` cycle text, as a refused `bind_scope` gives it; the
                // key says which link.
                return Err((
                    format!("scope[{i}].parent (\"{}\" -> \"{parent}\")", scope.name),
                    crate::prompt::ScopeError::Cycle {
                        key: scope.name.clone(),
                        parent: parent.clone(),
                    }
                    .to_string(),
                ));
            }
            cursor = index.get(key).and_then(|&j| scopes[j].parent.as_deref());
            steps += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
