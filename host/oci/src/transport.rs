//! Requests to one registry for one repository: anonymous first, authenticated once when
//! the registry asks (`401`), redirects followed by hand where a download allows them.
//!
//! The HTTP client follows no redirect by itself: each hop is checked here against the
//! rules of [`super::destination`] — HTTPS, or plain HTTP to a listed origin — and carries
//! the registry's `Authorization` only when it stays on the registry's own origin. A `401`
//! from any other origin is not answered with credentials.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode, Url};

use super::auth::{self, Credentials, TokenClient};
use super::destination::{Origin, PlainHttp};
use super::{OciError, RegistryError, RegistrySettings};

/// The most redirects followed for one request.
pub(super) const MAX_REDIRECTS: usize = 5;

/// The most headers a response may have (hyper's default is 100, which a registry behind a
/// proxy or two can approach; 10,000 is refused).
const MAX_RESPONSE_HEADERS: usize = 200;

/// The HTTP client and the rules every exchange with a registry follows.
#[derive(Debug)]
pub(super) struct Transport {
    http: reqwest::Client,
    plain_http: PlainHttp,
    /// How long an error body is waited for before what arrived is shown.
    error_wait: Duration,
}

impl Transport {
    /// The client for `settings`: rustls with ring and the platform's roots plus
    /// `ca_file`, `timeout` on each connect and each read, no redirects of its own.
    pub(super) fn new(settings: &RegistrySettings) -> Result<Self, OciError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(settings.timeout)
            .read_timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .http1_max_headers(MAX_RESPONSE_HEADERS)
            .user_agent(concat!("prompt-host/", env!("CARGO_PKG_VERSION")));
        if let Some(ca) = &settings.ca_file {
            let pem = prompt_host_core::fsutil::read_regular(ca, 1 << 20)
                .map_err(|e| OciError::Settings(format!("ca_file: {e}")))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                OciError::Settings(format!(
                    "ca_file {}: not PEM certificates: {e}",
                    ca.display()
                ))
            })?;
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder
            .build()
            .map_err(|e| OciError::Settings(format!("cannot build the registry client: {e}")))?;
        Ok(Self {
            http,
            plain_http: PlainHttp::new(&settings.plain_http),
            error_wait: settings.timeout.min(Duration::from_secs(5)),
        })
    }
}

/// What a request is.
pub(super) struct Ask<'a> {
    pub(super) method: Method,
    pub(super) url: Url,
    pub(super) accept: Option<&'static str>,
    pub(super) content_type: Option<&'static str>,
    pub(super) body: Option<&'a [u8]>,
    /// Whether redirects are followed (downloads); an upload's redirect is answered as is.
    pub(super) follow: bool,
    /// What it is, for messages: "the manifest request", "the component download".
    pub(super) what: &'static str,
}

/// The exchanges of one operation with one registry's repository, holding the
/// `Authorization` obtained for it.
pub(super) struct Session {
    transport: Arc<Transport>,
    registry: String,
    origin: Origin,
    base: Url,
    scope: String,
    credentials: Credentials,
    authorization: Option<HeaderValue>,
    challenged: bool,
}

impl Session {
    /// A session with `registry` (`host[:port]`) for `repository`, asking `access`
    /// (`pull` or `pull,push`) when it must authenticate.
    pub(super) fn new(
        transport: Arc<Transport>,
        registry: &str,
        repository: &str,
        access: &str,
        credentials: Credentials,
    ) -> Result<Self, RegistryError> {
        let scheme = if transport.plain_http.lists(registry) {
            "http"
        } else {
            "https"
        };
        let bad = || RegistryError::Unreachable {
            registry: registry.to_owned(),
            cause: "not a host name and port".into(),
        };
        let base =
            Url::parse(&format!("{scheme}://{registry}/v2/{repository}/")).map_err(|_| bad())?;
        let origin = Origin::of(&base).ok_or_else(bad)?;
        Ok(Self {
            transport,
            registry: registry.to_owned(),
            origin,
            base,
            scope: format!("repository:{repository}:{access}"),
            credentials,
            authorization: None,
            challenged: false,
        })
    }

    /// `host[:port]`.
    pub(super) fn registry(&self) -> &str {
        &self.registry
    }

    /// How long an error body is waited for.
    pub(super) fn error_wait(&self) -> Duration {
        self.transport.error_wait
    }

    /// `…/v2/REPOSITORY/` followed by `path` (`manifests/1.0`, `blobs/sha256:…`).
    pub(super) fn url(&self, path: &str) -> Result<Url, RegistryError> {
        self.base
            .join(path)
            .map_err(|_| RegistryError::Unreachable {
                registry: self.registry.clone(),
                cause: format!("cannot make a URL of {}", prompt_host_peer::shown(path)),
            })
    }

    /// Check a URL the registry named as `role` (an upload location), relative to `from`.
    pub(super) fn named_url(
        &self,
        from: &Url,
        location: &HeaderValue,
        role: &'static str,
    ) -> Result<Url, RegistryError> {
        let joined = location
            .to_str()
            .ok()
            .and_then(|l| from.join(l).ok())
            .ok_or_else(|| RegistryError::Destination {
                registry: self.registry.clone(),
                role,
                url: prompt_host_peer::shown_bytes(location.as_bytes()),
                why: "which is not a URL".into(),
            })?;
        self.transport
            .plain_http
            .check(joined, &self.registry, role)
    }

    /// Send `ask`: anonymously or with the session's authorization; once more with one
    /// obtained when the registry's own origin answers `401`; following redirects when
    /// `ask.follow`. The response is whatever came last (its status is the caller's).
    pub(super) async fn send(&mut self, ask: &Ask<'_>) -> Result<reqwest::Response, RegistryError> {
        let mut url = ask.url.clone();
        let mut hops = 0;
        loop {
            let own = Origin::of(&url).as_ref() == Some(&self.origin);
            let mut request = self.transport.http.request(ask.method.clone(), url.clone());
            if let Some(accept) = ask.accept {
                request = request.header(ACCEPT, accept);
            }
            if let Some(content_type) = ask.content_type {
                request = request.header(CONTENT_TYPE, content_type);
            }
            if let (true, Some(authorization)) = (own, &self.authorization) {
                request = request.header(AUTHORIZATION, authorization.clone());
            }
            if let Some(body) = ask.body {
                request = request.body(body.to_vec());
            }
            let response = request.send().await.map_err(|e| {
                // Only the registry's own HTTPS origin is named as answering in plain HTTP:
                // listing the registry in plain_http fixes that, and nothing elsewhere.
                if own && url.scheme() == "https" {
                    RegistryError::unreachable_over_https(&self.registry, &e)
                } else {
                    RegistryError::unreachable(&self.registry, &e)
                }
            })?;
            let status = response.status();
            if status == StatusCode::UNAUTHORIZED && own && !self.challenged {
                self.challenged = true;
                let challenges = auth::challenges(response.headers());
                drop(response);
                let client = TokenClient {
                    http: &self.transport.http,
                    plain_http: &self.transport.plain_http,
                    registry: &self.registry,
                    scope: self.scope.clone(),
                    error_wait: self.transport.error_wait,
                };
                self.authorization =
                    Some(auth::authorization(&client, &challenges, &self.credentials).await?);
                continue;
            }
            let redirect = matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308);
            if !(redirect && ask.follow) {
                return Ok(response);
            }
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(RegistryError::TooManyRedirects {
                    registry: self.registry.clone(),
                    what: ask.what,
                    hops: MAX_REDIRECTS,
                });
            }
            let Some(location) = response.headers().get(LOCATION) else {
                return Err(RegistryError::NoLocation {
                    registry: self.registry.clone(),
                    what: ask.what,
                    status: status.as_u16(),
                });
            };
            url = self.named_url(&url, location, "redirects to")?;
        }
    }
}
