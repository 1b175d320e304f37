//! What went wrong in an exchange with a registry or its token service, typed.
//!
//! Every text a peer chose (a body, a header, a media type, a URL it named) is in here only
//! as [`prompt_host_peer::shown`] made it: escaped and capped. The causes are displayed in the
//! message rather than returned as sources, because the command line and `serve`'s answers
//! print an error one way or the other, never both.

use thiserror::Error;

use prompt_host_peer::BodyError;

/// Why an exchange with a registry failed. The reference it was about is named by the
/// [`super::OciError::Registry`] that carries it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No connection, or the connection failed (a per-read timeout included).
    #[error("cannot reach the registry {registry}: {cause}")]
    Unreachable {
        /// `host[:port]`.
        registry: String,
        /// The innermost cause, shown.
        cause: String,
    },
    /// The registry answered the TLS handshake in plain HTTP: it serves `http://`, and is
    /// not in `plain_http`. Named apart from [`RegistryError::Unreachable`] because the
    /// TLS library's words for it ("received corrupt message of type InvalidContentType")
    /// do not say what to change.
    #[error("cannot reach the registry {registry} over HTTPS: it answered in plain HTTP; {}", plain_http_fix(.registry))]
    PlainHttp {
        /// `host[:port]`.
        registry: String,
    },
    /// The whole exchange took longer than `total_timeout_ms`.
    #[error(
        "{operation} did not complete within total_timeout_ms = {limit_ms} (the whole exchange with the registry {registry}); stopped"
    )]
    TimedOut {
        /// "the pull", "resolving the tag", "the push".
        operation: &'static str,
        /// `host[:port]`.
        registry: String,
        /// The bound, in milliseconds.
        limit_ms: u128,
    },
    /// The tag is not in the repository.
    #[error("the registry has no tag \"{tag}\" in {repository}")]
    NoTag {
        /// The tag.
        tag: String,
        /// The repository.
        repository: String,
    },
    /// The manifest digest is not in the repository.
    #[error("the registry has no such manifest in {repository}")]
    NoManifest {
        /// The repository.
        repository: String,
    },
    /// The component blob is not in the repository.
    #[error("the registry has no blob {digest} in {repository}")]
    NoBlob {
        /// The blob's digest.
        digest: String,
        /// The repository.
        repository: String,
    },
    /// 401 or 403 once the credentials (or none) were offered.
    #[error("the registry refused the credentials (or their absence) for {registry}")]
    Refused {
        /// `host[:port]`.
        registry: String,
    },
    /// Any other status where a success was expected.
    #[error("the registry {registry} answered {what} with HTTP {status}{detail}")]
    Status {
        /// `host[:port]`.
        registry: String,
        /// "the manifest request", "the upload", …
        what: &'static str,
        /// The status code.
        status: u16,
        /// `: ` and the body (or the OCI error it holds), shown; empty when it had none.
        detail: String,
    },
    /// A body larger than its bound, or cut off.
    #[error("{0}")]
    Body(BodyError),
    /// More component bytes than the manifest declares.
    #[error("the registry sent more than the {declared} bytes the manifest declares")]
    BlobTooLarge {
        /// The layer's size in the manifest.
        declared: u64,
    },
    /// Bytes that do not hash to the digest they were asked by.
    #[error(
        "the registry sent bytes that do not match their digest: {what} should hash to {expected}, the bytes hash to {actual}"
    )]
    DigestMismatch {
        /// "the component".
        what: &'static str,
        /// The digest asked for.
        expected: String,
        /// The digest of the bytes.
        actual: String,
    },
    /// A URL the registry named (a redirect, a token service, an upload location) that the
    /// host does not contact: plain HTTP to a host not in `plain_http`, or not HTTP at all.
    #[error("the registry {registry} {role} {url}, {why}; not contacted")]
    Destination {
        /// `host[:port]`.
        registry: String,
        /// "redirects to", "names the token service", "names the upload location".
        role: &'static str,
        /// The URL, shown, without its query.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A redirect chain longer than the host follows.
    #[error("the registry {registry} redirected {what} more than {hops} times; stopped")]
    TooManyRedirects {
        /// `host[:port]`.
        registry: String,
        /// "the manifest request", "the component download".
        what: &'static str,
        /// The most redirects followed.
        hops: usize,
    },
    /// A redirect or an accepted upload without a usable `Location`.
    #[error("the registry {registry} answered {what} with HTTP {status} and no usable Location")]
    NoLocation {
        /// `host[:port]`.
        registry: String,
        /// "the upload".
        what: &'static str,
        /// The status code.
        status: u16,
    },
    /// The registry asks for authentication in a way the host cannot give.
    #[error("the registry {registry} asks for authentication this host cannot give: {detail}")]
    Challenge {
        /// `host[:port]`.
        registry: String,
        /// The challenge, shown, or what is missing from it.
        detail: String,
    },
    /// The token service could not be reached.
    #[error("cannot reach the token service of the registry {registry}: {cause}")]
    TokenUnreachable {
        /// `host[:port]`.
        registry: String,
        /// The innermost cause, shown.
        cause: String,
    },
    /// The token service answered with an error.
    #[error("the token service of the registry {registry} answered with HTTP {status}{detail}")]
    TokenStatus {
        /// `host[:port]`.
        registry: String,
        /// The status code.
        status: u16,
        /// `: ` and the body, shown; empty when it had none.
        detail: String,
    },
    /// The token service's answer holds no token.
    #[error(
        "the token service of the registry {registry} sent no token (a JSON object with \"token\" or \"access_token\"): {detail}"
    )]
    NoToken {
        /// `host[:port]`.
        registry: String,
        /// Why, shown.
        detail: String,
    },
    /// A token that cannot be sent in a header (a newline, a control character).
    #[error(
        "the token service of the registry {registry} sent a token that is not valid in an HTTP header (a control character or a line break); refused"
    )]
    InvalidToken {
        /// `host[:port]`.
        registry: String,
    },
    /// The client itself failed (a panic in a library it uses), caught at its boundary.
    #[error("the registry client failed while talking to {registry}: {message}")]
    Failed {
        /// `host[:port]`.
        registry: String,
        /// The panic's message, shown.
        message: String,
    },
    /// Called outside a Tokio runtime.
    #[error("the registry client runs inside a Tokio runtime (with time and I/O enabled); there is none on this thread")]
    NoRuntime,
}

/// What makes a registry that answers in plain HTTP usable, in host.toml's words (the
/// command line's `push` and `pull` say their flag instead): listing it, when it is
/// loopback; otherwise nothing but HTTPS.
fn plain_http_fix(registry: &str) -> String {
    if super::is_loopback_registry(registry) {
        format!(
            "to speak plain HTTP to this loopback registry, list it under [host.registry] in host.toml: plain_http = [\"{registry}\"]"
        )
    } else {
        "plain HTTP is spoken only to loopback registries (localhost, 127.0.0.0/8, [::1]); this one needs HTTPS".into()
    }
}

impl RegistryError {
    /// A reqwest failure talking to `registry`.
    pub(super) fn unreachable(registry: &str, error: &reqwest::Error) -> Self {
        Self::Unreachable {
            registry: registry.to_owned(),
            cause: prompt_host_peer::innermost(error),
        }
    }

    /// A reqwest failure connecting to `registry` over HTTPS: [`RegistryError::PlainHttp`]
    /// when the registry answered the handshake in plain HTTP, else
    /// [`RegistryError::Unreachable`].
    pub(super) fn unreachable_over_https(registry: &str, error: &reqwest::Error) -> Self {
        if answered_in_plain_http(error) {
            return Self::PlainHttp {
                registry: registry.to_owned(),
            };
        }
        Self::unreachable(registry, error)
    }

    /// A reqwest failure talking to `registry`'s token service.
    pub(super) fn token_unreachable(registry: &str, error: &reqwest::Error) -> Self {
        Self::TokenUnreachable {
            registry: registry.to_owned(),
            cause: prompt_host_peer::innermost(error),
        }
    }
}

/// Whether a TLS handshake failed because the peer's first bytes are not a TLS record: an
/// HTTP server answering a ClientHello with `HTTP/1.1 400 …` starts with `H`, a content type
/// TLS does not have. rustls's error reaches reqwest's chain inside an `io::Error` inside
/// another (tokio-rustls's, then hyper-util's), whose `source` skips what they wrap, so each
/// I/O error is opened down to what it holds.
fn answered_in_plain_http(error: &reqwest::Error) -> bool {
    let mut level: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = level {
        let mut held = Some(e);
        while let Some(inner) = held {
            if matches!(
                inner.downcast_ref::<rustls::Error>(),
                Some(rustls::Error::InvalidMessage(
                    rustls::InvalidMessage::InvalidContentType
                ))
            ) {
                return true;
            }
            held = inner
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .map(|wrapped| wrapped as &(dyn std::error::Error + 'static));
        }
        level = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_registry_and_the_bound() {
        assert_eq!(
            RegistryError::TimedOut {
                operation: "the pull",
                registry: "127.0.0.1:5000".into(),
                limit_ms: 300_000,
            }
            .to_string(),
            "the pull did not complete within total_timeout_ms = 300000 (the whole exchange with the registry 127.0.0.1:5000); stopped"
        );
        assert_eq!(
            RegistryError::Destination {
                registry: "127.0.0.1:5000".into(),
                role: "names the token service",
                url: "http://127.0.0.2:4000/token".into(),
                why: "plain HTTP to 127.0.0.2:4000, which is not in plain_http".into(),
            }
            .to_string(),
            "the registry 127.0.0.1:5000 names the token service http://127.0.0.2:4000/token, plain HTTP to 127.0.0.2:4000, which is not in plain_http; not contacted"
        );
    }

    #[test]
    fn a_registry_answering_in_plain_http_is_told_how_to_be_reached() {
        let plain = |registry: &str| {
            RegistryError::PlainHttp {
                registry: registry.into(),
            }
            .to_string()
        };
        assert_eq!(
            plain("localhost:5000"),
            "cannot reach the registry localhost:5000 over HTTPS: it answered in plain HTTP; to speak plain HTTP to this loopback registry, list it under [host.registry] in host.toml: plain_http = [\"localhost:5000\"]"
        );
        assert_eq!(
            plain("registry.example:5000"),
            "cannot reach the registry registry.example:5000 over HTTPS: it answered in plain HTTP; plain HTTP is spoken only to loopback registries (localhost, 127.0.0.0/8, [::1]); this one needs HTTPS"
        );
    }
}
