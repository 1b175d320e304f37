//! The lock file: which exact bytes each `oci://` reference of a deployment resolved to.
//!
//! It sits beside host.toml and takes its name (`host.toml` → `host.lock`), so two
//! deployments in one directory never share one. A tag is resolved once and recorded here;
//! later starts read the digests from it and never ask the registry what the tag means now,
//! so the deployment runs the same bytes until `prompt-host lock --update` rewrites it.
//!
//! The host writes the file and nothing else: a file at that path that is not a lock this
//! host wrote (it does not start with [`HEADER`] or does not parse) is refused, never
//! overwritten.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::OciError;

/// The first line of every lock file the host writes.
pub const HEADER: &str =
    "# host.lock: written by prompt-host; `prompt-host lock --update` rewrites it.";

/// The largest lock file read.
const MAX_LOCK_BYTES: u64 = 4 << 20;

/// What one reference resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedArtifact {
    /// The reference as host.toml writes it.
    pub reference: String,
    /// The manifest's digest (`sha256:…`): pulling by it gives the same artifact anywhere.
    pub manifest: String,
    /// The component's digest (`sha256:…`), the bytes that are compiled.
    pub component: String,
    /// The component's size in bytes.
    pub size: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LockText {
    version: u32,
    #[serde(default)]
    artifact: Vec<LockedArtifact>,
}

/// A lock file: its path and its entries by reference.
#[derive(Debug, Clone)]
pub struct LockFile {
    path: PathBuf,
    /// Whether a file is at `path` now (written by this host).
    exists: bool,
    entries: BTreeMap<String, LockedArtifact>,
}

/// The lock file of the host.toml at `config`: same directory, same stem, `.lock`.
pub fn lock_path_for(config: &Path) -> PathBuf {
    config.with_extension("lock")
}

impl LockFile {
    /// Read the lock at `path`; no file there is an empty lock.
    pub fn read(path: &Path) -> Result<Self, OciError> {
        let refused = |message: String| OciError::Lock {
            path: path.to_path_buf(),
            message,
        };
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(Self {
                path: path.to_path_buf(),
                exists: false,
                entries: BTreeMap::new(),
            });
        }
        let text = prompt_host_core::fsutil::read_regular_to_string(path, MAX_LOCK_BYTES)
            .map_err(|e| refused(e.to_string()))?;
        if !text.starts_with(HEADER) {
            return Err(refused(
                "not a lock file written by prompt-host (its first line is not the header); \
                 it is left as it is: move it away to let the host write one"
                    .into(),
            ));
        }
        let parsed: LockText = toml::from_str(&text)
            .map_err(|e| refused(e.to_string().trim_end().replace('\n', " ")))?;
        if parsed.version != 1 {
            return Err(refused(format!(
                "lock file version {} is not known to this prompt-host (1 is)",
                parsed.version
            )));
        }
        let mut entries = BTreeMap::new();
        for entry in parsed.artifact {
            if !super::valid_digest(&entry.manifest) || !super::valid_digest(&entry.component) {
                return Err(refused(format!(
                    "{}: expected sha256:<64 hex> digests",
                    entry.reference
                )));
            }
            entries.insert(entry.reference.clone(), entry);
        }
        Ok(Self {
            path: path.to_path_buf(),
            exists: true,
            entries,
        })
    }

    /// Where the lock lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entry for `reference` (as written in host.toml).
    pub fn get(&self, reference: &str) -> Option<&LockedArtifact> {
        self.entries.get(reference)
    }

    /// Every entry, by reference.
    pub fn entries(&self) -> impl Iterator<Item = &LockedArtifact> {
        self.entries.values()
    }

    /// Record (or replace) an entry.
    pub fn insert(&mut self, entry: LockedArtifact) {
        self.entries.insert(entry.reference.clone(), entry);
    }

    /// Keep only the entries whose reference `keep` accepts; whether any was dropped.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) -> bool {
        let before = self.entries.len();
        self.entries.retain(|reference, _| keep(reference));
        before != self.entries.len()
    }

    /// Write the lock: to a new file beside it, flushed to disk, then renamed over it, so a
    /// reader sees the old lock or the new one and never a part. An existing file is
    /// re-checked first (another process may have put something else there).
    pub fn write(&mut self) -> Result<(), OciError> {
        let refused = |message: String| OciError::Lock {
            path: self.path.clone(),
            message,
        };
        if self.exists || std::fs::symlink_metadata(&self.path).is_ok() {
            Self::read(&self.path)?;
        }
        let text = LockText {
            version: 1,
            artifact: self.entries.values().cloned().collect(),
        };
        let body = toml::to_string(&text).map_err(|e| refused(e.to_string()))?;
        let contents = format!("{HEADER}\n# Each oci:// plugin of the deployment and the exact bytes it runs.\n\n{body}");
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "host.lock".into());
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let written = (|| -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            file.write_all(contents.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, &self.path)?;
            if let Ok(dir) = std::fs::File::open(dir) {
                let _ = dir.sync_all();
            }
            Ok(())
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(refused(format!("cannot write it: {e}")));
        }
        self.exists = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(reference: &str, n: char) -> LockedArtifact {
        LockedArtifact {
            reference: reference.into(),
            manifest: format!("sha256:{}", n.to_string().repeat(64)),
            component: format!("sha256:{}", "e".repeat(64)),
            size: 42,
        }
    }

    #[test]
    fn a_written_lock_reads_back_and_a_foreign_file_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path_for(&dir.path().join("host.toml"));
        assert_eq!(path.file_name().unwrap(), "host.lock");
        let mut lock = LockFile::read(&path).unwrap();
        lock.insert(entry("oci://localhost:5000/a:1", 'a'));
        lock.write().unwrap();
        let again = LockFile::read(&path).unwrap();
        assert_eq!(
            again.get("oci://localhost:5000/a:1"),
            Some(&entry("oci://localhost:5000/a:1", 'a'))
        );

        std::fs::write(&path, "version = 1\n").unwrap();
        let err = LockFile::read(&path).unwrap_err().to_string();
        assert!(
            err.contains("not a lock file written by prompt-host"),
            "{err}"
        );
        let mut stale = again.clone();
        stale.insert(entry("oci://localhost:5000/b:1", 'b'));
        assert!(stale.write().is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "version = 1\n");
    }
}
