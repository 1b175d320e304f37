//! Digests of component files: their sha256 (the compile cache's key) and the optional pin
//! an operator sets on a plugin, checked in one place.

use sha2::{Digest, Sha256};

use super::error::WasmError;

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
pub(crate) fn pin_matches(expected: &str, actual: &str) -> bool {
    actual.eq_ignore_ascii_case(expected.trim())
}

/// Refuse code of digest `actual` (hex) for plugin `plugin` unless it is the pinned one.
pub(crate) fn check_pin(plugin: &str, pin: Option<&str>, actual: &str) -> Result<(), WasmError> {
    match pin {
        Some(expected) if !pin_matches(expected, actual) => Err(WasmError::PinMismatch {
            plugin: plugin.to_string(),
            expected: expected.to_string(),
            actual: actual.to_string(),
        }),
        _ => Ok(()),
    }
}
