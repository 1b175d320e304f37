//! Where a host fetches the `oci://` plugins loaded while it runs (serve's `load_plugin`):
//! the registry settings and lock file of the host.toml it was built from, and the content
//! store beside its compile cache.

use std::path::PathBuf;

use super::{Host, HostError};
use crate::oci::{OciReference, RegistrySettings, Resolution};

/// The registry settings, content store and lock a host fetches run-time plugins with.
#[derive(Debug, Clone)]
pub(crate) struct OciSource {
    pub(crate) settings: RegistrySettings,
    pub(crate) cache_dir: PathBuf,
    pub(crate) lock: Option<PathBuf>,
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
