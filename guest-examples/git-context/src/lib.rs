//! `git-context`: the current branch and HEAD commit of a repository the operator grants
//! read-only (a WASI preopen), as a dynamic runtime context (`git:state` at order 300), so
//! the model sees it in the per-step context snapshot rather than the cached system prompt.
//! It reads `.git` files only — `HEAD`, the loose ref, `packed-refs`, a `.git` file's
//! `gitdir:` and a worktree's `commondir` — never spawning git, and bounds every read.

mod braces;
mod gitdir;
mod paths;
mod read;
mod refs;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use prompt_plugin::{config, declare, AssembleContext, Error, Plugin};
use serde::Deserialize;

use gitdir::Located;
use refs::Head;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The guest path where the repository (or a directory containing it) is granted.
    #[serde(default = "default_root")]
    root: String,
    /// The host path granted at `root`, for absolute `gitdir:` paths; default: `root`.
    host_root: Option<String>,
    /// The working tree to report, relative to `root`; default: `root` itself.
    #[serde(default)]
    worktree: String,
    /// The runtime-context name.
    #[serde(default = "default_context")]
    context: String,
    /// Render order of the context.
    #[serde(default = "default_order")]
    order: f64,
    /// What to say when there is no `.git`: fail the assembly, or an empty context.
    #[serde(default)]
    missing: Missing,
    /// How many hex digits of the commit id to show.
    #[serde(default = "default_abbrev")]
    abbrev: usize,
}

/// What an absent repository means.
#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Missing {
    /// An `Error::failed` naming the path.
    #[default]
    Fail,
    /// An empty context (contributes nothing).
    Empty,
}

fn default_root() -> String {
    "/repo".to_owned()
}

fn default_context() -> String {
    "git:state".to_owned()
}

fn default_order() -> f64 {
    300.0
}

fn default_abbrev() -> usize {
    7
}

struct GitContext {
    context: String,
    order: f64,
    root: PathBuf,
    host_root: String,
    worktree: Vec<String>,
    missing: Missing,
    abbrev: usize,
}

impl GitContext {
    /// Validate the config; declares nothing, so it runs natively in tests.
    fn from_config(config: Config) -> Result<Self, Error> {
        paths::check_guest_root(&config.root)?;
        let host_root = config.host_root.unwrap_or_else(|| config.root.clone());
        paths::check_host_root(&host_root)?;
        let worktree = paths::worktree(&config.worktree)?;
        if !(4..=64).contains(&config.abbrev) {
            return Err(Error::invalid_input(format!(
                "invalid config: abbrev: {} is not between 4 and 64",
                config.abbrev
            )));
        }
        Ok(GitContext {
            context: config.context,
            order: config.order,
            root: PathBuf::from(config.root),
            host_root,
            worktree,
            missing: config.missing,
            abbrev: config.abbrev,
        })
    }

    /// The context text: `Git: branch main at 1a2b3c4 (detached: no)`.
    fn text(&self) -> Result<String, Error> {
        let dirs = match gitdir::locate(&self.root, &self.worktree, &self.host_root)? {
            Located::Repo(dirs) => dirs,
            Located::Missing(_) if self.missing == Missing::Empty => return Ok(String::new()),
            Located::Missing(dot_git) => {
                return Err(Error::failed(format!(
                    "no git repository: {} does not exist",
                    dot_git.display()
                )))
            }
        };
        let short = |id: &str| id.chars().take(self.abbrev).collect::<String>();
        let text = match refs::head(&dirs)? {
            Head::Branch {
                name,
                commit: Some(id),
            } => format!("Git: branch {name} at {} (detached: no)", short(&id)),
            Head::Branch { name, commit: None } => {
                format!("Git: branch {name}, no commits yet (detached: no)")
            }
            Head::Detached { commit } => {
                format!("Git: detached HEAD at {} (detached: yes)", short(&commit))
            }
        };
        // A branch name may contain `{{`, which the host's strict rendering would refuse.
        Ok(braces::neutralise(&text))
    }
}

impl Plugin for GitContext {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let plugin = Self::from_config(config::parse(config)?)?;
        declare::dynamic_context(&plugin.context, plugin.order)?;
        Ok(plugin)
    }

    fn context_text(&mut self, name: &str, _cx: &AssembleContext) -> Result<String, Error> {
        if name != self.context {
            return Err(Error::invalid_input(format!(
                "no dynamic context \"{name}\""
            )));
        }
        self.text()
    }
}

prompt_plugin::export_plugin!(GitContext);
