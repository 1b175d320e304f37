//! The limits tables in the docs are the defaults in code: `docs/host-toml.md`'s plugin
//! limits are `Limits::default()`, `docs/cli.md`'s serve limits are `ServeLimits::default()`
//! and the defaults `prompt-host serve --help` shows. A default changed in one place and not
//! the other fails here, and so does a limit added to the code and not to the table.

use std::collections::BTreeMap;
use std::path::Path;

use prompt_host::policy::Limits;
use prompt_host::serve::ServeLimits;
use serde_json::Value;

use super::cli_support::bin;

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
