//! Telling a bad plugin file apart: not WebAssembly, a core module, truncated or malformed,
//! another WIT version, or another world. Messages say which.

use super::error::WasmError;

/// Check the 8-byte preamble: `\0asm` plus the component layer.
pub(crate) fn header(plugin: &str, wasm: &[u8]) -> Result<(), WasmError> {
    let not = |reason: &str| {
        Err(WasmError::NotAComponent {
            plugin: plugin.to_string(),
            reason: reason.to_string(),
        })
    };
    if wasm.len() < 8 {
        if wasm.starts_with(b"\0asm") || b"\0asm".starts_with(wasm) && !wasm.is_empty() {
            return Err(WasmError::Invalid {
                plugin: plugin.to_string(),
                reason: format!("truncated: only {} bytes", wasm.len()),
            });
        }
        return not("the file is too short to be WebAssembly");
    }
    if &wasm[..4] != b"\0asm" {
        return not("no WebAssembly magic number (\\0asm) at the start of the file");
    }
    match wasm[4..8] {
        [1, 0, 0, 0] => not(
            "this is a core WebAssembly module; build the plugin for wasm32-wasip2 (or wrap it \
             with `wasm-tools component new`) to get a component",
        ),
        [0x0d, 0, 1, 0] => Ok(()),
        _ => not("unknown WebAssembly version or layer"),
    }
}

/// Classify a compile failure of bytes that passed `header`.
pub(crate) fn compile_error(plugin: &str, _wasm: &[u8], e: &wasmtime::Error) -> WasmError {
    let mut reason = format!("{e:#}");
    if reason.contains("unexpected end") {
        reason = format!("truncated or cut short: {reason}");
    }
    WasmError::Invalid {
        plugin: plugin.to_string(),
        reason,
    }
}

/// Classify a failure to link (imports the host does not provide, mismatched types).
pub(crate) fn link_error(plugin: &str, e: &wasmtime::Error) -> WasmError {
    WasmError::WrongWorld {
        plugin: plugin.to_string(),
        reason: format!("{e:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        assert!(matches!(
            header("p", b""),
            Err(WasmError::NotAComponent { .. })
        ));
        assert!(matches!(
            header("p", b"hello world"),
            Err(WasmError::NotAComponent { .. })
        ));
        assert!(
            matches!(header("p", b"\0asm\x01\0\0\0"), Err(WasmError::NotAComponent { reason, .. }) if reason.contains("core WebAssembly module"))
        );
        assert!(matches!(
            header("p", b"\0asm"),
            Err(WasmError::Invalid { .. })
        ));
        assert!(header("p", b"\0asm\x0d\0\x01\0").is_ok());
    }
}
