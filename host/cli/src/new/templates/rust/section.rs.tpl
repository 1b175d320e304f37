//! `__NAME__`: a prompt-host plugin that contributes two system-prompt sections.
//!
//! * `__NAME__:rules` is **fixed**: `init` hands its text to the host, which stores it, so an
//!   assembly never calls into the plugin for it. The text may reference variables as
//!   `{{name}}`; `{{cwd}}` is a host variable filled from the caller's `cwd` fact
//!   (`prompt-host render --fact cwd=/work`), and rendering fails if it has no value.
//! * `__NAME__:scope` is **dynamic**: the host calls [`Plugin::section_text`] for it once per
//!   assembly, with the scope chain and the caller's facts.
//!
//! Sections render in ascending `order`: -100 is the harness identity, 0 the persona,
//! 100–199 tool guidance.

use prompt_plugin::{config, declare, AssembleContext, Error, Plugin};
use serde::Deserialize;

/// The fixed section. Section names are shared by every plugin of a scope: prefix yours.
const RULES: &str = "__NAME__:rules";
/// The dynamic section.
const SCOPE: &str = "__NAME__:scope";

/// The plugin's `config` table from host.toml, handed to `init` as JSON (`{}` when absent).
/// Unknown keys are refused, so a typo fails the load instead of being ignored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The fixed section's text.
    #[serde(default = "default_rules")]
    rules: String,
}

fn default_rules() -> String {
    "Work in {{cwd}}. Keep answers short.".to_owned()
}

/// The instance state: `init` builds one value per plugin instance, and every later call
/// gets it as `&mut self` (the host never calls an instance concurrently).
struct __TYPE__;

impl Plugin for __TYPE__ {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config { rules } = config::parse(config)?;
        declare::section(RULES, 150.0, &rules)?;
        declare::dynamic_section(SCOPE, 160.0)?;
        prompt_plugin::log::debug(format!("declared {RULES} and {SCOPE}"));
        Ok(__TYPE__)
    }

    fn section_text(&mut self, name: &str, cx: &AssembleContext) -> Result<String, Error> {
        match name {
            SCOPE => Ok(scope_text(cx)),
            _ => Err(Error::invalid_input(format!(
                "no dynamic section \"{name}\""
            ))),
        }
    }
}

/// The dynamic section's text for one assembly. Under contract 0.2.0 the SDK sends an
/// answer equal to the previous one as "unchanged", so a steady text copies nothing.
fn scope_text(cx: &AssembleContext) -> String {
    match cx.nearest_scope() {
        Some(scope) => format!("This assembly is for scope {scope}."),
        None => "This assembly is for the global scope.".to_owned(),
    }
}

prompt_plugin::export_plugin!(__TYPE__);

/// Native unit tests (`cargo test`): they call the plugin's logic directly. Functions that
/// call into the host (`declare::*`, `log::*`, the assembly handle) only work inside it: try
/// those with `prompt-host check` and `prompt-host render`.
#[cfg(test)]
mod tests {
    use super::*;

    fn context(scope_chain: &[&str]) -> AssembleContext {
        AssembleContext {
            scope_chain: scope_chain.iter().map(|s| s.to_string()).collect(),
            facts: vec![("cwd".to_owned(), "/work".to_owned())],
        }
    }

    #[test]
    fn the_dynamic_section_names_the_nearest_scope() {
        let mut plugin = __TYPE__;
        let text = plugin.section_text(SCOPE, &context(&["agent:1", "preset:coder"]));
        assert_eq!(text.unwrap(), "This assembly is for scope agent:1.");
        let text = plugin.section_text(SCOPE, &context(&[]));
        assert_eq!(text.unwrap(), "This assembly is for the global scope.");
        assert!(plugin.section_text("other", &context(&[])).is_err());
    }

    #[test]
    fn config_has_defaults_and_refuses_unknown_keys() {
        let parsed: Config = config::parse(serde_json::json!({})).unwrap();
        assert_eq!(parsed.rules, default_rules());
        assert!(config::parse::<Config>(serde_json::json!({ "rule": "typo" })).is_err());
    }
}
