//! Remote MCP servers over Streamable HTTP: what reaching one needs ([`RemoteServer`]), the
//! HTTP client built for it (rustls with ring and the platform's roots, plus an optional CA
//! file, following no redirect), and the OAuth 2.1 client credentials grant
//! ([`ClientCredentials`], fetched in [`token`]).
//!
//! Every secret (a header value, the client secret, an access token) is a [`Secret`]: it
//! reaches the request that carries it and nothing else. Errors name the server and the
//! endpoint (without its query, which may hold a key), never a secret.

mod token;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Secret;

pub(super) use token::fetch_token;

/// Most bytes of one JSON answer (or one SSE event) a remote server may send: a list or a
/// discover result larger than this is refused as a failure of that server, not held in
/// memory. Instructions longer than a prompt can use are cut by the budget anyway.
pub const MAX_ANSWER_BYTES: usize = 4 << 20;

/// How to reach a remote MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteServer {
    /// The endpoint (`https://…`, or `http://` on loopback).
    pub url: String,
    /// Headers sent with every request, their values resolved.
    pub headers: Vec<(String, Secret)>,
    /// A PEM file of CA certificates trusted besides the platform's roots.
    pub ca_file: Option<PathBuf>,
    /// Bound on opening a connection.
    pub connect_timeout: Duration,
    /// How long an idle connection is kept.
    pub idle_timeout: Duration,
    /// OAuth 2.1 client credentials, when the server wants a bearer token.
    pub oauth: Option<ClientCredentials>,
}

impl RemoteServer {
    /// The server at `url`, no headers, default timeouts (10 s to connect, 90 s idle).
    pub fn new(url: impl Into<String>) -> Self {
        RemoteServer {
            url: url.into(),
            headers: Vec::new(),
            ca_file: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(90),
            oauth: None,
        }
    }

    /// Adds a header sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: Secret) -> Self {
        self.headers.push((name.into(), value));
        self
    }

    /// Sets [`RemoteServer::oauth`].
    pub fn oauth(mut self, value: ClientCredentials) -> Self {
        self.oauth = Some(value);
        self
    }

    /// Sets [`RemoteServer::ca_file`].
    pub fn ca_file(mut self, value: impl Into<PathBuf>) -> Self {
        self.ca_file = Some(value.into());
        self
    }

    /// Sets [`RemoteServer::connect_timeout`] and [`RemoteServer::idle_timeout`].
    pub fn timeouts(mut self, connect: Duration, idle: Duration) -> Self {
        self.connect_timeout = connect;
        self.idle_timeout = idle;
        self
    }

    /// The endpoint as messages show it: without query or fragment (they may hold a key).
    pub fn shown_url(&self) -> String {
        shown_url(&self.url)
    }
}

/// `url` without its query and fragment.
pub(crate) fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            let _ = parsed.set_password(None);
            let _ = parsed.set_username("");
            parsed.to_string()
        }
        Err(_) => "(not a URL)".into(),
    }
}

/// The OAuth 2.1 client credentials grant (RFC 6749 §4.4) at a configured token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCredentials {
    /// The authorization server's token endpoint.
    pub token_url: String,
    /// The client's id.
    pub client_id: String,
    /// The client's secret.
    pub client_secret: Secret,
    /// Scopes asked for.
    pub scopes: Vec<String>,
    /// The resource the token is for (RFC 8707); `None` = the server's own URL.
    pub resource: Option<String>,
}

impl ClientCredentials {
    /// Credentials for `client_id` at `token_url`, no scopes, the resource the server's URL.
    pub fn new(
        token_url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Secret,
    ) -> Self {
        ClientCredentials {
            token_url: token_url.into(),
            client_id: client_id.into(),
            client_secret,
            scopes: Vec::new(),
            resource: None,
        }
    }
}

/// Whether `url` may carry secrets: `https://`, or `http://` on a loopback host (what
/// host.toml's check asks too; a spec built in code is checked here, before anything is
/// sent). `what` names the endpoint in the error.
pub(super) fn check_endpoint(url: &str, what: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{what} is not a URL: {e}"))?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => Err(format!(
            "{what} is plain http on a host that is not loopback; use https:// (secrets would cross the network in clear text)"
        )),
        other => Err(format!(
            "{what} is not an http(s) URL (scheme \"{}\")",
            prompt_host_peer::shown(other)
        )),
    }
}

/// An access token and when to fetch the next one.
pub(super) struct AccessToken {
    pub(super) value: Secret,
    /// When the token should be replaced (before it expires, or a day after it was fetched
    /// when it does not say); `None` only when that instant cannot be represented.
    pub(super) renew_at: Option<tokio::time::Instant>,
}

/// The HTTP client for `remote`: rustls with ring (installed as the process's provider when
/// none is, since reqwest needs one), the platform's roots plus `ca_file`, the connect and
/// idle timeouts, and no redirects (a redirect could carry the headers elsewhere).
pub(super) fn http_client(remote: &RemoteServer) -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .connect_timeout(remote.connect_timeout)
        .pool_idle_timeout(remote.idle_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("prompt-host/", env!("CARGO_PKG_VERSION")));
    if let Some(ca) = &remote.ca_file {
        let pem = prompt_host_core::fsutil::read_regular(ca, 1 << 20)
            .map_err(|e| format!("cannot read ca_file: {e}"))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| format!("ca_file {}: not PEM certificates: {e}", ca.display()))?;
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// The transport's configuration: the endpoint, the headers, the bearer token, the answer
/// limits and a bounded retry of server-sent-event streams.
pub(super) fn transport_config(
    remote: &RemoteServer,
    token: Option<&AccessToken>,
) -> Result<rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig, String> {
    use rmcp::transport::common::client_side_sse::ExponentialBackoff;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut headers = std::collections::HashMap::new();
    for (name, value) in &remote.headers {
        let name = http::HeaderName::try_from(name.as_str())
            .map_err(|_| format!("header {name}: not a header name"))?;
        let mut value = http::HeaderValue::from_str(value.expose())
            .map_err(|_| format!("header {name}: its value is not valid in a header"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(remote.url.as_str())
        .custom_headers(headers)
        .max_json_response_size(MAX_ANSWER_BYTES)
        .max_sse_event_size(MAX_ANSWER_BYTES);
    if let Some(token) = token {
        config = config.auth_header(token.value.expose().to_owned());
    }
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(3);
    retry.base_duration = Duration::from_millis(500);
    retry.max_delay = Some(Duration::from_secs(5));
    config.retry_config = Arc::new(retry);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_go_over_https_or_to_loopback_only() {
        for fine in [
            "https://auth.example.com/token",
            "http://127.0.0.1:8080/token",
            "http://localhost/token",
            "http://[::1]:9/token",
        ] {
            assert_eq!(check_endpoint(fine, "the token endpoint"), Ok(()), "{fine}");
        }
        assert_eq!(
            check_endpoint("http://auth.example.com/token", "the token endpoint"),
            Err("the token endpoint is plain http on a host that is not loopback; use https:// (secrets would cross the network in clear text)".into())
        );
        assert_eq!(
            check_endpoint("ftp://auth.example.com/token", "the token endpoint"),
            Err("the token endpoint is not an http(s) URL (scheme \"ftp\")".into())
        );
    }

    #[test]
    fn an_endpoint_is_shown_without_credentials_or_query() {
        assert_eq!(
            shown_url("https://u:p@h.example/mcp?key=s3cr3t#f"),
            "https://h.example/mcp"
        );
    }
}
