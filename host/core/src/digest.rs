//! Digests: the lower-case hex sha256 that names a component file (the compile cache's key,
//! an OCI blob's digest) and the check of an operator's pin against it, in one place.

use sha2::{Digest, Sha256};

/// sha256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha256(bytes))
}

/// Whether the hex digest `actual` is the pinned `expected` (hex, any case, surrounding
/// space ignored).
pub fn pin_matches(expected: &str, actual: &str) -> bool {
    actual.eq_ignore_ascii_case(expected.trim())
}
