//! The cache's keyed primitives: HMAC-SHA256 under the cache directory's secret, and files
//! and directories created private to this user.

use std::fs;
use std::path::Path;

use sha2::Sha256;

/// An HMAC-SHA256 keyed by `key` over the concatenated `parts`. A key shorter than
/// SHA-256's 64-byte block is zero-padded to it by HMAC's definition, so padding it here
/// gives the same MAC and makes keying infallible.
fn keyed_mac(key: &[u8; 32], parts: &[&[u8]]) -> hmac::Hmac<Sha256> {
    use hmac::digest::KeyInit;
    use hmac::Mac;
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new(&block.into());
    for part in parts {
        mac.update(part);
    }
    mac
}

/// HMAC-SHA256 of the concatenated `parts` under `key`.
pub(crate) fn hmac_sha256(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    use hmac::Mac;
    keyed_mac(key, parts).finalize().into_bytes().into()
}

/// Whether `tag` is the HMAC-SHA256 of `parts` under `key`, compared in constant time.
pub(crate) fn hmac_verifies(key: &[u8; 32], parts: &[&[u8]], tag: &[u8]) -> bool {
    use hmac::Mac;
    keyed_mac(key, parts).verify_slice(tag).is_ok()
}

/// Create `dir` (and missing parents) readable by this user only; an existing one is left
/// as it is (and judged by [`DiskCache::open`]).
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Open a new file at `path` for writing, private to this user, failing if one exists.
pub(crate) fn create_private_file(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}
