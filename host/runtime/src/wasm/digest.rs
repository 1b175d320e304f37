//! Digests of component files: their sha256 (the compile cache's key) and the optional pin
//! an operator sets on a plugin, checked in one place.

use super::error::WasmError;

pub use prompt_host_core::digest::{hex, pin_matches, sha256, sha256_hex};

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
