//! One origin a plugin may reach and the headers the host adds to its requests there — the
//! secrets by reference: the operator writes `authorization = "Bearer ${env:DOCS_TOKEN}"`,
//! the host reads the variable when the plugin is loaded and adds the header to each request
//! to that origin. The plugin never holds the value: a header of the same name it sets is
//! replaced, not merged, and a request to any other origin carries none of it.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::origin::{Origin, OriginPattern};
use crate::resolve_secret;

/// Header names the host's HTTP client owns: hop-by-hop headers, the framing and the host.
/// A grant cannot add them (and a plugin's are dropped by the client).
const HOST_OWNED: [&str; 10] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "http2-settings",
];

/// An origin granted to a plugin, with the headers the host adds to requests to it.
#[derive(Debug, Clone)]
pub struct HttpGrant {
    origin: OriginPattern,
    /// Names, each once, with their values read — marked sensitive, so that `Debug` (of
    /// the grant, or of a request) shows `Sensitive` in their place.
    headers: Vec<(HeaderName, HeaderValue)>,
}

/// Why a grant was refused: the key (`origin`, `headers.NAME`) and what is wrong, never a
/// secret's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {why}")]
pub struct GrantError {
    /// The key of the grant that is wrong.
    pub key: String,
    /// What is wrong with it.
    pub why: String,
}

impl HttpGrant {
    /// A grant of `origin` (see [`OriginPattern::parse`]) whose requests carry `headers`,
    /// each value's `${env:NAME}` read by `lookup` now. A header name must be an HTTP token,
    /// not one the client owns (`host`, `content-length`, hop-by-hop) and not given twice in
    /// any case; a value must not hold a line break or NUL once read.
    pub fn new(
        origin: &str,
        headers: impl IntoIterator<Item = (String, String)>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<HttpGrant, GrantError> {
        let origin = OriginPattern::parse(origin).map_err(|e| GrantError {
            key: "origin".into(),
            why: e.to_string(),
        })?;
        let mut resolved: Vec<(HeaderName, HeaderValue)> = Vec::new();
        for (name, template) in headers {
            let key = format!("headers.{}", crate::shown_within(&name, 64));
            let refused = |why: String| GrantError {
                key: key.clone(),
                why,
            };
            let lower = name.to_ascii_lowercase();
            if lower.is_empty() || !lower.bytes().all(is_token_byte) {
                return Err(refused(
                    "expected a header name (letters, digits and !#$%&'*+-.^_`|~)".into(),
                ));
            }
            if HOST_OWNED.contains(&lower.as_str()) {
                return Err(refused(format!(
                    "`{lower}` is set by the host's HTTP client, not by a grant"
                )));
            }
            let header = HeaderName::from_bytes(lower.as_bytes())
                .map_err(|_| refused("expected a header name".into()))?;
            if resolved.iter().any(|(n, _)| *n == header) {
                return Err(refused("the header is given twice".into()));
            }
            let value = resolve_secret(&template, &lookup).map_err(refused)?;
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                refused(
                    "the value holds a line break, NUL or another control character once its references are read"
                        .into(),
                )
            })?;
            value.set_sensitive(true);
            resolved.push((header, value));
        }
        Ok(HttpGrant {
            origin,
            headers: resolved,
        })
    }

    /// The origin granted.
    pub fn origin(&self) -> &OriginPattern {
        &self.origin
    }

    /// Whether a request to `origin` is allowed by this grant.
    pub fn permits(&self, origin: &Origin) -> bool {
        self.origin.permits(origin)
    }

    /// Put the host's headers on a request this grant permits: every header of the same
    /// name the plugin set is removed first, so the plugin can neither read nor override
    /// the value, nor send a second one beside it.
    pub fn apply(&self, headers: &mut HeaderMap) {
        for (name, value) in &self.headers {
            headers.remove(name);
            headers.insert(name.clone(), value.clone());
        }
    }
}

/// RFC 9110's `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "DOCS_TOKEN" => Some("s3cr3t".into()),
            "BROKEN" => Some("a\r\nx-evil: 1".into()),
            _ => None,
        }
    }

    fn grant(headers: &[(&str, &str)]) -> Result<HttpGrant, GrantError> {
        HttpGrant::new(
            "https://docs.example.com",
            headers.iter().map(|(n, v)| (n.to_string(), v.to_string())),
            env,
        )
    }

    #[test]
    fn the_hosts_header_replaces_the_plugins_of_the_same_name() {
        let grant = grant(&[("Authorization", "Bearer ${env:DOCS_TOKEN}")]).unwrap();
        let mut headers = HeaderMap::new();
        headers.append("AUTHORIZATION", HeaderValue::from_static("Bearer forged"));
        headers.append("authorization", HeaderValue::from_static("Bearer second"));
        headers.append("accept", HeaderValue::from_static("text/markdown"));
        grant.apply(&mut headers);
        let sent: Vec<(String, &[u8])> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes()))
            .collect();
        assert_eq!(
            sent,
            [
                ("accept".to_string(), &b"text/markdown"[..]),
                ("authorization".to_string(), &b"Bearer s3cr3t"[..]),
            ]
        );
        // The grant, and the request's headers, show themselves without the value.
        assert!(!format!("{grant:?} {headers:?}").contains("s3cr3t"));
    }

    #[test]
    fn a_header_the_client_owns_or_a_value_that_would_split_is_refused_without_its_value() {
        let cases = [
            (("host", "x"), "headers.host: `host` is set by the host's HTTP client, not by a grant"),
            (("Content-Length", "1"), "headers.Content-Length: `content-length` is set by the host's HTTP client, not by a grant"),
            (("x token", "1"), "headers.x token: expected a header name (letters, digits and !#$%&'*+-.^_`|~)"),
            (("x-key", "${env:BROKEN}"), "headers.x-key: the value holds a line break, NUL or another control character once its references are read"),
            (("x-key", "${env:MISSING}"), "headers.x-key: the environment variable MISSING is not set"),
        ];
        for ((name, value), expected) in cases {
            let err = grant(&[(name, value)]).unwrap_err().to_string();
            assert_eq!(err, expected);
            assert!(!err.contains("s3cr3t") && !err.contains("x-evil"));
        }
        assert_eq!(
            grant(&[("x-a", "1"), ("X-A", "2")])
                .unwrap_err()
                .to_string(),
            "headers.X-A: the header is given twice"
        );
        assert_eq!(
            HttpGrant::new("http://docs.example.com", [], env)
                .unwrap_err()
                .to_string(),
            "origin: `http://docs.example.com`: plain http:// is granted only for localhost and loopback addresses; use https://"
        );
    }
}
