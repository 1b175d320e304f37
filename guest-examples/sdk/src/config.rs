//! Reading the plugin's configuration: host.toml's `config` table, handed to `init` as JSON.

use crate::Error;

/// Parse the config text the host passed to `init`. Empty text counts as `{}` so a host that
/// passes nothing still gives the plugin an object to read.
pub(crate) fn parse_text(text: &str) -> Result<serde_json::Value, Error> {
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text)
        .map_err(|e| Error::invalid_input(format!("config is not valid JSON: {e}")))
}

/// Deserialize the config into a plugin's own type (derive `serde::Deserialize`, ideally with
/// `#[serde(deny_unknown_fields)]` so a typo is reported rather than ignored). A mismatch is
/// the operator's mistake, so it becomes `invalid-input` with serde's explanation.
pub fn parse<T: serde::de::DeserializeOwned>(config: serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(config).map_err(|e| Error::invalid_input(format!("invalid config: {e}")))
}
