//! `__NAME__`: a prompt-host plugin with an assembly listener that rewrites a section.
//!
//! The host runs the listeners of an assembly as a waterfall: each receives the assembly as
//! a handle ([`Assembly`]), may change it, and calls [`Assembly::next`] to run the listeners
//! inside it; afterwards the handle holds their result. Not calling `next()` short-circuits:
//! the inner listeners do not run. A listener pays only for what it reads and writes
//! through the handle.
//!
//! This plugin declares a fixed section, `__NAME__:outline`, and a listener (key `__NAME__`)
//! that, after `next()`, rewrites that section to list the sections the prompt ends up with.

use prompt_plugin::{config, declare, AssembleContext, Assembly, Error, Plugin};
use serde::Deserialize;

/// The listener's key; the host passes it back to [`Plugin::on_assemble`].
const LISTENER: &str = "__NAME__";
/// The section the listener rewrites (order 190: late in the tool-guidance band).
const OUTLINE: &str = "__NAME__:outline";

/// The plugin's `config` table from host.toml, handed to `init` as JSON (`{}` when absent).
/// Unknown keys are refused, so a typo fails the load instead of being ignored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The words before the list of sections.
    #[serde(default = "default_intro")]
    intro: String,
}

fn default_intro() -> String {
    "Sections of this prompt:".to_owned()
}

/// The instance state: `init` builds one value per plugin instance, and every later call
/// gets it as `&mut self` (the host never calls an instance concurrently).
struct __TYPE__ {
    intro: String,
}

impl Plugin for __TYPE__ {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config { intro } = config::parse(config)?;
        // The fixed text stands when the listener does not run (e.g. for an assembly of a
        // scope it does not receive).
        declare::section(OUTLINE, 190.0, &intro)?;
        // Appended (not prepended), receiving the assemblies of its scope and descendants;
        // `declare::listener_with(LISTENER, prepend, global)` places it otherwise.
        declare::listener(LISTENER)?;
        prompt_plugin::log::debug(format!("declared {OUTLINE} and the listener {LISTENER}"));
        Ok(__TYPE__ { intro })
    }

    fn on_assemble(
        &mut self,
        key: &str,
        assembly: &Assembly,
        _cx: &AssembleContext,
    ) -> Result<(), Error> {
        if key != LISTENER {
            return Err(Error::invalid_input(format!("no listener \"{key}\"")));
        }
        // Let the rest of the chain run first, so the outline sees what it added.
        assembly.next()?;
        let names = assembly.section_names();
        assembly.set_section(OUTLINE, &outline(&self.intro, &names));
        Ok(())
    }
}

/// The outline's text: the intro and the section names in render order.
fn outline(intro: &str, names: &[String]) -> String {
    format!("{intro} {}.", names.join(", "))
}

prompt_plugin::export_plugin!(__TYPE__);

/// Native unit tests (`cargo test`): they call the plugin's logic directly. Functions that
/// call into the host (`declare::*`, `log::*`, the assembly handle) only work inside it: try
/// those with `prompt-host check` and `prompt-host render`.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outline_lists_the_sections_in_order() {
        let names = ["harness:identity".to_owned(), OUTLINE.to_owned()];
        assert_eq!(
            outline("Sections:", &names),
            "Sections: harness:identity, __NAME__:outline."
        );
    }

    #[test]
    fn config_has_defaults_and_refuses_unknown_keys() {
        let parsed: Config = config::parse(serde_json::json!({})).unwrap();
        assert_eq!(parsed.intro, default_intro());
        assert!(config::parse::<Config>(serde_json::json!({ "intr": "typo" })).is_err());
    }
}
