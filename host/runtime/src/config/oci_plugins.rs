//! The configuration's side of `oci://` plugins: what [`crate::oci`] needs from host.toml
//! (the references, the lock beside the file, `[host.registry]`, the cache directory), and
//! the resolutions it returns applied to the plugins.

use std::path::{Path, PathBuf};

use super::HostConfig;
use crate::oci::{self, LockMode, OciError, PluginReference, RegistrySettings, Resolution};

impl HostConfig {
    /// Make every `oci://` plugin loadable: [`oci::prepare`] with this configuration's
    /// plugins, lock and registry settings, then [`HostConfig::pin`] with what it returns.
    /// Each component is verified in the content store under `cache_dir` (pulled when
    /// missing), each plugin's `wasm` pointed at it and its digest pinned, so the runtime
    /// checks the bytes it compiles once more. The lock beside host.toml is read, and
    /// written when a reference was added (or, under [`LockMode::Update`], changed).
    /// `cache_dir` is the compile cache the host will use ([`HostConfig::oci_cache_dir`]).
    pub async fn prepare_oci(
        &mut self,
        mode: LockMode,
        cache_dir: &Path,
    ) -> Result<Vec<Resolution>, OciError> {
        let resolutions = oci::prepare(
            &self.oci_plugins(),
            self.oci_lock_path().as_deref(),
            &self.registry_settings(),
            mode,
            cache_dir,
        )
        .await?;
        self.pin(&resolutions)?;
        Ok(resolutions)
    }

    /// For `prompt-host lock` without `--update`: [`oci::check_lock`] with this
    /// configuration's plugins, lock and registry settings.
    pub async fn check_oci_lock(&self) -> Result<Vec<Resolution>, OciError> {
        oci::check_lock(
            &self.oci_plugins(),
            self.oci_lock_path().as_deref(),
            &self.registry_settings(),
        )
        .await
    }

    /// The `oci://` plugins, in load order: each one's reference, name and `sha256` pin.
    pub fn oci_plugins(&self) -> Vec<PluginReference> {
        self.plugins
            .iter()
            .filter_map(|p| {
                p.oci.clone().map(|reference| PluginReference {
                    plugin: p.name.clone(),
                    reference,
                    sha256: p.sha256.clone(),
                })
            })
            .collect()
    }

    /// The lock file beside host.toml ([`oci::lock_path_for`]); `None` for a
    /// configuration not read from a file.
    pub fn oci_lock_path(&self) -> Option<PathBuf> {
        self.path.as_deref().map(oci::lock_path_for)
    }

    /// The registry settings (`[host.registry]`, `[host] max_wasm_bytes`).
    pub fn registry_settings(&self) -> RegistrySettings {
        let r = &self.host.registry;
        RegistrySettings {
            plain_http: r.plain_http.clone(),
            ca_file: r.ca_file.clone(),
            timeout: r
                .timeout_ms
                .map_or(oci::DEFAULT_TIMEOUT, std::time::Duration::from_millis),
            total_timeout: r
                .total_timeout_ms
                .map_or(oci::DEFAULT_TOTAL_TIMEOUT, std::time::Duration::from_millis),
            max_bytes: self.host.max_wasm_bytes(),
        }
    }

    /// The compile cache directory a host built from this configuration uses, where the
    /// content store lives: `[host] cache_dir`, else `runtime` (the embedder's
    /// [`crate::RuntimeConfig`] `cache_dir`), else the user's cache directory.
    pub fn oci_cache_dir(&self, runtime: Option<&Path>) -> PathBuf {
        self.host
            .cache_dir
            .clone()
            .or_else(|| runtime.map(Path::to_path_buf))
            .unwrap_or_else(crate::wasm::default_cache_dir)
    }

    /// Apply `resolutions` (from [`oci::prepare`]) to the `oci://` plugins: each plugin's
    /// `wasm` pointed at its component in the content store and `oci_component` set to the
    /// component's digest, after its `sha256` pin is checked against it
    /// ([`Resolution::check_pin`]). A plugin whose reference has no resolution is left as
    /// it is (and refused by [`crate::Host::from_config`] as not fetched yet).
    pub fn pin(&mut self, resolutions: &[Resolution]) -> Result<(), OciError> {
        for plugin in &mut self.plugins {
            let Some(reference) = &plugin.oci else {
                continue;
            };
            let text = reference.to_string();
            let Some(resolution) = resolutions.iter().find(|r| r.reference == text) else {
                continue;
            };
            if let Some(pin) = &plugin.sha256 {
                resolution.check_pin(&plugin.name, pin)?;
            }
            plugin.wasm = resolution.path.clone();
            plugin.oci_component = Some(
                resolution
                    .component
                    .trim_start_matches("sha256:")
                    .to_string(),
            );
        }
        Ok(())
    }
}

/// `[host.registry]` checked and its `ca_file` resolved against the file's directory `base`;
/// `(key, message)` names what is wrong.
pub(super) fn check_registry(
    registry: &mut super::RegistryConfig,
    base: &Path,
) -> Result<(), (String, String)> {
    if let Some(ca) = &registry.ca_file {
        registry.ca_file = Some(base.join(ca));
    }
    for (i, host) in registry.plain_http.iter().enumerate() {
        if !oci::is_loopback_registry(host) {
            return Err((
                format!("host.registry.plain_http[{i}]"),
                format!("{host} is not a loopback registry; plain HTTP is allowed only for localhost, 127.0.0.0/8 and [::1]"),
            ));
        }
    }
    for (key, value) in [
        ("timeout_ms", registry.timeout_ms),
        ("total_timeout_ms", registry.total_timeout_ms),
    ] {
        if value == Some(0) {
            return Err((
                format!("host.registry.{key}"),
                "must be at least 1 (0 would fail every request)".into(),
            ));
        }
    }
    Ok(())
}
