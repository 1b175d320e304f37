//! Capabilities an operator grants one plugin, deny by default: read-only directories
//! (a host directory mounted at a guest path), an allow-list of environment variables
//! (values read when the plugin is loaded), and origins it may send HTTP requests to, each
//! with the headers — secrets by reference — the host adds to them (`wasm/egress.rs`).
//! Nothing else can be granted: no writes, no sockets, no processes. How the sandbox
//! enforces them: `wasm/sandbox/grants.rs`.
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

use std::collections::BTreeMap;
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
    /// Origins the plugin may send HTTP requests to (`wasi:http`); none: every request is
    /// refused.
    pub http: Vec<OriginGrant>,
}

/// One origin a plugin may send HTTP requests to (host.toml:
/// `http = [{ origin = "https://docs.example.com", headers = { authorization = "Bearer ${env:DOCS_TOKEN}" } }]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OriginGrant {
    /// `https://HOST[:PORT]`; `http://` only for `localhost` and loopback addresses;
    /// `https://*.DOMAIN` for every host under a domain. A granted name may reach public
    /// addresses only; an address written here is reached as written.
    pub origin: String,
    /// Headers the host adds to every request to the origin, replacing the plugin's of the
    /// same name. A value's `${env:NAME}` is read when the plugin is loaded; the plugin never
    /// sees it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// PEM certificates trusted for this origin besides the platform's (relative paths in
    /// host.toml are relative to the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

impl OriginGrant {
    /// A grant of `origin`, with no headers.
    pub fn new(origin: impl Into<String>) -> Self {
        Self {
            origin: origin.into(),
            headers: BTreeMap::new(),
            ca_file: None,
        }
    }

    /// Also add the header `name` with `value` (which may hold `${env:NAME}`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Also trust the PEM certificates of `path` for this origin.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(path.into());
        self
    }
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
        self.dirs.is_empty() && self.env.is_empty() && self.http.is_empty()
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
        let mut http = Vec::with_capacity(self.http.len());
        for (i, grant) in self.http.iter().enumerate() {
            http.push(resolve_origin(i, grant, base)?);
        }
        Ok(Grants {
            dirs,
            env: self.env.clone(),
            http,
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
        for grant in &self.http {
            let mut part = format!("http {}", grant.origin);
            if !grant.headers.is_empty() {
                let names: Vec<&str> = grant.headers.keys().map(String::as_str).collect();
                part.push_str(&format!(" (adds {})", names.join(", ")));
            }
            parts.push(part);
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

    /// Also grant HTTP requests to an origin.
    pub fn http(mut self, grant: OriginGrant) -> Self {
        self.http.push(grant);
        self
    }
}

/// `grants.http[i]` checked: the origin's form, the headers' names and references (not
/// their values: variables are read when the plugin is loaded), `ca_file` against `base`.
#[cfg(feature = "http")]
fn resolve_origin(i: usize, grant: &OriginGrant, base: &Path) -> Result<OriginGrant, PolicyError> {
    let headers = grant.headers.iter().map(|(n, v)| (n.clone(), v.clone()));
    prompt_host_peer::egress::HttpGrant::new(&grant.origin, headers, |_| Some(String::new()))
        .map_err(|e| PolicyError::new(format!("http[{i}].{}", e.key), e.why))?;
    Ok(OriginGrant {
        ca_file: grant.ca_file.as_ref().map(|ca| base.join(ca)),
        ..grant.clone()
    })
}

/// Without the `http` feature, any origin granted is refused, never ignored.
#[cfg(not(feature = "http"))]
fn resolve_origin(i: usize, _: &OriginGrant, _: &Path) -> Result<OriginGrant, PolicyError> {
    Err(PolicyError::new(
        format!("http[{i}]"),
        crate::feature::Feature::Http.to_string(),
    ))
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
            ..Grants::default()
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
        let env = Grants::new().env("A=B");
        assert_eq!(env.resolve(dir.path()).unwrap_err().key, "env[0]");
        assert_eq!(Grants::default().describe(), "none");
    }

    #[cfg(feature = "http")]
    #[test]
    fn origins_are_checked_by_key_and_described_without_values() {
        let dir = tempfile::tempdir().unwrap();
        let grants = Grants::new().http(
            OriginGrant::new("https://docs.example.com")
                .header(
                    "authorization",
                    "Bearer ${env:PROMPT_HOST_TEST_UNSET_TOKEN}",
                )
                .ca_file("ca.pem"),
        );
        // Variables are read when the plugin is loaded, not when the grant is checked.
        let ok = grants.resolve(dir.path()).unwrap();
        assert_eq!(
            ok.http[0].ca_file.as_deref(),
            Some(dir.path().join("ca.pem").as_path())
        );
        assert_eq!(
            ok.describe(),
            "http https://docs.example.com (adds authorization)"
        );
        for (grant, expected) in [
            (
                OriginGrant::new("http://docs.example.com"),
                "http[0].origin: `http://docs.example.com`: plain http:// is granted only for localhost and loopback addresses; use https://",
            ),
            (
                OriginGrant::new("https://docs.example.com").header("host", "x"),
                "http[0].headers.host: `host` is set by the host's HTTP client, not by a grant",
            ),
            (
                OriginGrant::new("https://docs.example.com").header("x-key", "${KEY}"),
                "http[0].headers.x-key: `${KEY}` is not a reference this host knows: write ${env:NAME}",
            ),
        ] {
            let err = Grants::new().http(grant).resolve(dir.path()).unwrap_err();
            assert_eq!(err.to_string(), expected);
        }
    }
}
