//! `__NAME__`: a prompt-host plugin that declares a dynamic variable, `{{__SNAKE___scope}}`,
//! and a fixed section that uses it.
//!
//! * `__SNAKE___scope` is a **dynamic variable**: the host calls [`Plugin::variable`] for it
//!   once per assembly. Any section's or context's text may reference it as
//!   `{{__SNAKE___scope}}`, whichever plugin declared that text; references are resolved at
//!   render time, and one to a variable without a value is an error, never an empty string.
//!   Variable names match `^[a-z][a-z0-9_]*$`.
//! * `__NAME__:where` is a **fixed section**: `init` hands its text to the host, which stores it,
//!   so an assembly never calls into the plugin for it.

use prompt_plugin::{config, declare, AssembleContext, Error, Plugin};
use serde::Deserialize;

/// The dynamic variable.
const VARIABLE: &str = "__SNAKE___scope";
/// The fixed section that references it, and its text.
const SECTION: &str = "__NAME__:where";
const SECTION_TEXT: &str = "This prompt is assembled for {{__SNAKE___scope}}.";

/// The plugin's `config` table from host.toml, handed to `init` as JSON (`{}` when absent).
/// Unknown keys are refused, so a typo fails the load instead of being ignored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The variable's value in an assembly for no scope (a global one).
    #[serde(default = "default_unscoped")]
    unscoped: String,
}

fn default_unscoped() -> String {
    "the global scope".to_owned()
}

/// The instance state: `init` builds one value per plugin instance, and every later call
/// gets it as `&mut self` (the host never calls an instance concurrently).
struct __TYPE__ {
    unscoped: String,
}

impl Plugin for __TYPE__ {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config { unscoped } = config::parse(config)?;
        declare::dynamic_variable(VARIABLE)?;
        declare::section(SECTION, 150.0, SECTION_TEXT)?;
        prompt_plugin::log::debug(format!("declared {VARIABLE} and {SECTION}"));
        Ok(__TYPE__ { unscoped })
    }

    fn variable(&mut self, name: &str, cx: &AssembleContext) -> Result<Option<String>, Error> {
        match name {
            // `None` would mean "no value in this assembly": rendering a reference fails.
            VARIABLE => Ok(Some(self.scope(cx))),
            _ => Err(Error::invalid_input(format!(
                "no dynamic variable \"{name}\""
            ))),
        }
    }
}

impl __TYPE__ {
    /// The variable's value for one assembly: the scope chain, nearest first.
    fn scope(&self, cx: &AssembleContext) -> String {
        if cx.scope_chain.is_empty() {
            return self.unscoped.clone();
        }
        format!("scope {}", cx.scope_chain.join(" < "))
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
            facts: Vec::new(),
        }
    }

    #[test]
    fn the_variable_is_the_scope_chain() {
        let mut plugin = __TYPE__ {
            unscoped: default_unscoped(),
        };
        let value = plugin.variable(VARIABLE, &context(&["agent:1", "preset:coder"]));
        assert_eq!(value.unwrap().as_deref(), Some("scope agent:1 < preset:coder"));
        let value = plugin.variable(VARIABLE, &context(&[]));
        assert_eq!(value.unwrap().as_deref(), Some("the global scope"));
        assert!(plugin.variable("other", &context(&[])).is_err());
    }

    #[test]
    fn config_has_defaults_and_refuses_unknown_keys() {
        let parsed: Config = config::parse(serde_json::json!({})).unwrap();
        assert_eq!(parsed.unscoped, default_unscoped());
        assert!(config::parse::<Config>(serde_json::json!({ "scope": "typo" })).is_err());
    }
}
