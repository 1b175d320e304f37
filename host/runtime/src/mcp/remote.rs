//! Remote MCP servers over Streamable HTTP: what reaching one needs ([`RemoteServer`]), the
//! HTTP client built for it (rustls with ring and the platform's roots, plus an optional CA
//! file), and the OAuth 2.1 client credentials grant ([`ClientCredentials`]).
//!
//! Every secret (a header value, the client secret, an access token) is a [`Secret`]: it
//! reaches the request that carries it and nothing else. Errors name the server and the
//! endpoint (without its query, which may hold a key), never a secret.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Secret;

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

/// An access token and when to fetch the next one.
pub(super) struct AccessToken {
    pub(super) value: Secret,
    /// When the token should be replaced (before it expires); `None` = it does not say.
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
        let pem = crate::fsutil::read_regular(ca, 1 << 20)
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

/// Fetch an access token with the client credentials grant, within `timeout`. The error says
/// what the authorization server answered (its `error` code), never a secret.
pub(super) async fn fetch_token(
    http: &reqwest::Client,
    grant: &ClientCredentials,
    server_url: &str,
    timeout: Duration,
) -> Result<AccessToken, String> {
    use oauth2::basic::BasicClient;
    use oauth2::{
        AuthType, ClientId, ClientSecret, RequestTokenError, Scope, TokenResponse, TokenUrl,
    };
    let token_url = TokenUrl::new(grant.token_url.clone())
        .map_err(|e| format!("token_url is not a URL: {e}"))?;
    let client = BasicClient::new(ClientId::new(grant.client_id.clone()))
        .set_client_secret(ClientSecret::new(grant.client_secret.expose().to_owned()))
        .set_token_uri(token_url)
        .set_auth_type(AuthType::BasicAuth);
    let resource = grant
        .resource
        .clone()
        .unwrap_or_else(|| server_url.to_owned());
    let request = client
        .exchange_client_credentials()
        .add_scopes(grant.scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", resource);
    let send = TokenHttp(http.clone());
    let shown = shown_url(&grant.token_url);
    let answer = tokio::time::timeout(timeout, request.request_async(&send))
        .await
        .map_err(|_| {
            format!(
                "the token endpoint {shown} did not answer within {} ms",
                timeout.as_millis()
            )
        })?;
    let token = answer.map_err(|e| match e {
        RequestTokenError::ServerResponse(r) => format!(
            "the token endpoint {shown} refused the client credentials: {}",
            r.error()
        ),
        RequestTokenError::Request(e) => format!("the token endpoint {shown}: {e}"),
        RequestTokenError::Parse(_, _) => {
            format!("the token endpoint {shown} answered something that is not a token response")
        }
        RequestTokenError::Other(e) => format!("the token endpoint {shown}: {e}"),
    })?;
    // Renewed when half its life is gone, at most 30 s before it expires (as rmcp's own
    // authorization manager does), so a request never goes out with an expiring token.
    let renew_at = token.expires_in().map(|life| {
        let early = (life / 2).min(Duration::from_secs(30));
        tokio::time::Instant::now() + life.saturating_sub(early)
    });
    Ok(AccessToken {
        value: Secret::new(token.access_token().secret().clone()),
        renew_at,
    })
}

/// The HTTP client of token requests, as oauth2 calls it (its future owns a handle on the
/// client, so it is `Send` whatever borrows it).
struct TokenHttp(reqwest::Client);

impl<'c> oauth2::AsyncHttpClient<'c> for TokenHttp {
    type Error = TokenHttpError;
    type Future = std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<oauth2::HttpResponse, TokenHttpError>>
                + Send
                + 'c,
        >,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(send_token_request(self.0.clone(), request))
    }
}

/// Why a token request could not be sent or read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct TokenHttpError(String);

/// One token request through `http`; the answer body is bounded.
async fn send_token_request(
    http: reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, TokenHttpError> {
    let (parts, body) = request.into_parts();
    let mut outgoing = http.request(parts.method, parts.uri.to_string()).body(body);
    for (name, value) in &parts.headers {
        outgoing = outgoing.header(name, value);
    }
    let answer = outgoing
        .send()
        .await
        .map_err(|e| TokenHttpError(without_url(&e)))?;
    let status = answer.status();
    let headers = answer.headers().clone();
    let mut body = Vec::new();
    let mut answer = answer;
    while let Some(chunk) = answer
        .chunk()
        .await
        .map_err(|e| TokenHttpError(without_url(&e)))?
    {
        if body.len() + chunk.len() > 64 << 10 {
            return Err(TokenHttpError(
                "the token response is larger than 64 KiB".into(),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

/// reqwest's error without the URL it carries (shown once, by the caller, without query).
fn without_url(e: &reqwest::Error) -> String {
    let mut plain = e.to_string();
    if let Some(url) = e.url() {
        plain = plain.replace(url.as_str(), "");
    }
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        plain.push_str(": ");
        plain.push_str(&cause.to_string());
        source = cause.source();
    }
    plain.replace(" ()", "").trim().to_owned()
}
