//! `project-instructions`: the repository's instruction files (`AGENTS.md`, `CLAUDE.md`,
//! `.cursorrules`, `GEMINI.md`) as one dynamic section in the tool-guidance band. It reads
//! them on every assembly from a directory the operator grants read-only (a WASI preopen),
//! from the granted root down to the directory of the caller's `cwd` fact, root first so the
//! nearest file comes last and wins where they conflict. The text is capped, and with nothing
//! found the section is empty (the host drops an empty section).
//!
//! The files' text is not a template: it reaches the prompt byte for byte, `{{` and all. It
//! is the value of a dynamic variable the plugin declares (`project_instructions`), and the
//! section is the operator's heading followed by a reference to that variable. The host
//! inserts a variable's value verbatim and never scans it for references, so nothing in a
//! file can read another variable or fail the render; the heading is still a template.

mod budget;
mod discover;
mod paths;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use prompt_plugin::{config, declare, AssembleContext, Error, Plugin};
use serde::Deserialize;

/// The most `max_bytes` may be: even if every byte of the files were invalid UTF-8 (three
/// bytes of U+FFFD out per byte in), the variable's value stays under the host's 1 MiB
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
    /// The variable that holds the files' text; the section references it.
    #[serde(default = "default_variable")]
    variable: String,
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

fn default_variable() -> String {
    "project_instructions".to_owned()
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
    variable: String,
    /// What the last `variable` call found for the `cwd` it was given: whether the files
    /// had any text. The host evaluates variables before section texts, so the section
    /// text of the same assembly takes it instead of reading the files again.
    found: Option<(Option<String>, bool)>,
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
        if !is_variable_name(&config.variable) {
            return Err(Error::invalid_input(format!(
                "invalid config: variable: \"{}\" is not a variable name (^[a-z][a-z0-9_]*$)",
                config.variable
            )));
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
            variable: config.variable,
            found: None,
        })
    }

    /// The files' text for a caller whose `cwd` fact is `cwd` (a host path): the value of
    /// the variable, `""` when nothing was found.
    fn text(&self, cwd: Option<&str>) -> Result<String, Error> {
        discover::check_root(&self.root)?;
        let below = paths::below_root(&self.host_root, cwd);
        let found = discover::candidates(&self.root, &below, &self.names)?;
        budget::collect(&found, self.max_bytes)
    }

    /// The section text: empty when the files have no text (so the host drops the section),
    /// else the heading and a reference to the variable. Only the heading is the operator's
    /// template; the files' text never passes through the renderer's scan.
    fn section(&self, found: bool) -> String {
        if !found {
            return String::new();
        }
        let reference = format!("{{{{{}}}}}", self.variable);
        if self.heading.is_empty() {
            reference
        } else {
            format!("{}\n\n{reference}", self.heading)
        }
    }
}

/// `^[a-z][a-z0-9_]*$`, the host's rule for variable names.
fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl Plugin for ProjectInstructions {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let plugin = Self::from_config(config::parse(config)?)?;
        declare::dynamic_variable(&plugin.variable)?;
        declare::dynamic_section(&plugin.section, plugin.order)?;
        Ok(plugin)
    }

    fn variable(&mut self, name: &str, cx: &AssembleContext) -> Result<Option<String>, Error> {
        if name != self.variable {
            return Err(Error::invalid_input(format!(
                "no dynamic variable \"{name}\""
            )));
        }
        let cwd = cx.fact("cwd");
        // A failed read leaves nothing behind: the section text then reads for itself
        // (and fails the same way, so `on_error = "skip"` leaves out both).
        self.found = None;
        let text = self.text(cwd)?;
        self.found = Some((cwd.map(str::to_owned), !text.is_empty()));
        Ok(Some(text))
    }

    fn section_text(&mut self, name: &str, cx: &AssembleContext) -> Result<String, Error> {
        if name != self.section {
            return Err(Error::invalid_input(format!(
                "no dynamic section \"{name}\""
            )));
        }
        let cwd = cx.fact("cwd");
        // Taken, not kept: an answer is reused once, by the section of the assembly whose
        // variable produced it. Another assembly's call in between (a different `cwd`, or a
        // fresh instance after a trap) finds nothing or a different `cwd` and reads again.
        let found = match self.found.take() {
            Some((seen, found)) if seen.as_deref() == cwd => found,
            _ => !self.text(cwd)?.is_empty(),
        };
        Ok(self.section(found))
    }
}

prompt_plugin::export_plugin!(ProjectInstructions);
