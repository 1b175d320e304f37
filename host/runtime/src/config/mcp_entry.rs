//! `[[mcp]]` entries: an MCP server over stdio (`command`) or over Streamable HTTP (`url`),
//! and what is checked of them at load. Secrets in `headers` and `[mcp.oauth]` are only
//! checked for their `${env:NAME}` references here; their values are read when the host
//! starts ([`crate::mcp::resolve_secret`]) and never shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::empty_table;

/// One `[[mcp]]` entry: an MCP server spawned over stdio (`command`) or reached over
/// Streamable HTTP (`url`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Server name (`^[A-Za-z0-9_-]{1,32}$`), unique across the file.
    pub name: String,
    /// The program to run, for a server over stdio; exactly one of `command` and `url`.
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment for the server process.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The endpoint of a remote server (Streamable HTTP, `http://` or `https://`).
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP headers sent with every request to `url`. A value may name environment
    /// variables as `${env:NAME}` (read when the host starts); values are secrets: never
    /// printed, logged or put in a prompt.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A PEM file of CA certificates trusted for `url` besides the platform's roots.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Bound on opening a connection to `url`, in milliseconds.
    #[serde(default = "default_mcp_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// How long an idle connection to `url` is kept for the next request, in milliseconds.
    #[serde(default = "default_mcp_idle_timeout_ms")]
    pub idle_timeout_ms: u64,
    /// OAuth 2.1 client credentials for `url`: the token is fetched, sent as a bearer token
    /// and fetched again before it expires.
    #[serde(default)]
    pub oauth: Option<McpOAuthConfig>,
    /// Which lifecycle to speak: `auto` (the 2026-07-28 `server/discover`, falling back to
    /// `initialize` as the specification says), `discover` or `initialize`.
    #[serde(default)]
    pub lifecycle: McpLifecycleConfig,
    /// Whether the server's instructions reach the prompt; `false` keeps its tools only.
    #[serde(default = "yes")]
    pub instructions: bool,
    /// The scope its contributions land in; absent = global.
    #[serde(default)]
    pub scope: Option<String>,
    /// The instruction-provider plugin for this server, replacing `[host] mcp_provider`.
    /// One of the two must be set.
    #[serde(default)]
    pub provider: Option<PathBuf>,
    /// Handed to the provider plugin's `init` as JSON.
    #[serde(default = "empty_table")]
    pub config: toml::Table,
    /// Timeout for each request to the server (`initialize`, `server/discover`, each
    /// `tools/list` page), in milliseconds.
    #[serde(default = "default_mcp_timeout_ms")]
    pub timeout_ms: u64,
    /// The most tokens of the server's instructions kept in the prompt, counted with
    /// `[prompt] tokenizer`; a longer text is cut, and the prompt says so.
    #[serde(default)]
    pub max_instruction_tokens: Option<usize>,
    /// How long, from the host's start, an assembly that sees the server waits for its
    /// first generation, in milliseconds; 0: not at all; absent: twice `timeout_ms` plus
    /// two seconds (see [`crate::mcp::StartWait`]).
    #[serde(default)]
    pub start_wait_ms: Option<u64>,
    /// Whether an assembly that sees the server fails when it has published nothing by the
    /// end of its start wait, instead of going on without it.
    #[serde(default)]
    pub required: bool,
}

/// `[mcp.oauth]`: the OAuth 2.1 client credentials grant.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthConfig {
    /// The authorization server's token endpoint (`https://`, or `http://` on loopback).
    pub token_url: String,
    /// The client's id.
    pub client_id: String,
    /// The client's secret; `${env:NAME}` as in `headers`. A secret: never printed.
    pub client_secret: String,
    /// The scopes asked for, space-separated as OAuth writes them.
    #[serde(default)]
    pub scope: Option<String>,
    /// The resource the token is for (RFC 8707); default: the server's `url`.
    #[serde(default)]
    pub resource: Option<String>,
}

/// `[[mcp]] lifecycle`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpLifecycleConfig {
    /// `server/discover` first; `initialize` when the server does not know it.
    #[default]
    Auto,
    /// Only `server/discover` (the 2026-07-28 revision).
    Discover,
    /// Only `initialize` (2025-11-25 and earlier).
    Initialize,
}

pub(super) fn yes() -> bool {
    true
}

fn default_mcp_idle_timeout_ms() -> u64 {
    90_000
}

fn default_mcp_timeout_ms() -> u64 {
    10_000
}

/// Headers the transport sets itself: a configured one would break the protocol.
const RESERVED_HEADERS: [&str; 7] = [
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Check entry `i` (its endpoint, headers, secrets and CA file; relative paths resolved
/// against `base`): `(key, message)` for the first problem.
pub(super) fn check(i: usize, mcp: &mut McpConfig, base: &Path) -> Result<(), (String, String)> {
    let key = |field: &str| format!("mcp[{i}].{field}");
    match (&mcp.command, &mcp.url) {
        (Some(_), Some(_)) => {
            return Err((
                key("url"),
                "expected `command` (a server over stdio) or `url` (a remote server), not both"
                    .into(),
            ))
        }
        (None, None) => {
            return Err((
                key("command"),
                format!(
                    "MCP server \"{}\" needs `command` (a server over stdio) or `url` (a remote server over Streamable HTTP)",
                    mcp.name
                ),
            ))
        }
        (Some(_), None) => {
            let remote_only = [
                ("headers", !mcp.headers.is_empty()),
                ("ca_file", mcp.ca_file.is_some()),
                ("oauth", mcp.oauth.is_some()),
            ];
            if let Some((field, _)) = remote_only.iter().find(|(_, set)| *set) {
                return Err((key(field), "only a remote server (`url`) takes this".into()));
            }
        }
        (None, Some(url)) => {
            check_url(url, "the server's endpoint").map_err(|m| (key("url"), m))?;
            if !mcp.args.is_empty() || !mcp.env.is_empty() {
                let field = if mcp.args.is_empty() { "env" } else { "args" };
                return Err((key(field), "only a server over stdio (`command`) takes this".into()));
            }
        }
    }
    for (name, value) in &mcp.headers {
        let at = || key(&format!("headers.{name}"));
        if !valid_header_name(name) {
            return Err((
                at(),
                "expected an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)".into(),
            ));
        }
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err((
                at(),
                "this header is set by the MCP transport itself".into(),
            ));
        }
        if mcp.oauth.is_some() && name.eq_ignore_ascii_case("authorization") {
            return Err((
                at(),
                "[mcp.oauth] sets Authorization; remove one of them".into(),
            ));
        }
        check_secret(value).map_err(|m| (at(), m))?;
    }
    if let Some(oauth) = &mcp.oauth {
        check_url(&oauth.token_url, "the token endpoint")
            .map_err(|m| (key("oauth.token_url"), m))?;
        check_secret(&oauth.client_secret).map_err(|m| (key("oauth.client_secret"), m))?;
        if oauth.client_id.is_empty() {
            return Err((key("oauth.client_id"), "expected the client's id".into()));
        }
    }
    if let Some(ca) = &mcp.ca_file {
        let ca = base.join(ca);
        if !ca.is_file() {
            return Err((
                key("ca_file"),
                format!("{}: expected a PEM file of CA certificates", ca.display()),
            ));
        }
        mcp.ca_file = Some(ca);
    }
    for (field, ms) in [
        ("timeout_ms", mcp.timeout_ms),
        ("connect_timeout_ms", mcp.connect_timeout_ms),
        ("idle_timeout_ms", mcp.idle_timeout_ms),
    ] {
        if ms == 0 {
            return Err((key(field), "expected at least 1 millisecond".into()));
        }
    }
    let most = crate::mcp::MAX_START_WAIT.as_millis();
    if mcp.start_wait_ms.is_some_and(|ms| u128::from(ms) > most) {
        return Err((
            key("start_wait_ms"),
            format!("expected at most {most} (an hour)"),
        ));
    }
    Ok(())
}

/// `https://…`, or `http://…` on a loopback host (a bearer token must not cross a network
/// in clear text); no credentials in the URL itself (they would show wherever it is shown).
pub(crate) fn check_url(text: &str, what: &str) -> Result<(), String> {
    let url = url::Url::parse(text).map_err(|e| format!("expected {what} as a URL: {e}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "{what} must not carry credentials; put them in `headers` or [mcp.oauth]"
        ));
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => Err(format!(
            "{what} is plain http on a host that is not loopback; use https:// (secrets would cross the network in clear text)"
        )),
        other => Err(format!("expected {what} as an http(s) URL, got scheme \"{other}\"")),
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A value with `${env:NAME}` references: each well formed (any other `${` is refused, so a
/// typo is not sent as text).
fn check_secret(value: &str) -> Result<(), String> {
    crate::mcp::resolve_secret(value, |_| Some(String::new())).map(|_| ())
}
