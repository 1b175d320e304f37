//! The on-disk cache of compiled components.
//!
//! `Component::deserialize` runs native code from the bytes it is given, so only artifacts this
//! host wrote itself may reach it. Every file carries a trailer — magic, the wasm's sha256, the
//! engine fingerprint and an HMAC-SHA256 over all of it and the artifact, keyed by a random
//! secret kept in the cache directory (mode 0600) — and is ignored (and replaced) unless the
//! trailer verifies. The file name also carries the fingerprint, so a different wasmtime,
//! target, configuration or file layout simply misses.
//!
//! The trailer comes after the artifact, not before it, so that the artifact starts the file:
//! its code then runs from the file's own pages (see [`in_place`]).
//!
//! Checking that HMAC means reading and hashing the whole artifact, and finding the artifact
//! means hashing the whole component file: most of a warm start. So once a file has been
//! hashed or verified, the cache records its identity (see [`identity`]), and a later start
//! that finds the file unchanged skips both hashes.

mod atomic;
mod identity;
mod in_place;
mod keyed;
mod mapped;

use std::fs::{self, Metadata};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::digest::{hex, sha256};
pub(crate) use keyed::{hmac_sha256, hmac_verifies};
use prompt_host_core::fsutil::create_private_dir;

use super::error::WasmError;
pub(crate) use identity::FileIdentity;
use identity::IdentityRecord;
pub(crate) use in_place::Placement;
use mapped::Mapped;

/// The trailer's magic; its last byte is the file layout's version (1 had a header instead).
const MAGIC: &[u8; 8] = b"PHCWASM\x02";
const TRAILER_LEN: usize = 8 + 32 + 32 + 32;
const KEY_FILE: &str = "cache-key";

/// The default cache directory, always one of this user's own: `$XDG_CACHE_HOME/prompt-host`,
/// else `~/.cache/prompt-host` (`HOME`, or the home directory the password database gives
/// when `HOME` is unset), else `prompt-host-cache-<uid>` under the system temp dir — which
/// the cache uses only if this user created it.
pub fn default_cache_dir() -> PathBuf {
    // A relative XDG_CACHE_HOME is to be ignored (XDG Base Directory specification).
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
    {
        return dir.join("prompt-host");
    }
    if let Some(home) = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(home_of_this_user)
    {
        return home.join(".cache").join("prompt-host");
    }
    std::env::temp_dir().join(format!("prompt-host-cache-{}", user_id()))
}

/// This user's home directory from the password database.
#[cfg(unix)]
fn home_of_this_user() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buffer = vec![0u8; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, and the buffer outlives the use of the
    // strings it ends up holding.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut entry,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: pw_dir points into `buffer`, NUL-terminated, as getpwuid_r promises.
    let dir = unsafe { CStr::from_ptr(entry.pw_dir) };
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes()));
    dir.is_absolute().then_some(dir)
}

#[cfg(not(unix))]
fn home_of_this_user() -> Option<PathBuf> {
    None
}

#[cfg(unix)]
fn user_id() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(not(unix))]
fn user_id() -> u32 {
    0
}

/// Feeds `Hash` output into sha256, so the engine fingerprint is stable across processes
/// (std's `DefaultHasher` is not promised to be).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        let d = self.0.clone().finalize();
        u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// A fingerprint of everything that makes compiled code compatible: wasmtime's own
/// compatibility hash (target, flags, tunables, features, wasmtime version) plus this crate's
/// version and the cache file's layout (its magic), so a file of another layout is not found
/// rather than found and removed.
pub(crate) fn engine_fingerprint(engine: &wasmtime::Engine) -> [u8; 32] {
    let mut h = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    env!("CARGO_PKG_VERSION").hash(&mut h);
    MAGIC.hash(&mut h);
    h.0.finalize().into()
}

/// The compiled-code cache directory of one runtime.
#[derive(Debug)]
pub(crate) struct DiskCache {
    dir: PathBuf,
    key: [u8; 32],
    fingerprint: [u8; 32],
}

/// A verified cache file: the serialized component, then the trailer, mapped (see
/// [`mapped`]), with the descriptor that was checked. [`Artifact::component`] makes the
/// component; drop the artifact then.
pub(crate) struct Artifact {
    file: Mapped,
    descriptor: fs::File,
}

/// The parts of a cache file's trailer.
struct Trailer<'a> {
    magic: &'a [u8],
    wasm_sha: &'a [u8],
    fingerprint: &'a [u8],
    tag: &'a [u8],
}

impl<'a> Trailer<'a> {
    /// A cache file's artifact and trailer; `None` when it is shorter than a trailer.
    fn split(bytes: &'a [u8]) -> Option<(&'a [u8], Self)> {
        let (artifact, trailer) = bytes.split_at(bytes.len().checked_sub(TRAILER_LEN)?);
        let (magic, rest) = trailer.split_at(8);
        let (wasm_sha, rest) = rest.split_at(32);
        let (fingerprint, tag) = rest.split_at(32);
        Some((
            artifact,
            Self {
                magic,
                wasm_sha,
                fingerprint,
                tag,
            },
        ))
    }
}

impl Artifact {
    /// The serialized component.
    pub(crate) fn code(&self) -> &[u8] {
        let bytes = self.file.bytes();
        &bytes[..bytes.len().saturating_sub(TRAILER_LEN)]
    }

    /// The component, its code run from the file where it can be (see [`in_place`]), and
    /// where it runs from.
    ///
    /// # Safety
    ///
    /// The artifact must be output of `Component::serialize` on an engine compatible with
    /// `engine`: [`DiskCache::load`] checked that it is this host's, for this engine.
    pub(crate) unsafe fn component(
        &self,
        engine: &wasmtime::Engine,
    ) -> wasmtime::Result<(wasmtime::component::Component, Placement)> {
        // SAFETY: as the caller promises; `descriptor` is the file `code` was read from.
        unsafe { in_place::component(engine, &self.descriptor, self.code()) }
    }
}

impl DiskCache {
    /// Open (creating if needed, private to this user) the cache at `dir` for code compiled
    /// by `engine`. Refused when the directory or its key belongs to another user, or others
    /// may write into the directory or read the key: whoever can plant a file there, with a
    /// valid HMAC, chooses native code this host runs. The caller then runs without a cache.
    pub(crate) fn open(dir: &Path, engine: &wasmtime::Engine) -> Result<Self, WasmError> {
        let err = |message: String| WasmError::Cache {
            path: dir.to_path_buf(),
            message,
        };
        create_private_dir(dir).map_err(|e| err(format!("cannot create it: {e}")))?;
        let handle =
            crate::fsutil::open_dir(dir).map_err(|e| err(format!("cannot open it: {e}")))?;
        let metadata = handle
            .metadata()
            .map_err(|e| err(format!("cannot read its metadata: {e}")))?;
        crate::fsutil::check_private(&metadata, crate::fsutil::Others::MayRead)
            .map_err(|why| err(format!("not used: {why}")))?;
        let key = load_or_create_key(&dir.join(KEY_FILE)).map_err(err)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            key,
            fingerprint: engine_fingerprint(engine),
        })
    }

    /// Where the artifact of the wasm with digest `wasm_sha` lives.
    pub(crate) fn path_for(&self, wasm_sha: &[u8; 32]) -> PathBuf {
        let fp = hex(&self.fingerprint);
        self.dir
            .join(format!("{}-{}.cwasm", hex(wasm_sha), &fp[..16]))
    }

    /// The verified artifact for `wasm_sha`, or `None` (missing, foreign or corrupt files are
    /// removed so the next store replaces them). The HMAC over the artifact is skipped when
    /// the file is the one verified before (its identity is on record).
    pub(crate) fn load(&self, wasm_sha: &[u8; 32]) -> Option<Artifact> {
        let path = self.path_for(wasm_sha);
        let (mut file, metadata) =
            crate::fsutil::open_regular(&path, fs::OpenOptions::new().read(true)).ok()?;
        let identity = FileIdentity::of(&metadata);
        let name = path.file_name()?.as_encoded_bytes().to_vec();
        let record = IdentityRecord {
            key: &self.key,
            subject: &name,
        };
        let record_path = path.with_extension("cwasm.id");
        let known = identity.and_then(|id| record.read(&record_path, id)) == Some(*wasm_sha);
        // Map the descriptor whose identity was just taken: a file swapped in after that
        // check is never the one read.
        let mapped = Mapped::of(&mut file, metadata.len()).ok()?;
        let verified = self.verifies(wasm_sha, mapped.bytes(), !known);
        if !verified {
            log::warn!(
                "compiled-code cache: ignoring {} (trailer does not verify)",
                path.display()
            );
            let _ = fs::remove_file(&path);
            let _ = fs::remove_file(&record_path);
            return None;
        }
        if let (false, Some(identity)) = (known, identity) {
            if let Err(e) = record.write(&record_path, identity, wasm_sha) {
                log::debug!("compiled-code cache: cannot record {}: {e}", path.display());
            }
        }
        Some(Artifact {
            file: mapped,
            descriptor: file,
        })
    }

    /// The sha256 of the component file at `path` (described by `metadata`) when it is the
    /// file hashed before: its identity is on record.
    pub(crate) fn known_source(&self, path: &Path, metadata: &Metadata) -> Option<[u8; 32]> {
        let identity = FileIdentity::of(metadata)?;
        let subject = path.as_os_str().as_encoded_bytes();
        IdentityRecord {
            key: &self.key,
            subject,
        }
        .read(&self.source_record(path), identity)
    }

    /// Record that the component file at `path`, of identity `identity`, has sha256 `sha`.
    pub(crate) fn remember_source(&self, path: &Path, identity: FileIdentity, sha: &[u8; 32]) {
        let subject = path.as_os_str().as_encoded_bytes();
        let record = IdentityRecord {
            key: &self.key,
            subject,
        };
        if let Err(e) = record.write(&self.source_record(path), identity, sha) {
            log::debug!("compiled-code cache: cannot record {}: {e}", path.display());
        }
    }

    /// Where the identity of the component file at `path` is recorded.
    fn source_record(&self, path: &Path) -> PathBuf {
        let digest = sha256(path.as_os_str().as_encoded_bytes());
        self.dir.join(format!("src-{}.id", hex(&digest[..16])))
    }

    /// Whether `bytes` is this cache's artifact for `wasm_sha`: the trailer's magic, wasm
    /// digest and engine fingerprint, and with `check_hmac` its HMAC over all of them and the
    /// artifact (skipped for a file whose identity is on record).
    fn verifies(&self, wasm_sha: &[u8; 32], bytes: &[u8], check_hmac: bool) -> bool {
        let Some((artifact, t)) = Trailer::split(bytes) else {
            return false;
        };
        t.magic == MAGIC
            && t.wasm_sha == wasm_sha
            && t.fingerprint == self.fingerprint
            && (!check_hmac
                || hmac_verifies(
                    &self.key,
                    &[t.magic, t.wasm_sha, t.fingerprint, artifact],
                    t.tag,
                ))
    }

    /// Store `artifact` for `wasm_sha`, atomically (temp file + rename).
    pub(crate) fn store(&self, wasm_sha: &[u8; 32], artifact: &[u8]) -> std::io::Result<()> {
        let tag = hmac_sha256(&self.key, &[MAGIC, wasm_sha, &self.fingerprint, artifact]);
        let path = self.path_for(wasm_sha);
        atomic::replace_file(&path, atomic::Durability::Synced, |f| {
            f.write_all(artifact)?;
            f.write_all(MAGIC)?;
            f.write_all(wasm_sha)?;
            f.write_all(&self.fingerprint)?;
            f.write_all(&tag)
        })
    }
}

/// The cache's secret key: read (a regular file of this user's that nobody else may read,
/// opened without blocking) or, when there is none, created.
fn load_or_create_key(path: &Path) -> Result<[u8; 32], String> {
    match read_key(path) {
        Ok(Some(key)) => return Ok(key),
        Ok(None) => {}
        Err(why) => return Err(format!("key {}: {why}; not used", path.display())),
    }
    let key = random_key();
    // Two processes racing here: whichever rename lands last wins; re-read so both agree
    // (the loser's artifacts then fail to verify once and are rebuilt).
    let written = atomic::replace_file(path, atomic::Durability::Synced, |f| f.write_all(&key));
    written.map_err(|e| format!("cannot create the key {}: {e}", path.display()))?;
    match read_key(path) {
        Ok(Some(key)) => Ok(key),
        Ok(None) => Err(format!("key {}: has the wrong length", path.display())),
        Err(why) => Err(format!("key {}: {why}; not used", path.display())),
    }
}

/// The key at `path`: `None` when there is none (or a truncated one of ours, replaced), an
/// error when the file is not one this host may trust.
fn read_key(path: &Path) -> Result<Option<[u8; 32]>, String> {
    let (mut file, metadata) =
        match crate::fsutil::open_regular(path, fs::OpenOptions::new().read(true)) {
            Ok(opened) => opened,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
    crate::fsutil::check_private(&metadata, crate::fsutil::Others::Nothing)?;
    if metadata.len() != 32 {
        return Ok(None);
    }
    let mut key = [0u8; 32];
    std::io::Read::read_exact(&mut file, &mut key).map_err(|e| e.to_string())?;
    Ok(Some(key))
}

fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    if let Ok(mut f) = fs::File::open("/dev/urandom") {
        use std::io::Read;
        if f.read_exact(&mut key).is_ok() {
            return key;
        }
    }
    // No OS randomness: derive from what differs between runs; still keyed per directory.
    let mut h = Sha256::new();
    h.update(format!(
        "{:?}{}{:p}",
        std::time::SystemTime::now(),
        std::process::id(),
        &key
    ));
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> wasmtime::Engine {
        wasmtime::Engine::default()
    }

    #[test]
    fn round_trip_and_tamper() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(dir.path(), &engine()).unwrap();
        let sha = sha256(b"wasm");
        assert!(cache.load(&sha).is_none());
        cache.store(&sha, b"artifact").unwrap();
        assert_eq!(cache.load(&sha).unwrap().code(), b"artifact");

        // A second handle on the same directory (another process) reads the same key.
        let again = DiskCache::open(dir.path(), &engine()).unwrap();
        assert_eq!(again.load(&sha).unwrap().code(), b"artifact");

        // The artifact starts the file (its code can run from the file's pages), and the
        // trailer follows it.
        let path = cache.path_for(&sha);
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len(), b"artifact".len() + TRAILER_LEN);
        assert!(bytes.starts_with(b"artifact"));
        assert_eq!(&bytes[8..16], MAGIC);

        // Flip one byte of the artifact, then of each part of the trailer: refused and
        // removed each time.
        for at in [0, 7, 8, 16, 48, 80, bytes.len() - 1] {
            cache.store(&sha, b"artifact").unwrap();
            let fresh = DiskCache::open(dir.path(), &engine()).unwrap();
            let mut tampered = bytes.clone();
            tampered[at] ^= 1;
            fs::write(&path, &tampered).unwrap();
            assert!(fresh.load(&sha).is_none(), "byte {at} flipped");
            assert!(!path.exists(), "byte {at} flipped");
        }

        // Shorter than a trailer: refused.
        fs::write(&path, &bytes[..TRAILER_LEN - 1]).unwrap();
        assert!(cache.load(&sha).is_none());
    }

    #[test]
    fn the_layout_is_part_of_the_file_name() {
        // A file of the earlier layout (header first) is under another name: it is not
        // found, rather than found and removed by a host of either layout.
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::open(dir.path(), &engine()).unwrap();
        let mut h = ShaHasher(Sha256::new());
        engine().precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        let earlier: [u8; 32] = h.0.finalize().into();
        assert_ne!(cache.fingerprint, earlier);
    }

    #[test]
    fn foreign_key_refused() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let ca = DiskCache::open(a.path(), &engine()).unwrap();
        let cb = DiskCache::open(b.path(), &engine()).unwrap();
        let sha = sha256(b"x");
        ca.store(&sha, b"code").unwrap();
        // Copy a's file into b: b's key differs, so it must not verify.
        fs::copy(ca.path_for(&sha), cb.path_for(&sha)).unwrap();
        assert!(cb.load(&sha).is_none());
    }

    #[test]
    fn hmac_known_vector() {
        // RFC 4231 is for arbitrary key lengths; check the construction against a 32-byte key
        // computed independently (python: hmac.new(bytes(range(32)), b"abc", sha256)).
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        assert_eq!(
            hex(&hmac_sha256(&key, &[b"a", b"bc"])),
            "f0133729c4163dede81e21cd47839256da58171238c8a0d874397c73b14e1e47"
        );
    }
}
