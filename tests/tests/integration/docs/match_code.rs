//! The limits tables in the docs are the defaults in code: `docs/host-toml.md`'s plugin
//! limits are `Limits::default()`, `docs/cli.md`'s serve limits are `ServeLimits::default()`
//! and the defaults `prompt-host serve --help` shows. A default changed in one place and not
//! the other fails here, and so does a limit added to the code and not to the table.

use std::collections::BTreeMap;
use std::path::Path;

use prompt_host::policy::Limits;
use prompt_host_serve::ServeLimits;
use serde_json::Value;

use crate::integration::support::cli::bin;

/// The rows of the table between `<!-- limits-table:{name} -->` and `<!-- /limits-table -->`
/// in `doc`: first column (without backticks) → second column (without backticks).
fn table(doc: &str, name: &str) -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let open = format!("<!-- limits-table:{name} -->");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("{doc} has no {open}"));
    let body = &text[start + open.len()..];
    let body = &body[..body
        .find("<!-- /limits-table -->")
        .unwrap_or_else(|| panic!("{doc}: the {name} table is not closed"))];
    let mut rows = BTreeMap::new();
    for line in body.lines().map(str::trim).filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let (Some(key), Some(default)) = (cells.first(), cells.get(1)) else {
            continue;
        };
        let unquote = |s: &str| s.strip_prefix('`')?.strip_suffix('`').map(String::from);
        // The header row and the rule have no backticked key.
        if let (Some(key), Some(default)) = (unquote(key), unquote(default)) {
            let previous = rows.insert(key.clone(), default);
            assert!(
                previous.is_none(),
                "{doc}: {key} is in the {name} table twice"
            );
        }
    }
    assert!(!rows.is_empty(), "{doc}: the {name} table has no rows");
    rows
}

/// `value`'s fields as the table writes them: integers plainly, an absent option `none`.
fn as_written(value: Value) -> BTreeMap<String, String> {
    let Value::Object(fields) = value else {
        panic!("not a struct: {value}")
    };
    fields
        .into_iter()
        .map(|(k, v)| {
            let text = match v {
                Value::Null => "none".to_string(),
                other => other.to_string(),
            };
            (k, text)
        })
        .collect()
}

#[test]
fn the_plugin_limits_table_is_the_default_limits() {
    let documented = table("docs/host-toml.md", "plugin");
    let mut defaults = as_written(serde_json::to_value(Limits::default()).unwrap());
    // `fuel` is left out when unset; the table writes it `none`.
    defaults
        .entry("fuel".into())
        .or_insert_with(|| "none".into());
    assert_eq!(documented, defaults);
    // And the table is valid host.toml: read back, it is the defaults.
    let toml_text: String = documented
        .iter()
        .filter(|(_, v)| *v != "none")
        .map(|(k, v)| format!("{k} = {v}\n"))
        .collect();
    let parsed: Limits = toml::from_str(&toml_text).unwrap();
    assert_eq!(parsed, Limits::default());
}

#[test]
fn the_serve_limits_table_is_the_default_serve_limits_and_the_cli_defaults() {
    let documented = table("docs/cli.md", "serve");
    let defaults: BTreeMap<String, String> =
        as_written(serde_json::to_value(ServeLimits::default()).unwrap())
            .into_iter()
            .map(|(k, v)| (format!("--{}", k.replace('_', "-")), v))
            .collect();
    assert_eq!(documented, defaults);
    let help = std::process::Command::new(bin())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for (flag, default) in &documented {
        // clap prints `--flag <VALUE>` then the help text, ending `[default: N]`.
        let at = help
            .find(&format!("{flag} <"))
            .unwrap_or_else(|| panic!("serve --help has no {flag}:\n{help}"));
        let shown = help[at..]
            .split("[default: ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap_or_else(|| panic!("serve --help shows no default for {flag}"));
        assert_eq!(shown, default, "{flag}");
    }
}

/// The first `version = "…"` line of a TOML file, or the `"version": "…"` of a package.json.
fn declared_version(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.lines()
        .map(str::trim)
        .find_map(|l| {
            l.strip_prefix("version = \"")
                .or_else(|| l.strip_prefix("\"version\": \""))
                .and_then(|rest| rest.split('"').next())
        })
        .unwrap_or_else(|| panic!("{file} declares no version"))
        .to_string()
}

#[test]
fn the_compatibility_table_states_the_versions_the_code_declares() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/compatibility.md");
    let text = std::fs::read_to_string(path).unwrap();
    let row = |part: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(&format!("| {part}")))
            .unwrap_or_else(|| panic!("docs/compatibility.md has no row for {part}"))
            .split('|')
            .nth(2)
            .unwrap()
            .trim()
            .to_string()
    };
    let host = env!("CARGO_PKG_VERSION");
    assert!(row("prompt-host (").starts_with(host), "host {host}");
    let sdk = declared_version("guest-examples/sdk/Cargo.toml");
    assert!(row("Guest SDK").starts_with(&sdk), "SDK {sdk}");
    let protocol = prompt_host_serve::PROTOCOL_VERSION;
    assert!(
        row("`serve` protocol").starts_with(protocol),
        "protocol {protocol}"
    );
    let python = declared_version("clients/python/pyproject.toml");
    assert!(
        row("Python client").starts_with(&python),
        "Python client {python}"
    );
    let typescript = declared_version("clients/typescript/package.json");
    assert!(
        row("TypeScript client").starts_with(&typescript),
        "TypeScript client {typescript}"
    );
    let rust_version = declared_version_key("Cargo.toml", "rust-version");
    assert!(
        row("Rust").starts_with(&rust_version),
        "rust-version {rust_version}"
    );
    for version in prompt_host::wasm::WitVersion::ALL {
        assert!(
            row("Plugin contract").contains(&format!("prompt-host:plugin@{version}")),
            "contract {version}"
        );
    }
}

fn declared_version_key(file: &str, key: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(file);
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{file} has no {key}"))
        .to_string()
}
