//! Plugins from OCI registries: `wasm = "oci://REGISTRY/REPOSITORY:TAG"` (or `@sha256:…`)
//! in host.toml, resolved once into the lock file beside it, pulled into a content store
//! under the compile cache, and verified by digest before anything is compiled.
//!
//! A start reads the lock and the store and does not contact the registry when both have
//! what it needs, so a locked deployment starts offline. A tag that moved is found by
//! `prompt-host lock` (which compares each locked tag with the registry) and only taken by
//! `prompt-host lock --update`; until then the locked bytes run.
//!
//! The module reads no configuration. It takes plain inputs (the references with the
//! plugin each belongs to, [`PluginReference`]; the lock file's path; the
//! [`RegistrySettings`]; the content store's directory) and returns [`Resolution`]s.
//! `HostConfig` gathers the inputs from host.toml and applies the result to its plugins
//! (`HostConfig::prepare_oci`, `HostConfig::pin`).
//!
//! A crate of its own, on `prompt-host-core` and `prompt-host-peer`: the registry client
//! needs HTTP and TLS but no WebAssembly runtime and no tokenizer, and it takes no
//! configuration, so an embedder without OCI plugins need not build it. The `prompt-host`
//! crate re-exports it as `prompt_host::oci`.

mod auth;
mod body;
mod bounded;
mod credentials;
mod destination;
mod lock;
mod manifest;
mod push;
mod reference;
mod registry;
mod registry_error;
mod status;
mod store;
mod transport;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

pub use lock::{lock_path_for, LockFile, LockedArtifact, HEADER as LOCK_HEADER};
pub use manifest::{MANIFEST_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
pub use reference::{is_loopback_registry, is_oci, valid_digest, OciReference, SCHEME};
pub use registry::{
    Pulled, Pushed, Registry, RegistrySettings, DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT,
    DEFAULT_TOTAL_TIMEOUT,
};
pub use registry_error::RegistryError;
pub use store::{ContentStore, Stored};

/// Why an OCI reference could not be used. Every message names the reference, the
/// registry, the lock file or the store.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OciError {
    /// The registry answered with an error, could not be reached, or took longer than
    /// the bounds allow. The cause is displayed, not returned as a source (see
    /// [`RegistryError`]).
    #[error("{reference}: {error}")]
    Registry {
        /// The reference.
        reference: String,
        /// What happened (boxed: the host's errors stay small to move).
        error: Box<RegistryError>,
    },
    /// What the registry holds there is not a Wasm component artifact (or is too large).
    #[error("{reference}: {message}")]
    Artifact {
        /// The reference.
        reference: String,
        /// What is wrong with it.
        message: String,
    },
    /// Bytes that do not hash to the digest they were fetched or stored under.
    #[error("{what}: expected digest {expected}, the bytes hash to {actual}; refused")]
    Digest {
        /// What was checked.
        what: String,
        /// The digest asked for.
        expected: String,
        /// The digest of the bytes.
        actual: String,
    },
    /// The lock file could not be read or written.
    #[error("{}: {message}", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The content store could not be used.
    #[error("content store {}: {message}", path.display())]
    Store {
        /// The store's directory or file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The credentials for a registry could not be read.
    #[error("credentials for {registry}: {message}")]
    Credentials {
        /// The registry.
        registry: String,
        /// Why (never the secret).
        message: String,
    },
    /// Invalid registry settings.
    #[error("registry settings: {0}")]
    Settings(String),
    /// A plugin's reference and its lock, pin or deployment disagree.
    #[error("plugin \"{plugin}\": {message}")]
    Plugin {
        /// The plugin.
        plugin: String,
        /// What disagrees.
        message: String,
    },
}

impl OciError {
    /// [`OciError::Registry`] for `reference`.
    pub fn registry(reference: impl ToString, error: RegistryError) -> Self {
        Self::Registry {
            reference: reference.to_string(),
            error: Box::new(error),
        }
    }
}

/// How [`prepare`] treats the lock file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Starting a deployment: locked references use their locked digests (pulled only when
    /// the store lacks them); a reference not in the lock is resolved and recorded.
    Use,
    /// `prompt-host lock --update`: every reference resolved again and the lock rewritten.
    Update,
}

/// What [`prepare`] or [`check_lock`] found for one reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The reference as host.toml writes it.
    pub reference: String,
    /// The manifest digest in use (or, for [`check_lock`], at the registry now).
    pub manifest: String,
    /// The component digest in use.
    pub component: String,
    /// The component's size in bytes.
    pub size: u64,
    /// Where the component is in the content store (empty for [`check_lock`]).
    pub path: PathBuf,
    /// The manifest digest the lock had before, when it differs (a moved tag).
    pub was: Option<String>,
    /// Whether the component was pulled from the registry now (not found in the store).
    pub pulled: bool,
    /// Whether the reference was not in the lock before.
    pub added: bool,
}

/// One `oci://` plugin for [`prepare`] and [`check_lock`]: its reference, the plugin it
/// belongs to (named in errors) and the plugin's `sha256` pin, if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginReference {
    /// The plugin's name.
    pub plugin: String,
    /// The reference its `wasm` was written as.
    pub reference: OciReference,
    /// The plugin's `sha256` pin (hex, `sha256:` prefix allowed): the component must match.
    pub sha256: Option<String>,
}

impl Resolution {
    /// Refuses the component when `pin` (a plugin's `sha256`, hex with or without the
    /// `sha256:` prefix) is not its digest, naming `plugin` and whether the component came
    /// from the registry or the lock.
    pub fn check_pin(&self, plugin: &str, pin: &str) -> Result<(), OciError> {
        let component_hex = self.component.trim_start_matches("sha256:");
        if prompt_host_core::digest::pin_matches(pin.trim_start_matches("sha256:"), component_hex) {
            return Ok(());
        }
        Err(OciError::Plugin {
            plugin: plugin.to_string(),
            message: format!(
                "{} resolves to component {} ({}), but its sha256 pins {pin}; refused",
                self.reference,
                self.component,
                if self.added {
                    "from the registry"
                } else {
                    "by the lock"
                }
            ),
        })
    }
}

/// Make every plugin of `plugins` loadable: each one's component verified in the content
/// store under `cache_dir` (pulled when missing) and checked against the plugin's `sha256`
/// pin. The lock at `lock` (`None`: a configuration not read from a file, which has none)
/// is read, and written when a reference was added (or, under [`LockMode::Update`],
/// changed); a refused pin leaves it as it was. Returns one [`Resolution`] per distinct
/// reference, in the order of their text, for the caller to point its plugins at
/// ([`Resolution::path`]). `HostConfig::prepare_oci` calls it with a configuration's
/// plugins, lock and registry settings and applies the result.
pub async fn prepare(
    plugins: &[PluginReference],
    lock: Option<&Path>,
    settings: &RegistrySettings,
    mode: LockMode,
    cache_dir: &Path,
) -> Result<Vec<Resolution>, OciError> {
    if plugins.is_empty() && mode == LockMode::Use {
        return Ok(Vec::new());
    }
    let mut lock = lock.map(LockFile::read).transpose()?;
    let store = ContentStore::open(cache_dir)?;
    let mut registry: Option<Registry> = None;
    let mut done: BTreeMap<String, Resolution> = BTreeMap::new();
    let mut lock_changed = false;
    for wanted in plugins {
        let reference = &wanted.reference;
        let text = reference.to_string();
        if !done.contains_key(&text) {
            let locked = lock.as_ref().and_then(|l| l.get(&text)).cloned();
            // Under `Update` a tag is resolved again; a digest cannot move.
            let locked = match mode {
                LockMode::Update => {
                    locked.filter(|_| reference.tag().is_none() || reference.digest().is_some())
                }
                LockMode::Use => locked,
            };
            if locked.is_none() && lock.is_none() && reference.digest().is_none() {
                return Err(OciError::Plugin {
                    plugin: wanted.plugin.clone(),
                    message: format!(
                        "{text} is a tag, and a configuration that is not read from a file has no lock to record what it resolves to; reference it by digest (…@sha256:…)"
                    ),
                });
            }
            let mut resolution =
                obtain(reference, locked.as_ref(), &store, settings, &mut registry).await?;
            if locked.is_none() {
                if let Some(lock) = &mut lock {
                    let before = lock.get(&text).map(|e| e.manifest.clone());
                    resolution.added = before.is_none();
                    resolution.was = before.filter(|b| *b != resolution.manifest);
                    lock.insert(LockedArtifact {
                        reference: text.clone(),
                        manifest: resolution.manifest.clone(),
                        component: resolution.component.clone(),
                        size: resolution.size,
                    });
                    lock_changed = true;
                }
            }
            done.insert(text.clone(), resolution);
        }
        if let Some(pin) = &wanted.sha256 {
            done[&text].check_pin(&wanted.plugin, pin)?;
        }
    }
    if let Some(lock) = &mut lock {
        if mode == LockMode::Update {
            lock_changed |= lock.retain(|r| done.contains_key(r));
        }
        if lock_changed {
            lock.write()?;
        }
    }
    Ok(done.into_values().collect())
}

/// For `prompt-host lock` without `--update`: each reference of `plugins`, compared with
/// what the registry names by it now (`was` set when it moved from what the lock at `lock`
/// has, `added` when the lock lacks it). Nothing is pulled or written; without a lock
/// (`None`) there is nothing to compare.
pub async fn check_lock(
    plugins: &[PluginReference],
    lock: Option<&Path>,
    settings: &RegistrySettings,
) -> Result<Vec<Resolution>, OciError> {
    let Some(path) = lock else {
        return Ok(Vec::new());
    };
    let lock = LockFile::read(path)?;
    let mut registry = None;
    let mut seen = BTreeMap::new();
    for PluginReference { reference, .. } in plugins {
        let text = reference.to_string();
        if seen.contains_key(&text) {
            continue;
        }
        let locked = lock.get(&text).cloned();
        let client = registry_for(&mut registry, settings)?;
        let now = client.resolve(reference).await?;
        let resolution = Resolution {
            reference: text.clone(),
            was: locked
                .as_ref()
                .map(|l| l.manifest.clone())
                .filter(|m| *m != now),
            component: locked
                .as_ref()
                .map(|l| l.component.clone())
                .unwrap_or_default(),
            size: locked.as_ref().map_or(0, |l| l.size),
            path: PathBuf::new(),
            added: locked.is_none(),
            manifest: now,
            pulled: false,
        };
        seen.insert(text, resolution);
    }
    Ok(seen.into_values().collect())
}

/// The component `reference` names: at its `locked` manifest (from the store when it is
/// there, else pulled by that digest and checked against the locked component), or as
/// written (pulled, a tag resolved now).
async fn obtain(
    reference: &OciReference,
    locked: Option<&LockedArtifact>,
    store: &ContentStore,
    settings: &RegistrySettings,
    registry: &mut Option<Registry>,
) -> Result<Resolution, OciError> {
    let text = reference.to_string();
    // A digest reference names its manifest: one kept in the store tells the component.
    let from_manifest = match (locked, reference.digest()) {
        (None, Some(digest)) => match store.read(digest, 4 << 20)? {
            Stored::Verified(raw) => {
                manifest::component_of(&raw)
                    .ok()
                    .map(|(component, size)| LockedArtifact {
                        reference: text.clone(),
                        manifest: digest.to_string(),
                        component,
                        size,
                    })
            }
            _ => None,
        },
        _ => None,
    };
    let Some(entry) = locked.or(from_manifest.as_ref()) else {
        let client = registry_for(registry, settings)?;
        let pulled = client.pull(reference, None).await?;
        let path = store.put(&pulled.component, &pulled.bytes)?;
        store.put(&pulled.manifest, &pulled.manifest_bytes)?;
        return Ok(Resolution {
            reference: text,
            size: pulled.bytes.len() as u64,
            manifest: pulled.manifest,
            component: pulled.component,
            path,
            was: None,
            pulled: true,
            added: true,
        });
    };
    let stored = store.read(&entry.component, settings.max_bytes)?;
    let pulled = match stored {
        Stored::Verified(_) => false,
        Stored::Missing | Stored::Corrupt { .. } => {
            if let Stored::Corrupt { actual } = &stored {
                log::warn!(
                    "{text}: the stored component hashed to {actual}, not {}; removed and pulled again",
                    entry.component
                );
            }
            let client = registry_for(registry, settings)?;
            let pulled = client.pull(reference, Some(&entry.manifest)).await?;
            if pulled.component != entry.component {
                return Err(OciError::Digest {
                    what: format!("{text}: component of locked manifest {}", entry.manifest),
                    expected: entry.component.clone(),
                    actual: pulled.component,
                });
            }
            store.put(&pulled.component, &pulled.bytes)?;
            store.put(&pulled.manifest, &pulled.manifest_bytes)?;
            true
        }
    };
    Ok(Resolution {
        reference: text,
        manifest: entry.manifest.clone(),
        component: entry.component.clone(),
        size: entry.size,
        path: store.path_of(&entry.component),
        was: None,
        pulled,
        added: locked.is_none(),
    })
}

/// The component an `oci://` reference names, for a plugin loaded at run time (serve's
/// `load_plugin`): at the manifest `lock` records for it when it has the reference, else
/// as written. The lock is read, never written: a deployment's lock records host.toml.
pub async fn fetch(
    reference: &OciReference,
    settings: &RegistrySettings,
    cache_dir: &Path,
    lock: Option<&Path>,
) -> Result<Resolution, OciError> {
    let locked = match lock {
        Some(path) => LockFile::read(path)?.get(&reference.to_string()).cloned(),
        None => None,
    };
    let store = ContentStore::open(cache_dir)?;
    let mut registry = None;
    obtain(reference, locked.as_ref(), &store, settings, &mut registry).await
}

fn registry_for<'a>(
    registry: &'a mut Option<Registry>,
    settings: &RegistrySettings,
) -> Result<&'a Registry, OciError> {
    if registry.is_none() {
        *registry = Some(Registry::new(settings.clone())?);
    }
    registry
        .as_ref()
        .ok_or_else(|| OciError::Settings("no registry client".into()))
}
