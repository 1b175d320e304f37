//! `tool-guide`: tool guidance in the 100–199 band plus a fixed tool set (`read_file`,
//! `write_file`, `bash`). The static parts are declared once and never cross into Wasm again;
//! only the scope note is dynamic.

use prompt_plugin::{config, declare, tool, AssembleContext, Error, Plugin, ToolSchema};
use serde::Deserialize;
use serde_json::json;

const GUIDE: &str = "tools:guide";
const FILES: &str = "tools:files";
const SCOPE: &str = "tools:scope";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Declare the tool set too (default). Off: guidance sections only.
    #[serde(default = "yes")]
    tools: bool,
}

fn yes() -> bool {
    true
}

struct ToolGuide;

impl Plugin for ToolGuide {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config { tools } = config::parse(config)?;
        declare::section(
            GUIDE,
            110.0,
            "You work in {{cwd}}. Prefer the dedicated file tools over shell commands for \
             reading and editing files, and keep shell commands short and non-interactive.",
        )?;
        declare::section(
            FILES,
            120.0,
            "Paths are relative to {{cwd}} unless absolute. Read a file before you overwrite \
             it, and never write outside the working directory.",
        )?;
        declare::dynamic_section(SCOPE, 130.0)?;
        if tools {
            declare::tools(tool_set())?;
        }
        Ok(ToolGuide)
    }

    fn section_text(&mut self, name: &str, cx: &AssembleContext) -> Result<String, Error> {
        if name != SCOPE {
            return Err(Error::invalid_input(format!(
                "no dynamic section \"{name}\""
            )));
        }
        Ok(match cx.nearest_scope() {
            Some(scope) => format!("This tool guidance applies to scope {scope}."),
            None => "This tool guidance applies to every scope.".to_owned(),
        })
    }
}

/// Realistic JSON-schema parameters, the shape an agent's tool runtime hands a model.
fn tool_set() -> Vec<ToolSchema> {
    vec![
        tool(
            "read_file",
            "Read a UTF-8 text file and return its contents with line numbers.",
            &json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to read."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        ),
        tool(
            "write_file",
            "Create or overwrite a text file with the given contents.",
            &json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory."},
                    "content": {"type": "string", "description": "The complete new file contents."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        ),
        tool(
            "bash",
            "Run a shell command in the working directory and return its output.",
            &json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line to run."},
                    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000, "description": "Kill the command after this many milliseconds."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        ),
    ]
}

prompt_plugin::export_plugin!(ToolGuide);
