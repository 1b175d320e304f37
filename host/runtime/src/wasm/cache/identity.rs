//! File identities: knowing that a file is the one read (and hashed) before, without reading
//! it again.
//!
//! A warm start used to read every component file to hash it (the cache key) and every
//! compiled artifact to check its HMAC: megabytes through SHA-256 before the first plugin
//! could run, most of a warm start. A file's identity — device, inode, size, modification
//! and status-change times — changes whenever its contents can have: a write moves the
//! status-change time (`ctime`, which only the kernel sets), a replacement is another inode.
//! The cache records the identity a file had when it was hashed or verified, in a small
//! record under the cache key's HMAC, and a later start that finds the same identity skips
//! the read and the hash.
//!
//! A write in the same clock tick as the recording could leave the identity unchanged (a
//! coarse-timestamp file system), so a file modified in the last [`SETTLE`] is never
//! recorded: it is hashed again next time, until it has settled.

use std::fs::Metadata;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::keyed::{hmac_sha256, hmac_verifies};

/// How long a file must have gone unmodified before its identity is recorded.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

const MAGIC: &[u8; 8] = b"PHCID\x00\x00\x01";
const IDENTITY_LEN: usize = 8 * 3 + 16 * 2;
const RECORD_LEN: usize = MAGIC.len() + IDENTITY_LEN + 32 + 32;

/// What identifies one version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileIdentity {
    /// The identity `metadata` describes (`None` where the platform has no inode numbers
    /// and status-change times: every file is then read and hashed, as before).
    pub(crate) fn of(metadata: &Metadata) -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
            Some(Self {
                dev: metadata.dev(),
                ino: metadata.ino(),
                size: metadata.len(),
                mtime_ns: ns(metadata.mtime(), metadata.mtime_nsec()),
                ctime_ns: ns(metadata.ctime(), metadata.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            None
        }
    }

    /// Whether the file has gone unmodified for [`SETTLE`] as of `now`.
    pub(crate) fn settled(&self, now: SystemTime) -> bool {
        let now = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let changed = self.mtime_ns.max(self.ctime_ns);
        now - changed >= SETTLE.as_nanos() as i128
    }

    fn to_bytes(self) -> [u8; IDENTITY_LEN] {
        let mut out = [0u8; IDENTITY_LEN];
        out[..8].copy_from_slice(&self.dev.to_le_bytes());
        out[8..16].copy_from_slice(&self.ino.to_le_bytes());
        out[16..24].copy_from_slice(&self.size.to_le_bytes());
        out[24..40].copy_from_slice(&self.mtime_ns.to_le_bytes());
        out[40..56].copy_from_slice(&self.ctime_ns.to_le_bytes());
        out
    }
}

/// A record saying "the file `subject` with this identity has this 32-byte digest", under an
/// HMAC keyed by the cache's secret: a record cannot be forged, nor moved to another subject.
pub(crate) struct IdentityRecord<'a> {
    /// The cache directory's secret key.
    pub(crate) key: &'a [u8; 32],
    /// What the record is about (a component's path, an artifact's file name).
    pub(crate) subject: &'a [u8],
}

impl IdentityRecord<'_> {
    fn tag(&self, identity: &[u8], digest: &[u8; 32]) -> [u8; 32] {
        hmac_sha256(self.key, &[MAGIC, self.subject, identity, digest])
    }

    /// The digest recorded at `record` for a file whose identity is now `now`, if the record
    /// verifies and the identity is the recorded one.
    pub(crate) fn read(&self, record: &Path, now: FileIdentity) -> Option<[u8; 32]> {
        // Never blocks, and reads no more than a record holds.
        let bytes = crate::fsutil::read_regular(record, RECORD_LEN as u64).ok()?;
        if bytes.len() != RECORD_LEN || &bytes[..MAGIC.len()] != MAGIC {
            return None;
        }
        let (identity, rest) = bytes[MAGIC.len()..].split_at(IDENTITY_LEN);
        let (digest, tag) = rest.split_at(32);
        let digest: [u8; 32] = digest.try_into().ok()?;
        if identity != now.to_bytes() {
            return None;
        }
        let same = hmac_verifies(self.key, &[MAGIC, self.subject, identity, &digest], tag);
        same.then_some(digest)
    }

    /// Record `digest` for a file of identity `identity` at `record` (atomically), unless the
    /// file changed too recently to be told apart from a write in the same tick.
    pub(crate) fn write(
        &self,
        record: &Path,
        identity: FileIdentity,
        digest: &[u8; 32],
    ) -> std::io::Result<()> {
        if !identity.settled(SystemTime::now()) {
            return Ok(());
        }
        let identity = identity.to_bytes();
        let tag = self.tag(&identity, digest);
        super::atomic::replace_file(record, super::atomic::Durability::Unsynced, |f| {
            f.write_all(MAGIC)?;
            f.write_all(&identity)?;
            f.write_all(digest)?;
            f.write_all(&tag)
        })
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::fs;

    fn identity(path: &Path) -> FileIdentity {
        FileIdentity::of(&fs::metadata(path).unwrap()).unwrap()
    }

    /// Set a file's modification time into the past, so its identity settles (the
    /// status-change time cannot be set, so the tests also wait for it where needed).
    fn age(path: &Path) {
        let past = SystemTime::now() - Duration::from_secs(60);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(past)
            .unwrap();
    }

    #[test]
    fn a_fresh_file_is_not_recorded_and_a_settled_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.wasm");
        fs::write(&file, b"one").unwrap();
        let key = [7u8; 32];
        let record = IdentityRecord {
            key: &key,
            subject: b"a.wasm",
        };
        let at = dir.path().join("a.id");
        record.write(&at, identity(&file), &[1; 32]).unwrap();
        assert!(!at.exists(), "a file changed just now is not recorded");
        age(&file);
        // The status-change time moved with `set_modified`: pretend two seconds passed.
        let mut id = identity(&file);
        id.ctime_ns -= 3_000_000_000;
        record.write(&at, id, &[1; 32]).unwrap();
        assert_eq!(record.read(&at, id), Some([1; 32]));
        // Another identity, another subject or another key: no digest.
        let mut other = id;
        other.size += 1;
        assert_eq!(record.read(&at, other), None);
        let moved = IdentityRecord {
            key: &key,
            subject: b"b.wasm",
        };
        assert_eq!(moved.read(&at, id), None);
        let foreign = IdentityRecord {
            key: &[8u8; 32],
            subject: b"a.wasm",
        };
        assert_eq!(foreign.read(&at, id), None);
        // A flipped byte in the record: refused.
        let mut bytes = fs::read(&at).unwrap();
        bytes[MAGIC.len() + IDENTITY_LEN] ^= 1;
        fs::write(&at, bytes).unwrap();
        assert_eq!(record.read(&at, id), None);
    }

    #[test]
    fn a_write_changes_the_identity() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.wasm");
        fs::write(&file, b"one").unwrap();
        let before = identity(&file);
        std::thread::sleep(Duration::from_millis(20));
        fs::write(&file, b"two").unwrap();
        assert_ne!(identity(&file), before);
        // Even with the modification time put back, the status-change time moved.
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(UNIX_EPOCH + Duration::from_nanos(before.mtime_ns as u64))
            .unwrap();
        let after = identity(&file);
        assert_eq!(after.mtime_ns, before.mtime_ns);
        assert_ne!(after, before);
    }
}
