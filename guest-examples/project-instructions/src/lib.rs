//! `project-instructions`: the repository's instruction files (`AGENTS.md`, `CLAUDE.md`,
//! `.cursorrules`, `GEMINI.md`) as one dynamic section in the tool-guidance band. It reads
//! them on every assembly from a directory the operator grants read-only (a WASI preopen),
//! from the granted root down to the directory of the caller's `cwd` fact, root first so the
//! nearest file comes last and wins where they conflict. The text is capped, `{{` in it is
//! neutralised, and with nothing found it is empty (the host drops an empty section).

mod braces;
mod budget;
mod discover;
mod paths;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use prompt_plugin::{config, declare, AssembleContext, Error, Plugin};
use serde::Deserialize;

/// The most `max_bytes` may be: even if every byte of the files were a brace or invalid
/// UTF-8 (at most three bytes out per byte in), the section stays under the host's 1 MiB
/// per-call output cap.
const MAX_BYTES_LIMIT: usize = 256 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The guest path where the repository is granted.
    #[serde(default = "default_root")]
    root: String,
    /// The host path granted at `root`, for mapping the `cwd` fact; default: `root`.
    host_root: Option<String>,
    /// File names to look for in each directory, in this order.
    #[serde(default = "default_names")]
    names: Vec<String>,
    /// Budget for the text read from the files, their `# From` lines included.
    #[serde(default = "default_max_bytes")]
    max_bytes: usize,
    /// The section name.
    #[serde(default = "default_section")]
    section: String,
    /// Render order; the tool-guidance band is 100–199.
    #[serde(default = "default_order")]
    order: f64,
    /// The line before the files (operator text: may reference variables); "" for none.
    #[serde(default = "default_heading")]
    heading: String,
}

fn default_root() -> String {
    "/project".to_owned()
}

fn default_names() -> Vec<String> {
    ["AGENTS.md", "CLAUDE.md", ".cursorrules", "GEMINI.md"]
        .map(str::to_owned)
        .to_vec()
}

fn default_max_bytes() -> usize {
    64 * 1024
}

fn default_section() -> String {
    "project:instructions".to_owned()
}

fn default_order() -> f64 {
    120.0
}

fn default_heading() -> String {
    "Instructions from the project's instruction files, outermost directory first; where \
     they conflict, the later (nearer) file takes precedence."
        .to_owned()
}

struct ProjectInstructions {
    section: String,
    order: f64,
    root: PathBuf,
    host_root: String,
    names: Vec<String>,
    max_bytes: usize,
    heading: String,
}

impl ProjectInstructions {
    /// Validate the config; declares nothing, so it runs natively in tests.
    fn from_config(config: Config) -> Result<Self, Error> {
        paths::check_guest_root(&config.root)?;
        let host_root = config.host_root.unwrap_or_else(|| config.root.clone());
        paths::check_host_root(&host_root)?;
        if config.names.is_empty() {
            return Err(Error::invalid_input(
                "invalid config: names: the list is empty; name at least one file",
            ));
        }
        for (i, name) in config.names.iter().enumerate() {
            paths::check_name(name)?;
            if config.names[..i].contains(name) {
                return Err(Error::invalid_input(format!(
                    "invalid config: names: \"{name}\" is listed twice"
                )));
            }
        }
        if !(1..=MAX_BYTES_LIMIT).contains(&config.max_bytes) {
            return Err(Error::invalid_input(format!(
                "invalid config: max_bytes: {} is not between 1 and {MAX_BYTES_LIMIT}",
                config.max_bytes
            )));
        }
        Ok(ProjectInstructions {
            section: config.section,
            order: config.order,
            root: PathBuf::from(config.root),
            host_root,
            names: config.names,
            max_bytes: config.max_bytes,
            heading: config.heading,
        })
    }

    /// The section text for a caller whose `cwd` fact is `cwd` (a host path).
    fn text(&self, cwd: Option<&str>) -> Result<String, Error> {
        discover::check_root(&self.root)?;
        let below = paths::below_root(&self.host_root, cwd);
        let found = discover::candidates(&self.root, &below, &self.names)?;
        let body = budget::collect(&found, self.max_bytes)?;
        if body.is_empty() {
            return Ok(String::new());
        }
        // File text and paths (which come from the cwd fact) are neutralised; the heading
        // is the operator's and may reference variables.
        let body = braces::neutralise(&body);
        Ok(if self.heading.is_empty() {
            body
        } else {
            format!("{}\n\n{body}", self.heading)
        })
    }
}

impl Plugin for ProjectInstructions {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let plugin = Self::from_config(config::parse(config)?)?;
        declare::dynamic_section(&plugin.section, plugin.order)?;
        Ok(plugin)
    }

    fn section_text(&mut self, name: &str, cx: &AssembleContext) -> Result<String, Error> {
        if name != self.section {
            return Err(Error::invalid_input(format!(
                "no dynamic section \"{name}\""
            )));
        }
        self.text(cx.fact("cwd"))
    }
}

prompt_plugin::export_plugin!(ProjectInstructions);
