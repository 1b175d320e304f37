//! Capabilities an operator grants one plugin, deny by default: read-only directories
//! (a host directory mounted at a guest path) and an allow-list of environment variables
//! (values read when the plugin is loaded). Nothing else can be granted: no writes, no
//! network, no processes. How the sandbox enforces them: `wasm/sandbox/grants.rs`.
//!
//! Each granted directory is opened once, when the plugin is loaded ([`Grants::open`]), and
//! every instance gets that handle (see `files.rs`). A grant checked by [`Grants::resolve`]
//! (host.toml's, `serve`'s) is opened without following a symbolic link anywhere in its
//! canonical path: a directory replaced by a link between the check and the load is refused,
//! not followed to wherever the link points. Inside it, paths are resolved beneath the
//! handle (`..` and symlinks that lead out are refused), the read-only permissions refuse
//! writes, creates, renames and deletes, and `files.rs` opens without blocking and refuses
//! anything but regular files and directories (a FIFO would block the host). Every read is
//! at most 64 KiB and every directory entry is read by a call of its own, so a huge file or
//! directory is read in many calls, each returning to Wasm where the call's deadline is
//! enforced.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::PolicyError;

/// What a plugin is granted (host.toml: `grants = { dirs = [...], env = [...] }`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Grants {
    /// Directories the plugin may read.
    pub dirs: Vec<DirGrant>,
    /// Environment variables the plugin may read (their values when it is loaded).
    pub env: Vec<String>,
}

/// One read-only directory grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct DirGrant {
    /// The host directory (relative paths in host.toml are relative to the file).
    pub host: PathBuf,
    /// Where the plugin sees it: an absolute guest path such as `/project`.
    pub guest: String,
    /// Whether [`Grants::resolve`] made `host` canonical, so that it is opened without
    /// following a symbolic link (one in its path was put there after the check).
    #[serde(skip)]
    pub(crate) checked: bool,
}

impl Grants {
    /// Whether nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.env.is_empty()
    }

    /// Check the grants and resolve host paths against `base`: each host path must be an
    /// existing directory (it is canonicalised, so the grant is what the operator sees, and
    /// opened at load without following a symbolic link put in its path since), each guest
    /// path absolute, without `.`/`..` and not granted twice, each variable name non-empty
    /// without `=` or NUL. The error names the key (`dirs[0].host`) and what is wrong.
    pub fn resolve(&self, base: &Path) -> Result<Grants, PolicyError> {
        let mut dirs = Vec::with_capacity(self.dirs.len());
        for (i, grant) in self.dirs.iter().enumerate() {
            let host = base.join(&grant.host);
            let host = std::fs::canonicalize(&host).map_err(|e| {
                PolicyError::new(
                    format!("dirs[{i}].host"),
                    format!("{}: {e}", host.display()),
                )
            })?;
            if !host.is_dir() {
                return Err(PolicyError::new(
                    format!("dirs[{i}].host"),
                    format!("{} is not a directory", host.display()),
                ));
            }
            // Segment by segment: `Path::components` would quietly drop a `.`.
            let clean = grant.guest.starts_with('/')
                && grant
                    .guest
                    .split('/')
                    .skip(1)
                    .all(|segment| !matches!(segment, "." | ".."))
                && Path::new(&grant.guest)
                    .components()
                    .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
            if !clean {
                return Err(PolicyError::new(
                    format!("dirs[{i}].guest"),
                    format!(
                        "expected an absolute guest path without `.` or `..`, such as \"/project\"; got \"{}\"",
                        grant.guest
                    ),
                ));
            }
            if dirs.iter().any(|d: &DirGrant| d.guest == grant.guest) {
                return Err(PolicyError::new(
                    format!("dirs[{i}].guest"),
                    format!("\"{}\" is granted twice", grant.guest),
                ));
            }
            dirs.push(DirGrant {
                checked: true,
                ..DirGrant::new(host, grant.guest.clone())
            });
        }
        for (i, name) in self.env.iter().enumerate() {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(PolicyError::new(
                    format!("env[{i}]"),
                    format!("expected an environment variable name, got \"{name}\""),
                ));
            }
        }
        Ok(Grants {
            dirs,
            env: self.env.clone(),
        })
    }

    /// The granted variables that are set, with their values now.
    pub(crate) fn env_values(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter_map(|name| Some((name.clone(), std::env::var(name).ok()?)))
            .collect()
    }

    /// One line for operators: `read-only /repo at /project; env HOME, LANG` or `none`.
    pub fn describe(&self) -> String {
        if self.is_empty() {
            return "none".to_string();
        }
        let mut parts: Vec<String> = self
            .dirs
            .iter()
            .map(|d| format!("read-only {} at {}", d.host.display(), d.guest))
            .collect();
        if !self.env.is_empty() {
            parts.push(format!("env {}", self.env.join(", ")));
        }
        parts.join("; ")
    }
}

impl Grants {
    /// Nothing granted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also grant the directory `dir`.
    pub fn dir(mut self, dir: DirGrant) -> Self {
        self.dirs.push(dir);
        self
    }

    /// Also grant the environment variable `name`.
    pub fn env(mut self, name: impl Into<String>) -> Self {
        self.env.push(name.into());
        self
    }
}

impl DirGrant {
    /// The host directory `host`, seen by the plugin at `guest`.
    pub fn new(host: impl Into<PathBuf>, guest: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            guest: guest.into(),
            checked: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_checked_by_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("repo")).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        let grant = |host: &str, guest: &str| Grants {
            dirs: vec![DirGrant::new(host, guest)],
            env: Vec::new(),
        };
        let ok = grant("repo", "/project").resolve(dir.path()).unwrap();
        assert_eq!(
            ok.dirs[0].host,
            dir.path().join("repo").canonicalize().unwrap()
        );
        assert_eq!(
            ok.describe(),
            format!("read-only {} at /project", ok.dirs[0].host.display())
        );
        for (host, guest, key) in [
            ("missing", "/p", "dirs[0].host"),
            ("file", "/p", "dirs[0].host"),
            ("repo", "project", "dirs[0].guest"),
            ("repo", "/a/../b", "dirs[0].guest"),
            ("repo", "/a/./b", "dirs[0].guest"),
        ] {
            let e = grant(host, guest).resolve(dir.path()).unwrap_err();
            assert_eq!(e.key, key, "{host} {guest}: {}", e.message);
        }
        let env = Grants {
            dirs: Vec::new(),
            env: vec!["A=B".into()],
        };
        assert_eq!(env.resolve(dir.path()).unwrap_err().key, "env[0]");
        assert_eq!(Grants::default().describe(), "none");
    }
}
