//! Path strings: validating the configured paths, and resolving what a `.git` file or a
//! `commondir` file points at to a place inside the granted root. Resolution is lexical and
//! works on components relative to the root, so a target above the root is refused before
//! anything is opened. Pure string work, tested natively.

use prompt_plugin::Error;

/// The components of `path`, split on `/` and `\` (git on Windows writes host paths with
/// either), without empty and `.` components.
pub fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
}

/// Whether `path` is absolute on some host: `/…`, `\…` or a drive letter `C:…`.
pub fn is_absolute_host(path: &str) -> bool {
    let b = path.as_bytes();
    matches!(b.first(), Some(b'/' | b'\\'))
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
}

fn plain(path: &str) -> bool {
    !path.contains('\0') && components(path).all(|c| c != "..")
}

/// A guest path (the WASI side, always `/`-separated) must be absolute and plain.
pub fn check_guest_root(root: &str) -> Result<(), Error> {
    if !root.starts_with('/') || !plain(root) {
        return Err(Error::invalid_input(format!(
            "invalid config: root: \"{root}\" is not an absolute guest path such as \"/repo\" \
             (no `..`)"
        )));
    }
    Ok(())
}

/// The host root must be absolute and plain.
pub fn check_host_root(host_root: &str) -> Result<(), Error> {
    if !is_absolute_host(host_root) || !plain(host_root) {
        return Err(Error::invalid_input(format!(
            "invalid config: host_root: \"{host_root}\" is not an absolute host path (no `..`)"
        )));
    }
    Ok(())
}

/// The working tree below the root: a relative, plain path; its components.
pub fn worktree(path: &str) -> Result<Vec<String>, Error> {
    if is_absolute_host(path) || !plain(path) {
        return Err(Error::invalid_input(format!(
            "invalid config: worktree: \"{path}\" is not a path relative to root (no `..`)"
        )));
    }
    Ok(components(path).map(str::to_owned).collect())
}

/// Resolve `target`, read from the file `source` in the directory `base` (components below
/// the root), to components below the root. A relative target is taken from `base`; an
/// absolute one is a host path and must lie under `host_root`. A target outside the root is
/// an error naming both.
pub fn resolve(
    base: &[String],
    target: &str,
    host_root: &str,
    source: &str,
) -> Result<Vec<String>, Error> {
    let outside = || {
        Error::failed(format!(
            "{source} points at {target}, outside the granted directory; grant a directory \
             that contains it"
        ))
    };
    let not_under_host_root = || {
        Error::failed(format!(
            "{source} points at {target}, which is not under host_root {host_root} (the host \
             path granted at the root): set host_root, or grant a directory that contains it"
        ))
    };
    let mut out: Vec<String>;
    let rest: Vec<&str>;
    if is_absolute_host(target) {
        let mut parts = components(target);
        for root_part in components(host_root) {
            if parts.next() != Some(root_part) {
                return Err(not_under_host_root());
            }
        }
        out = Vec::new();
        rest = parts.collect();
    } else {
        out = base.to_vec();
        rest = components(target).collect();
    }
    for part in rest {
        if part.contains('\0') {
            return Err(outside());
        }
        if part == ".." {
            out.pop().ok_or_else(outside)?;
        } else {
            out.push(part.to_owned());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn resolves_relative_targets_from_their_base() {
        let base = parts(&["wt"]);
        let r = |t: &str| resolve(&base, t, "/h/main", ".git").map_err(|e| e.message().to_owned());
        assert_eq!(r(".bare"), Ok(parts(&["wt", ".bare"])));
        assert_eq!(
            r("../.git/worktrees/wt"),
            Ok(parts(&[".git", "worktrees", "wt"]))
        );
        assert!(r("../../elsewhere").is_err_and(|m| m.contains("outside the granted")));
    }

    #[test]
    fn maps_absolute_targets_under_the_host_root() {
        let r = |t: &str| resolve(&[], t, "/h/main", ".git").ok();
        assert_eq!(
            r("/h/main/.git/worktrees/wt"),
            Some(parts(&[".git", "worktrees", "wt"]))
        );
        assert_eq!(r("/h/main2/.git"), None);
        assert_eq!(r("/h/main/../other"), None);
        assert_eq!(
            resolve(&[], r"C:\src\main\.git", r"C:\src\main", ".git").ok(),
            Some(parts(&[".git"]))
        );
    }

    #[test]
    fn validates_config_paths() {
        assert!(check_guest_root("/repo").is_ok());
        assert!(check_guest_root("repo").is_err());
        assert!(check_guest_root("/repo/..").is_err());
        assert!(check_host_root("/home/u/repo").is_ok());
        assert!(check_host_root("relative").is_err());
        assert_eq!(worktree(".").ok(), Some(Vec::new()));
        assert_eq!(worktree("wt/feature").ok(), Some(parts(&["wt", "feature"])));
        assert!(worktree("/abs").is_err());
        assert!(worktree("../x").is_err());
    }
}
