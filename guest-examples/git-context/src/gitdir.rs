//! Finding the git directory of the working tree: `<worktree>/.git` is either the directory
//! itself or a file `gitdir: <path>` (linked worktrees, submodules, a `.bare` layout); a
//! linked worktree's git directory may name the shared one in `commondir`, which holds the
//! branches and `packed-refs`. Every target must lie inside the granted root.

use std::fs;
use std::path::{Path, PathBuf};

use prompt_plugin::Error;

use crate::paths;
use crate::read::{self, Entry};

/// Where a repository's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitDirs {
    /// The working tree's own git directory: `HEAD` and per-worktree refs.
    pub git_dir: PathBuf,
    /// The shared git directory: `refs/heads`, `packed-refs`. Equal to `git_dir` unless a
    /// `commondir` file says otherwise.
    pub common_dir: PathBuf,
}

/// What the working tree holds.
pub enum Located {
    /// A repository.
    Repo(GitDirs),
    /// No `.git` at this path (shown in messages).
    Missing(PathBuf),
}

/// Fail clearly when the root itself cannot be read: under the sandbox that means no
/// directory was granted at that guest path or the read was denied.
fn check_root(root: &Path) -> Result<(), Error> {
    match fs::metadata(root) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::failed(format!(
            "the repository root {} is not a directory",
            root.display()
        ))),
        Err(e) => Err(Error::failed(format!(
            "cannot read the repository root {}: {e}; no directory is granted at that guest \
             path or the read was denied (grant the repository read-only at {})",
            root.display(),
            root.display()
        ))),
    }
}

/// The first line of a `gitdir: <path>` file, or an error naming the file.
fn gitdir_target<'a>(text: &'a str, source: &Path) -> Result<&'a str, Error> {
    let line = text.lines().next().unwrap_or("").trim_end();
    match line.strip_prefix("gitdir:").map(str::trim) {
        Some(target) if !target.is_empty() => Ok(target),
        _ => Err(Error::failed(format!(
            "{} is a file but not `gitdir: <path>`",
            source.display()
        ))),
    }
}

fn join(root: &Path, parts: &[String]) -> PathBuf {
    let mut path = root.to_path_buf();
    path.extend(parts);
    path
}

/// Locate the git directories of the working tree `worktree` (components below `root`).
/// `host_root` is the host path granted at `root`, for absolute `gitdir:` targets.
pub fn locate(root: &Path, worktree: &[String], host_root: &str) -> Result<Located, Error> {
    check_root(root)?;
    let dot_git = join(root, worktree).join(".git");
    let git_parts: Vec<String> = match read::small(&dot_git)? {
        Entry::Missing => return Ok(Located::Missing(dot_git)),
        Entry::Directory => worktree
            .iter()
            .cloned()
            .chain([".git".to_owned()])
            .collect(),
        Entry::File(text) => {
            let target = gitdir_target(&text, &dot_git)?;
            let source = dot_git.display().to_string();
            paths::resolve(worktree, target, host_root, &source)?
        }
    };
    let git_dir = join(root, &git_parts);
    let commondir = git_dir.join("commondir");
    let common_dir = match read::small(&commondir)? {
        Entry::Missing => git_dir.clone(),
        Entry::Directory => {
            return Err(Error::failed(format!(
                "{} is a directory; git writes a path there",
                commondir.display()
            )))
        }
        Entry::File(text) => {
            let target = text.lines().next().unwrap_or("").trim_end();
            let source = commondir.display().to_string();
            join(
                root,
                &paths::resolve(&git_parts, target, host_root, &source)?,
            )
        }
    };
    Ok(Located::Repo(GitDirs {
        git_dir,
        common_dir,
    }))
}
