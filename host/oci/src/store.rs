//! The content store: blobs pulled from registries, kept under the compile cache directory
//! (`<cache>/oci/sha256/<hex>`) by their digest, so a locked deployment starts offline.
//!
//! A blob is written only after its bytes hashed to its digest, and hashed again whenever it
//! is read: a file in the store that no longer matches is reported and removed, never
//! compiled. The directory is this user's own (created 0700, refused when another user owns
//! it or may write into it), like the compile cache beside it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::OciError;
use prompt_host_core::digest::sha256_hex;

/// The content store at `<cache_dir>/oci`.
#[derive(Debug, Clone)]
pub struct ContentStore {
    dir: PathBuf,
}

/// What reading a blob from the store found.
#[derive(Debug)]
pub enum Stored {
    /// The bytes, which hash to the digest asked for.
    Verified(Vec<u8>),
    /// Nothing under that digest.
    Missing,
    /// A file was there whose bytes hash to something else; it has been removed.
    Corrupt {
        /// What the bytes hashed to.
        actual: String,
    },
}

impl ContentStore {
    /// The store under the compile cache directory `cache_dir` (created, private, when
    /// missing).
    pub fn open(cache_dir: &Path) -> Result<Self, OciError> {
        let dir = cache_dir.join("oci").join("sha256");
        let refused = |message: String| OciError::Store {
            path: dir.clone(),
            message,
        };
        for d in [cache_dir.to_path_buf(), cache_dir.join("oci"), dir.clone()] {
            prompt_host_core::fsutil::create_private_dir(&d)
                .map_err(|e| refused(format!("cannot create it: {e}")))?;
            let handle = prompt_host_core::fsutil::open_dir(&d)
                .map_err(|e| refused(format!("cannot open {}: {e}", d.display())))?;
            let metadata = handle.metadata().map_err(|e| {
                refused(format!("cannot read the metadata of {}: {e}", d.display()))
            })?;
            prompt_host_core::fsutil::check_private(
                &metadata,
                prompt_host_core::fsutil::Others::MayRead,
            )
            .map_err(|why| refused(format!("not used: {} : {why}", d.display())))?;
        }
        Ok(Self { dir })
    }

    /// Where the blob `digest` (`sha256:…`) is kept.
    pub fn path_of(&self, digest: &str) -> PathBuf {
        self.dir
            .join(digest.strip_prefix("sha256:").unwrap_or(digest))
    }

    /// The blob `digest`, read (at most `max_bytes`) and hashed.
    pub fn read(&self, digest: &str, max_bytes: u64) -> Result<Stored, OciError> {
        let path = self.path_of(digest);
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(Stored::Missing);
        }
        let bytes = prompt_host_core::fsutil::read_regular(&path, max_bytes).map_err(|e| {
            OciError::Store {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
        let actual = format!("sha256:{}", sha256_hex(&bytes));
        if actual != digest {
            let _ = std::fs::remove_file(&path);
            return Ok(Stored::Corrupt { actual });
        }
        Ok(Stored::Verified(bytes))
    }

    /// Keep `bytes` as blob `digest`, after checking they hash to it. Written to a private
    /// temporary file, flushed, then renamed into place.
    pub fn put(&self, digest: &str, bytes: &[u8]) -> Result<PathBuf, OciError> {
        let actual = format!("sha256:{}", sha256_hex(bytes));
        if actual != digest {
            return Err(OciError::Digest {
                what: format!("blob {digest}"),
                expected: digest.to_string(),
                actual,
            });
        }
        let path = self.path_of(digest);
        // Named per write, not per process: two loads of one reference in one `serve` write
        // the same blob at once, and a name shared between them let one remove or rename
        // the other's file mid-write.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let temp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            digest.strip_prefix("sha256:").unwrap_or(digest),
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| -> std::io::Result<()> {
            // A file of this name can only be left by a dead process that had this id.
            let _ = std::fs::remove_file(&temp);
            let mut file = prompt_host_core::fsutil::create_private_file(&temp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, &path)
        })();
        written.map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            OciError::Store {
                path: path.clone(),
                message: format!("cannot write it: {e}"),
            }
        })?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_kept_by_digest_and_a_changed_one_is_removed_not_returned() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContentStore::open(dir.path()).unwrap();
        let digest = format!("sha256:{}", sha256_hex(b"component"));
        assert!(matches!(store.read(&digest, 100).unwrap(), Stored::Missing));
        let wrong = store.put(&digest, b"other").unwrap_err().to_string();
        assert!(wrong.contains("hash"), "{wrong}");
        let path = store.put(&digest, b"component").unwrap();
        assert!(
            matches!(store.read(&digest, 100).unwrap(), Stored::Verified(b) if b == b"component")
        );
        std::fs::write(&path, b"tampered").unwrap();
        assert!(matches!(
            store.read(&digest, 100).unwrap(),
            Stored::Corrupt { .. }
        ));
        assert!(!path.exists());
    }

    #[test]
    fn one_blob_written_by_many_threads_at_once_is_stored_by_each() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContentStore::open(dir.path()).unwrap();
        let bytes = vec![7u8; 256 << 10];
        let digest = format!("sha256:{}", sha256_hex(&bytes));
        let outcomes: Vec<Result<PathBuf, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..32)
                .map(|_| scope.spawn(|| store.put(&digest, &bytes).map_err(|e| e.to_string())))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
                .collect()
        });
        for outcome in outcomes {
            assert_eq!(outcome, Ok(store.path_of(&digest)));
        }
        assert!(matches!(store.read(&digest, 1 << 20).unwrap(), Stored::Verified(b) if b == bytes));
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path().join("oci/sha256"))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
