//! Reading `HEAD` and resolving the ref it names, from files only: `HEAD` is `ref: <ref>` (on
//! a branch) or an object id (detached); a ref is a loose file under the git directory or a
//! line of `packed-refs`, and may itself be `ref: <ref>` (followed up to [`MAX_HOPS`]).

use std::path::{Path, PathBuf};

use prompt_plugin::Error;

use crate::gitdir::GitDirs;
use crate::read::{self, Entry};

/// How many symbolic refs are followed from `HEAD`'s target, as git does.
pub const MAX_HOPS: usize = 5;

/// Where `HEAD` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// On a branch (`name` without `refs/heads/`; another ref keeps its full name).
    /// `commit` is `None` on an unborn branch (a repository with no commits yet).
    Branch {
        /// The branch name, e.g. `main`.
        name: String,
        /// The full commit id the branch points at.
        commit: Option<String>,
    },
    /// Detached at a commit.
    Detached {
        /// The full commit id.
        commit: String,
    },
}

/// A SHA-1 (40) or SHA-256 (64) object id in hex, lowercased.
fn object_id(text: &str) -> Option<String> {
    let ok = matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| text.to_ascii_lowercase())
}

/// Whether `name` is a ref name git could have written (`git check-ref-format` rules), so
/// that joining it to the git directory cannot leave it.
pub fn is_valid_ref(name: &str) -> bool {
    name.starts_with("refs/")
        && name.len() <= 1024
        && !name.contains("@{")
        && !name.contains("..")
        && name.split('/').all(|part| {
            !part.is_empty()
                && !part.starts_with('.')
                && !part.ends_with(".lock")
                && !part.ends_with('.')
                && part.bytes().all(|b| {
                    b > 0x20
                        && b != 0x7f
                        && !matches!(b, b'~' | b'^' | b':' | b'?' | b'*' | b'[' | b'\\')
                })
        })
}

/// The first line of `text`, without its line ending.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim_end()
}

/// Per-worktree refs live in the worktree's git directory, everything else in the shared one.
fn ref_path(dirs: &GitDirs, name: &str) -> PathBuf {
    let per_worktree = ["refs/bisect/", "refs/worktree/", "refs/rewritten/"]
        .iter()
        .any(|prefix| name.starts_with(prefix));
    let dir = if per_worktree {
        &dirs.git_dir
    } else {
        &dirs.common_dir
    };
    dir.join(name)
}

/// The object id of `name` in `packed-refs` (`<id> <name>` lines; `#` and `^` lines skipped).
fn packed(common_dir: &Path, name: &str) -> Result<Option<String>, Error> {
    let path = common_dir.join("packed-refs");
    let found = read::find_line(&path, |line| {
        let (id, ref_name) = line.trim_end().split_once(' ')?;
        (ref_name == name).then(|| id.to_owned())
    })?;
    match found {
        None => Ok(None),
        Some(id) => object_id(&id).map(Some).ok_or_else(|| {
            Error::failed(format!(
                "{} has no valid object id for {name}",
                path.display()
            ))
        }),
    }
}

/// The commit `name` points at, `None` when it does not exist (an unborn branch).
fn resolve(dirs: &GitDirs, name: &str) -> Result<Option<String>, Error> {
    let mut name = name.to_owned();
    for _ in 0..=MAX_HOPS {
        if !is_valid_ref(&name) {
            return Err(Error::failed(format!("invalid ref name \"{name}\"")));
        }
        let path = ref_path(dirs, &name);
        match read::small(&path)? {
            Entry::File(text) => {
                let line = first_line(&text);
                if let Some(target) = line.strip_prefix("ref:") {
                    name = target.trim().to_owned();
                    continue;
                }
                return object_id(line).map(Some).ok_or_else(|| {
                    Error::failed(format!(
                        "{} holds neither an object id nor `ref: <ref>`",
                        path.display()
                    ))
                });
            }
            // A directory there means only longer refs (`<name>/…`) exist loosely.
            Entry::Missing | Entry::Directory => return packed(&dirs.common_dir, &name),
        }
    }
    Err(Error::failed(format!(
        "more than {MAX_HOPS} symbolic refs from HEAD"
    )))
}

/// Read `HEAD` and resolve it.
pub fn head(dirs: &GitDirs) -> Result<Head, Error> {
    let path = dirs.git_dir.join("HEAD");
    let text = match read::small(&path)? {
        Entry::File(text) => text,
        Entry::Missing | Entry::Directory => {
            return Err(Error::failed(format!(
                "{} is not a git directory: it has no HEAD file",
                dirs.git_dir.display()
            )))
        }
    };
    let line = first_line(&text);
    if let Some(target) = line.strip_prefix("ref:") {
        let target = target.trim();
        // A reftable repository's HEAD names the placeholder `refs/heads/.invalid`.
        let reftable = dirs.common_dir.join("reftable");
        if matches!(read::small(&reftable), Ok(Entry::Directory)) {
            return Err(Error::failed(format!(
                "{} uses the reftable ref format, which this plugin does not read",
                dirs.common_dir.display()
            )));
        }
        let commit = resolve(dirs, target)?;
        let name = target.strip_prefix("refs/heads/").unwrap_or(target);
        return Ok(Head::Branch {
            name: name.to_owned(),
            commit,
        });
    }
    match object_id(line) {
        Some(commit) => Ok(Head::Detached { commit }),
        None => Err(Error::failed(format!(
            "{} holds neither `ref: refs/heads/<branch>` nor a commit id",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_object_ids() {
        let sha1 = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
        assert_eq!(object_id(sha1).as_deref(), Some(sha1));
        assert_eq!(object_id(&sha1.to_ascii_uppercase()).as_deref(), Some(sha1));
        assert!(object_id(&"ab".repeat(32)).is_some());
        assert!(object_id("1a2b3c4").is_none());
        assert!(object_id(&"g".repeat(40)).is_none());
    }

    #[test]
    fn ref_names_cannot_leave_the_git_directory() {
        for ok in [
            "refs/heads/main",
            "refs/heads/feat/x-1",
            "refs/heads/feat{{x}}",
        ] {
            assert!(is_valid_ref(ok), "{ok}");
        }
        for bad in [
            "HEAD",
            "refs/heads/../../../etc/passwd",
            "refs/heads/.hidden",
            "refs/heads//x",
            "refs/heads/x.lock",
            "refs/heads/a b",
            "refs/heads/a\\b",
            "refs/heads/x@{1}",
            "/refs/heads/x",
        ] {
            assert!(!is_valid_ref(bad), "{bad}");
        }
    }
}
