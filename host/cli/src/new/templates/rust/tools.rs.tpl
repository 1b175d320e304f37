//! `__NAME__`: a prompt-host plugin that provides a tool, `__SNAKE___word_count`, and a
//! fixed section telling the model when to use it.
//!
//! * The tool comes from a **dynamic tool provider** (key `__NAME__`): the host calls
//!   [`Plugin::tools`] once per assembly, so the set can depend on the scope and the caller's
//!   facts. Here the description names the working directory when the caller passed a `cwd`
//!   fact. A set that never changes is better declared fixed (`declare::tools`): the host
//!   stores it and never calls the plugin for it.
//! * Tools reach the model beside the system prompt, not in it: `prompt-host assemble`
//!   lists them with their parameters, a JSON Schema object.
//! * `__NAME__:tools` is a **fixed section** in the tool-guidance band (orders 100–199).

use prompt_plugin::{config, declare, tool, AssembleContext, Error, Plugin, ToolSet};
use serde::Deserialize;
use serde_json::json;

/// The tool provider's key; the host passes it back to [`Plugin::tools`].
const PROVIDER: &str = "__NAME__";
/// The tool. Tool names are shared by every plugin of an assembly: prefix yours.
const TOOL: &str = "__SNAKE___word_count";
/// The fixed section about the tool.
const GUIDANCE: &str = "__NAME__:tools";

/// The plugin's `config` table from host.toml, handed to `init` as JSON (`{}` when absent).
/// Unknown keys are refused, so a typo fails the load instead of being ignored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The largest file the tool accepts, in bytes (it is in the tool's description).
    #[serde(default = "default_max_bytes")]
    max_bytes: u64,
}

fn default_max_bytes() -> u64 {
    1_000_000
}

/// The instance state: `init` builds one value per plugin instance, and every later call
/// gets it as `&mut self` (the host never calls an instance concurrently).
struct __TYPE__ {
    max_bytes: u64,
}

impl Plugin for __TYPE__ {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config { max_bytes } = config::parse(config)?;
        declare::dynamic_tools(PROVIDER)?;
        declare::section(
            GUIDANCE,
            150.0,
            "Use __SNAKE___word_count to measure a text file instead of reading it whole.",
        )?;
        prompt_plugin::log::debug(format!("declared the tool provider {PROVIDER}"));
        Ok(__TYPE__ { max_bytes })
    }

    fn tools(&mut self, key: &str, cx: &AssembleContext) -> Result<ToolSet, Error> {
        if key != PROVIDER {
            return Err(Error::invalid_input(format!("no tool provider \"{key}\"")));
        }
        Ok(ToolSet::new(vec![self.word_count(cx.fact("cwd"))]))
    }
}

impl __TYPE__ {
    /// The tool's schema: what the model sees to decide whether and how to call it.
    fn word_count(&self, cwd: Option<&str>) -> prompt_plugin::ToolSchema {
        let relative_to = match cwd {
            Some(cwd) => format!("relative to {cwd}"),
            None => "relative to the working directory".to_owned(),
        };
        tool(
            TOOL,
            format!(
                "Count the lines, words and bytes of a text file of at most {} bytes.",
                self.max_bytes
            ),
            &json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": format!("The file's path, {relative_to}.")
                    },
                    "words_only": {
                        "type": "boolean",
                        "description": "Report the word count alone."
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        )
    }
}

prompt_plugin::export_plugin!(__TYPE__);

/// Native unit tests (`cargo test`): they call the plugin's logic directly. Functions that
/// call into the host (`declare::*`, `log::*`, the assembly handle) only work inside it: try
/// those with `prompt-host check` and `prompt-host render`.
#[cfg(test)]
mod tests {
    use super::*;

    fn context(facts: &[(&str, &str)]) -> AssembleContext {
        AssembleContext {
            scope_chain: Vec::new(),
            facts: facts
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn the_tool_has_a_json_schema_object_for_parameters() {
        let mut plugin = __TYPE__ { max_bytes: 10 };
        let set = plugin.tools(PROVIDER, &context(&[("cwd", "/work")])).unwrap();
        assert_eq!(set.schemas.len(), 1);
        let schema = &set.schemas[0];
        assert_eq!(schema.name, TOOL);
        assert!(schema.description.contains("at most 10 bytes"));
        let parameters: serde_json::Value = serde_json::from_str(&schema.parameters).unwrap();
        assert_eq!(parameters["type"], "object");
        assert_eq!(parameters["required"], json!(["path"]));
        let path = parameters["properties"]["path"]["description"].as_str().unwrap();
        assert_eq!(path, "The file's path, relative to /work.");
        assert!(plugin.tools("other", &context(&[])).is_err());
    }

    #[test]
    fn config_has_defaults_and_refuses_unknown_keys() {
        let parsed: Config = config::parse(serde_json::json!({})).unwrap();
        assert_eq!(parsed.max_bytes, default_max_bytes());
        assert!(config::parse::<Config>(serde_json::json!({ "max": 1 })).is_err());
    }
}
