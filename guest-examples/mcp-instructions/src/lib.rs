//! `mcp-instructions`: the sandboxed instruction provider for MCP servers. The host talks to
//! the server; this plugin decides what of it reaches the prompt: the server's instructions as
//! a fenced, attributed, capped section `mcp:<server>:instructions` (order 190, the
//! tool-guidance band), byte for byte (the text is the value of the variable
//! `mcp_<server>_instructions`, which the section references), its skills index (the MCP
//! Skills extension) as `mcp:<server>:skills` (order 191), fenced and capped the same way,
//! and its tools under the public names the TypeScript DeepSeek Harness gives them.

mod fence;
mod naming;
mod skills_index;

use std::collections::BTreeSet;

use prompt_plugin::{
    config, declare, Error, InstructionProvider, McpServer, McpSkill, Plugin, ToolSchema, ToolSet,
};
use serde::Deserialize;

/// Order of the instructions section: the tool-guidance band (100–199) of the prompt.
const ORDER: f64 = 190.0;
/// Order of the skills index: right after the instructions.
const SKILLS_ORDER: f64 = 191.0;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Longest instructions body kept, in bytes.
    #[serde(default = "default_max_bytes")]
    max_bytes: usize,
    /// Raw tool names to publish; absent = all.
    allow_tools: Option<Vec<String>>,
    /// Longest skills index kept, in bytes (whole lines; the rest is counted).
    #[serde(default = "default_max_bytes")]
    max_skill_index_bytes: usize,
}

fn default_max_bytes() -> usize {
    4096
}

struct McpInstructions {
    max_bytes: usize,
    allow_tools: Option<BTreeSet<String>>,
    max_skill_index_bytes: usize,
    /// The skills index received for the `publish` that follows.
    skills: Vec<McpSkill>,
}

impl Plugin for McpInstructions {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config {
            max_bytes,
            allow_tools,
            max_skill_index_bytes,
        } = config::parse(config)?;
        // Nothing to declare yet: everything comes from `publish`.
        Ok(McpInstructions {
            max_bytes,
            allow_tools: allow_tools.map(|names| names.into_iter().collect()),
            max_skill_index_bytes,
            skills: Vec::new(),
        })
    }
}

impl InstructionProvider for McpInstructions {
    fn receive_skills(&mut self, _server: &str, skills: Vec<McpSkill>) -> Result<(), Error> {
        self.skills = skills;
        Ok(())
    }

    fn publish(&mut self, server: McpServer) -> Result<(), Error> {
        // The index received for this generation, and none for the next unless sent again.
        let skills = std::mem::take(&mut self.skills);
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
        let index = skills_index::publish(name, &skills, self.max_skill_index_bytes)
            .map_err(|e| Error::invalid_input(format!("mcp-client({name}): {e}")))?;
        if let Some(index) = index {
            declare::variable(&index.variable, Some(&index.value))?;
            declare::section(&format!("mcp:{name}:skills"), SKILLS_ORDER, &index.section)?;
        }
        if !server.tools.is_empty() {
            // Known names are every public name, allowed or not: the allow-list is a
            // restriction, and the operator's tool_order may still name a hidden tool.
            declare::tool_set(ToolSet::new(schemas).with_known_names(known))?;
        }
        Ok(())
    }
}

prompt_plugin::export_skills_provider!(McpInstructions);
