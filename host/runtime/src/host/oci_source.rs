//! Where a host fetches the `oci://` plugins loaded while it runs (serve's `load_plugin`):
//! the registry settings and lock file of the host.toml it was built from, and the content
//! store beside its compile cache.

use std::path::PathBuf;

use super::{Host, HostError};
use crate::config::HostConfig;
use crate::oci::{OciReference, RegistrySettings, Resolution};
use crate::wasm::RuntimeConfig;

/// The registry settings, content store and lock a host fetches run-time plugins with.
#[derive(Debug, Clone)]
pub(crate) struct OciSource {
    pub(crate) settings: RegistrySettings,
    pub(crate) cache_dir: PathBuf,
    pub(crate) lock: Option<PathBuf>,
}

impl OciSource {
    /// A host's own, without a host.toml: the default registry settings with the
    /// runtime's size cap, the store beside the compile cache, no lock.
    pub(super) fn for_runtime(runtime: &RuntimeConfig) -> Self {
        Self {
            settings: RegistrySettings {
                max_bytes: runtime.max_wasm_bytes,
                ..RegistrySettings::default()
            },
            cache_dir: runtime
                .cache_dir
                .clone()
                .unwrap_or_else(crate::wasm::default_cache_dir),
            lock: None,
        }
    }

    /// The source of a host built from `config` with `runtime`: `[host.registry]`, the lock
    /// beside host.toml. Refused when an `oci://` plugin of `config` was not fetched yet.
    pub(super) fn configured(
        config: &HostConfig,
        runtime: &RuntimeConfig,
    ) -> Result<Self, HostError> {
        if let Some(plugin) = config
            .plugins
            .iter()
            .find(|p| p.oci.is_some() && p.oci_component.is_none())
        {
            return Err(HostError::Oci(crate::oci::OciError::Plugin {
                plugin: plugin.name.clone(),
                message: format!(
                    "{} is not fetched yet: call prompt_host::oci::prepare on the configuration first (the command line does)",
                    plugin.wasm.display()
                ),
            }));
        }
        Ok(Self {
            settings: config.registry_settings(),
            cache_dir: config.oci_cache_dir(runtime.cache_dir.as_deref()),
            lock: config.oci_lock_path(),
        })
    }
}

impl Host {
    /// The component `reference` names, verified in the content store (pulled when it is
    /// not there): at the digest host.toml's lock records for the reference when it has
    /// it, else as written (a tag resolved now). Load it with [`Host::load_plugin`] and the
    /// returned component digest as the spec's `sha256`, so the bytes compiled are checked.
    pub async fn fetch_oci(&self, reference: &OciReference) -> Result<Resolution, HostError> {
        let source = self
            .oci_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        crate::oci::fetch(
            reference,
            &source.settings,
            &source.cache_dir,
            source.lock.as_deref(),
        )
        .await
        .map_err(HostError::Oci)
    }

    pub(super) fn set_oci_source(&self, source: OciSource) {
        *self
            .oci_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = source;
    }
}
