//! The cache's keyed primitives: HMAC-SHA256 under the cache directory's secret (files and
//! directories private to this user are `prompt_host_core::fsutil`'s).

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
