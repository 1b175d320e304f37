//! `mcp-instructions`: the sandboxed instruction provider for MCP servers. The host talks to
//! the server; this plugin decides what of it reaches the prompt: the server's instructions as
//! a fenced, attributed, capped section `mcp:<server>:instructions` (order 190, the
//! tool-guidance band), byte for byte (the text is the value of the variable
//! `mcp_<server>_instructions`, which the section references), and its tools under the
//! public names the TypeScript DeepSeek Harness gives them.

mod fence;
mod naming;

use std::collections::BTreeSet;

use prompt_plugin::{
    config, declare, Error, InstructionProvider, McpServer, Plugin, ToolSchema, ToolSet,
};
use serde::Deserialize;

/// Order of the instructions section: the tool-guidance band (100–199) of the prompt.
const ORDER: f64 = 190.0;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Longest instructions body kept, in bytes.
    #[serde(default = "default_max_bytes")]
    max_bytes: usize,
    /// Raw tool names to publish; absent = all.
    allow_tools: Option<Vec<String>>,
}

fn default_max_bytes() -> usize {
    4096
}

struct McpInstructions {
    max_bytes: usize,
    allow_tools: Option<BTreeSet<String>>,
}

impl Plugin for McpInstructions {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config {
            max_bytes,
            allow_tools,
        } = config::parse(config)?;
        // Nothing to declare yet: everything comes from `publish`.
        Ok(McpInstructions {
            max_bytes,
            allow_tools: allow_tools.map(|names| names.into_iter().collect()),
        })
    }
}

impl InstructionProvider for McpInstructions {
    fn publish(&mut self, server: McpServer) -> Result<(), Error> {
        let name = &server.name;
        // Validate the whole list before declaring anything, so a bad list changes nothing.
        let mut seen = BTreeSet::new();
        for tool in &server.tools {
            if !seen.insert(tool.name.as_str()) {
                return Err(Error::failed(format!(
                    "mcp-client({name}): server listed tool \"{}\" more than once — invalid tool list",
                    tool.name
                )));
            }
        }
        let mut public_names = BTreeSet::new();
        let mut known = Vec::with_capacity(server.tools.len());
        let mut schemas = Vec::new();
        for tool in &server.tools {
            let public = naming::public_tool_name(name, &tool.name);
            if !public_names.insert(public.clone()) {
                return Err(Error::failed(format!(
                    "mcp-client({name}): tool \"{}\" maps to the public name \"{public}\" of another tool",
                    tool.name
                )));
            }
            known.push(public.clone());
            let allowed = self
                .allow_tools
                .as_ref()
                .is_none_or(|allow| allow.contains(&tool.name));
            if allowed {
                schemas.push(ToolSchema {
                    name: public,
                    description: tool.description.clone(),
                    parameters: tool.input_schema.clone(),
                });
            }
        }

        // The server's text is a variable's value, which the host never scans for
        // references; the section around it is this plugin's own template.
        let published = fence::publish(name, &server.instructions, self.max_bytes)
            .map_err(|e| Error::invalid_input(format!("mcp-client({name}): {e}")))?;
        if let Some(published) = published {
            declare::variable(&published.variable, Some(&published.value))?;
            declare::section(
                &format!("mcp:{name}:instructions"),
                ORDER,
                &published.section,
            )?;
        }
        if !server.tools.is_empty() {
            // Known names are every public name, allowed or not: the allow-list is a
            // restriction, and the operator's tool_order may still name a hidden tool.
            declare::tool_set(ToolSet::new(schemas).with_known_names(known))?;
        }
        Ok(())
    }
}

prompt_plugin::export_instruction_provider!(McpInstructions);
