//! Path strings: validating the configured root, host root and file names, and mapping the
//! caller's `cwd` fact (a host path) onto the directories below the root. Pure string work,
//! no file system access, so every rule is tested natively.

use prompt_plugin::Error;

/// The most directory levels below the root that are searched for instruction files; a
/// deeper `cwd` is searched down to this depth only.
pub const MAX_DEPTH: usize = 64;

/// The components of `path`, split on `/` and `\` (the host may run on Windows), without
/// empty and `.` components.
fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
}

/// Whether `path` is absolute on some host: `/…`, `\…` or a drive letter `C:…`.
fn is_absolute_host(path: &str) -> bool {
    let b = path.as_bytes();
    matches!(b.first(), Some(b'/' | b'\\'))
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
}

/// A guest path (the WASI side, always `/`-separated) must be absolute and plain.
pub fn check_guest_root(root: &str) -> Result<(), Error> {
    let plain = !root.contains('\0') && root.split('/').all(|c| c != "..");
    if !root.starts_with('/') || !plain {
        return Err(Error::invalid_input(format!(
            "invalid config: root: \"{root}\" is not an absolute guest path such as \"/project\" \
             (no `..`)"
        )));
    }
    Ok(())
}

/// The host root must be absolute and plain, so that "inside the root" means something.
pub fn check_host_root(host_root: &str) -> Result<(), Error> {
    let plain = !host_root.contains('\0') && components(host_root).all(|c| c != "..");
    if !is_absolute_host(host_root) || !plain {
        return Err(Error::invalid_input(format!(
            "invalid config: host_root: \"{host_root}\" is not an absolute host path (no `..`)"
        )));
    }
    Ok(())
}

/// A file name to look for must be one plain path component.
pub fn check_name(name: &str) -> Result<(), Error> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && !name.contains(['/', '\\', '\0']);
    if !plain {
        return Err(Error::invalid_input(format!(
            "invalid config: names: \"{name}\" is not a plain file name (one path component, \
             no `/`, `\\`, `.` or `..`)"
        )));
    }
    Ok(())
}

/// The directories from the root down to `cwd`, as components below the root: empty when
/// only the root applies — no `cwd`, a relative `cwd`, a `cwd` outside `host_root`, or one
/// with `..` or NUL in the part below it (never resolved, so the walk cannot leave the root).
/// Components are compared exactly (case-sensitively), one by one, so `/repo2` is not inside
/// `/repo`.
pub fn below_root<'a>(host_root: &str, cwd: Option<&'a str>) -> Vec<&'a str> {
    let Some(cwd) = cwd.filter(|c| is_absolute_host(c)) else {
        return Vec::new();
    };
    let mut rest = components(cwd);
    for root_part in components(host_root) {
        if rest.next() != Some(root_part) {
            return Vec::new();
        }
    }
    let below: Vec<&str> = rest.take(MAX_DEPTH).collect();
    if below.iter().any(|c| *c == ".." || c.contains('\0')) {
        return Vec::new();
    }
    below
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_cwd_below_the_host_root() {
        assert_eq!(
            below_root("/home/u/repo", Some("/home/u/repo/src/app")),
            ["src", "app"]
        );
        assert_eq!(below_root("/home/u/repo/", Some("/home/u/repo")), [""; 0]);
        assert_eq!(
            below_root("/home/u/repo", Some("/home/u/repo//src/./")),
            ["src"]
        );
        assert_eq!(below_root("/", Some("/a/b")), ["a", "b"]);
        assert_eq!(
            below_root(r"C:\Users\u\repo", Some(r"C:\Users\u\repo\src")),
            ["src"]
        );
    }

    #[test]
    fn anything_else_is_only_the_root() {
        let none: [&str; 0] = [];
        assert_eq!(below_root("/home/u/repo", None), none);
        assert_eq!(below_root("/home/u/repo", Some("/home/u/repo2/src")), none);
        assert_eq!(below_root("/home/u/repo", Some("/home/u")), none);
        assert_eq!(below_root("/home/u/repo", Some("/etc")), none);
        assert_eq!(below_root("/home/u/repo", Some("src/app")), none);
        assert_eq!(
            below_root("/home/u/repo", Some("/home/u/repo/a/../../x")),
            none
        );
        assert_eq!(below_root("/repo", Some("/repo/a\0b")), none);
    }

    #[test]
    fn depth_is_capped() {
        let deep = format!("/r{}", "/d".repeat(MAX_DEPTH + 10));
        assert_eq!(below_root("/r", Some(&deep)).len(), MAX_DEPTH);
    }

    #[test]
    fn validates_config_paths_and_names() {
        assert!(check_guest_root("/project").is_ok());
        assert!(check_guest_root("project").is_err());
        assert!(check_guest_root("/project/../etc").is_err());
        assert!(check_host_root("/home/u/repo").is_ok());
        assert!(check_host_root(r"C:\repo").is_ok());
        assert!(check_host_root("repo").is_err());
        assert!(check_host_root("/a/../b").is_err());
        assert!(check_name("AGENTS.md").is_ok());
        assert!(check_name(".cursorrules").is_ok());
        for bad in ["", ".", "..", "a/b", r"a\b", "a\0"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
