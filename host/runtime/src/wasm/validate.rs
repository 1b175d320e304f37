//! Telling a bad plugin file apart: not WebAssembly, a core module, truncated or malformed,
//! another WIT version, or another world. Messages say which.

use wasmtime::component::Component;
use wasmtime::Engine;

use super::error::WasmError;
use super::runtime::{WitVersion, World};

/// The package every import and export of ours belongs to.
const PACKAGE: &str = "prompt-host:plugin/";

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

/// `name` without its `@version`, and the version.
fn split_version(name: &str) -> (&str, Option<&str>) {
    match name.rsplit_once('@') {
        Some((base, v)) => (base, Some(v)),
        None => (name, None),
    }
}

/// Which of our worlds `component` implements, and against which contract version, from
/// its import and export names: the version of its `contributor` export decides; every
/// `prompt-host:plugin` name must carry a version this host implements.
pub(crate) fn world(
    plugin: &str,
    engine: &Engine,
    component: &Component,
) -> Result<(World, WitVersion), WasmError> {
    let ty = component.component_type();
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
    let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    for name in imports.iter().chain(&exports) {
        if let (base, Some(v)) = split_version(name) {
            if base.starts_with(PACKAGE) && WitVersion::parse(v).is_none() {
                return Err(WasmError::WitVersion {
                    plugin: plugin.to_string(),
                    found: name.clone(),
                });
            }
        }
    }
    let contributor = exports.iter().find_map(|e| match split_version(e) {
        (base, Some(v)) if base == format!("{PACKAGE}contributor") => WitVersion::parse(v),
        _ => None,
    });
    let Some(version) = contributor else {
        return Err(WasmError::WrongWorld {
            plugin: plugin.to_string(),
            reason: format!(
                "it does not export {PACKAGE}contributor@0.1.0 or @0.2.0 (exports: {})",
                list(&exports)
            ),
        });
    };
    let instructions = exports
        .iter()
        .any(|e| e == &format!("{PACKAGE}instructions@0.1.0"));
    Ok((
        if instructions {
            World::InstructionProvider
        } else {
            World::Plugin
        },
        version,
    ))
}

/// Classify a failure to link (imports the host does not provide, mismatched types).
pub(crate) fn link_error(plugin: &str, e: &wasmtime::Error) -> WasmError {
    WasmError::WrongWorld {
        plugin: plugin.to_string(),
        reason: format!("{e:#}"),
    }
}

/// Refuse a name a plugin declares (section, context, tool, listener or tool-provider key)
/// that holds a control character or a bidirectional-text control. Names appear in error
/// messages, logs and the command line's human output, where such characters could forge
/// lines or escape sequences, or display reordered text. The message shows the name escaped.
pub(crate) fn declared_name(what: &str, name: &str) -> Result<(), String> {
    match name.chars().find(|&c| super::untrusted::is_unsafe_char(c)) {
        None => Ok(()),
        Some(c) => Err(format!(
            "{what} name {name:?} contains the control character U+{:04X}; names may not hold \
             control characters or bidirectional-text controls",
            u32::from(c)
        )),
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
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

    #[test]
    fn declared_names_refuse_control_and_bidi_characters() {
        for ok in [
            "a",
            "tool-guide:rules",
            "\u{fffd}\u{feff}",
            "\u{10ffff}",
            "e\u{301}",
        ] {
            assert!(declared_name("section", ok).is_ok(), "{ok:?}");
        }
        for bad in [
            "a\0",
            "a\nb",
            "\u{1b}[2J",
            "\u{7f}",
            "\u{85}",
            "\u{202e}x",
            "\u{2066}",
        ] {
            let err = declared_name("tool", bad).unwrap_err();
            assert!(err.starts_with("tool name \""), "{err}");
            assert!(!err.chars().any(char::is_control), "{err:?}");
        }
        assert_eq!(
            declared_name("section", "a\nb").unwrap_err(),
            "section name \"a\\nb\" contains the control character U+000A; names may not hold \
             control characters or bidirectional-text controls"
        );
    }
}
