//! What host.toml asks for that this build of prompt-host was compiled without (a crate
//! feature turned off): refused with the entry's name and the feature, so that a
//! deployment never runs without a server, a plugin or a budget it declared.

use crate::feature::Feature;

/// The first `[[mcp]]` entry, or `[host] mcp_provider`, as `(key, message)`.
#[cfg(not(feature = "mcp"))]
pub(super) fn mcp(
    entries: &[toml::Table],
    host: &super::HostSettings,
) -> Result<(), (String, String)> {
    if let Some((i, entry)) = entries.iter().enumerate().next() {
        let key = match entry.get("name").and_then(toml::Value::as_str) {
            Some(name) => format!("[[mcp]] {name:?}"),
            None => format!("mcp[{i}]"),
        };
        return Err((key, Feature::Mcp.to_string()));
    }
    if host.mcp_provider.is_some() {
        return Err(("host.mcp_provider".into(), Feature::Mcp.to_string()));
    }
    Ok(())
}

/// A `[host.registry]` table with any key set: settings for registries this build cannot
/// reach.
#[cfg(not(feature = "oci"))]
pub(super) fn registry(registry: &super::RegistryConfig) -> Result<(), (String, String)> {
    if *registry != super::RegistryConfig::default() {
        return Err(("host.registry".into(), Feature::Oci.to_string()));
    }
    Ok(())
}

/// Plugin `index`, when its `wasm` is an `oci://` reference (which would otherwise be read
/// as a file path and fail as a missing file, hiding the reason).
#[cfg(not(feature = "oci"))]
pub(super) fn oci_plugin(
    index: usize,
    plugin: &super::PluginConfig,
) -> Result<(), (String, String)> {
    match plugin.wasm.to_str() {
        Some(text) if text.starts_with("oci://") => Err((
            format!("plugin[{index}].wasm"),
            format!("plugin {:?} ({text:?}): {}", plugin.name, Feature::Oci),
        )),
        _ => Ok(()),
    }
}

/// The first `[prompt]` setting that needs token counts, as its key and value (written
/// as a string literal, escaped): `[prompt] tokenizer`, `max_prompt_tokens` or
/// `max_context_tokens`. Used for host.toml and for a [`crate::Host`] made in memory.
#[cfg(not(feature = "tokens"))]
pub(crate) fn token_setting(
    prompt: &crate::prompt::PromptConfig,
) -> Option<(&'static str, String)> {
    if let Some(spec) = &prompt.tokenizer {
        return Some(("prompt.tokenizer", format!("{spec:?}")));
    }
    [
        ("prompt.max_prompt_tokens", prompt.max_prompt_tokens),
        ("prompt.max_context_tokens", prompt.max_context_tokens),
    ]
    .into_iter()
    .find_map(|(key, value)| value.map(|value| (key, value.to_string())))
}
