//! Replacing a cache file atomically: the bytes go to a temporary file beside it, which is
//! renamed over the file once whole (and synced, where the file must survive a crash), so a
//! reader never sees part of a file.
//!
//! The temporary file is named per write (the process and a counter), not per process: two
//! threads of one process storing the same entry at once (plugins loaded side by side) would
//! otherwise write into one file and rename it from under each other. It is removed when
//! anything fails — a full disk, a file-size limit (`EFBIG`), a failed sync — so a failed
//! write leaves nothing behind in the cache directory.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use prompt_host_core::fsutil::create_private_file;

/// Whether the written file is synced to disk before it is renamed into place.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Synced: the file's contents must survive a crash once it is in place.
    Synced,
    /// Not synced: the file is a hint that is rebuilt when found torn.
    Unsynced,
}

/// Write `path` with what `write` puts in a new private file, atomically.
pub(crate) fn replace_file(
    path: &Path,
    durability: Durability,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = temporary_name(path);
    let written = (|| {
        let mut file = create_private_file(&tmp)?;
        write(&mut file)?;
        if durability == Durability::Synced {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // Nothing of a failed write stays: a full disk is not made fuller by leftovers.
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// `.<name>.<pid>.<n>.tmp` beside `path`: unique to this write.
fn temporary_name(path: &Path) -> PathBuf {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("entry");
        let failed = replace_file(&path, Durability::Synced, |file| {
            use std::io::Write;
            file.write_all(b"half")?;
            Err(io::Error::other("no space left on device"))
        });
        assert_eq!(
            failed.err().map(|e| e.to_string()),
            Some("no space left on device".to_owned())
        );
        let left: Vec<_> = fs::read_dir(dir.path()).expect("list").collect();
        assert!(left.is_empty(), "{left:?}");
        replace_file(&path, Durability::Unsynced, |file| {
            use std::io::Write;
            file.write_all(b"whole")
        })
        .expect("written");
        assert_eq!(fs::read(&path).expect("read"), b"whole");
        assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 1);
    }

    #[test]
    fn every_write_has_a_temporary_name_of_its_own() {
        let path = Path::new("/cache/abc");
        assert_ne!(temporary_name(path), temporary_name(path));
    }
}
