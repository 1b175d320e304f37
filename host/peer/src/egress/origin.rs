//! Origins a plugin may be granted (`https://docs.example.com`, `http://127.0.0.1:8080`,
//! the explicit wildcard `https://*.example.com`) and the origin of a request it makes,
//! compared exactly: scheme, host and port. A grant is an origin and nothing else — no user,
//! path, query or fragment — so what the operator reads is all it allows.

use std::fmt;
use std::net::IpAddr;

use url::Url;

/// A request's scheme: `https`, or `http` where the grant is on the host itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// TLS to the peer.
    Https,
    /// Plain text; granted only for loopback.
    Http,
}

impl Scheme {
    fn default_port(self) -> u16 {
        match self {
            Scheme::Https => 443,
            Scheme::Http => 80,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Scheme::Https => "https",
            Scheme::Http => "http",
        }
    }
}

/// A host as a URL names it: a domain (lowercase, IDNA as ASCII) or an address literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A domain name, resolved when a request is made.
    Name(String),
    /// An address the URL names itself.
    Ip(IpAddr),
}

impl Host {
    /// Whether this host is the machine itself by its own name: `localhost` or a loopback
    /// address (RFC 6761: `localhost` is never asked of DNS).
    pub fn is_loopback(&self) -> bool {
        match self {
            Host::Name(name) => name == "localhost",
            Host::Ip(ip) => ip.is_loopback(),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// The origin of a request: scheme, host, port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `https` or `http`.
    pub scheme: Scheme,
    /// The host the request names.
    pub host: Host,
    /// The port, the scheme's default when the URL gives none.
    pub port: u16,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.host)?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// Why an origin or a request's URL was refused; the message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OriginError(String);

impl Origin {
    /// The origin of a request to `url`. A URL with a user or password is refused (a
    /// credential the plugin wrote into it would be sent); its path and query are the
    /// request's, not the origin's.
    pub fn of_request(url: &str) -> Result<Origin, OriginError> {
        let parsed = Url::parse(url)
            .map_err(|e| OriginError(format!("`{}` is not a URL: {e}", crate::shown(url))))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(OriginError(
                "a URL with a user or password is refused: the host adds credentials".into(),
            ));
        }
        origin_of(&parsed, url)
    }
}

fn origin_of(parsed: &Url, text: &str) -> Result<Origin, OriginError> {
    let scheme = match parsed.scheme() {
        "https" => Scheme::Https,
        "http" => Scheme::Http,
        other => {
            return Err(OriginError(format!(
                "`{}`: the scheme `{}` is not HTTP; expected https:// (or http:// on loopback)",
                crate::shown(text),
                crate::shown(other)
            )))
        }
    };
    let host = match parsed.host() {
        Some(url::Host::Domain(name)) => Host::Name(name.to_string()),
        Some(url::Host::Ipv4(ip)) => Host::Ip(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Host::Ip(IpAddr::V6(ip)),
        None => {
            return Err(OriginError(format!(
                "`{}` names no host",
                crate::shown(text)
            )))
        }
    };
    let port = parsed.port().unwrap_or(scheme.default_port());
    Ok(Origin { scheme, host, port })
}

/// An origin granted to a plugin: exact, or (written `https://*.example.com`) any host
/// under a domain, never the domain itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginPattern {
    scheme: Scheme,
    host: HostPattern,
    port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Exact(Host),
    /// A domain whose subdomains (at any depth) match: `example.com` for `*.example.com`.
    Under(String),
}

impl OriginPattern {
    /// Parse a grant: `https://HOST[:PORT]` (a trailing `/` is allowed), `http://` only
    /// for `localhost` and loopback addresses, `https://*.DOMAIN[:PORT]` for the hosts
    /// under a domain of at least two labels.
    pub fn parse(text: &str) -> Result<OriginPattern, OriginError> {
        let refused = |why: &str| OriginError(format!("`{}`: {why}", crate::shown(text)));
        let (wildcard, url_text) = match text.find("://*.") {
            Some(at) => (true, format!("{}://{}", &text[..at], &text[at + 5..])),
            None => (false, text.to_string()),
        };
        if url_text.contains('*') {
            return Err(refused(
                "a wildcard is written only as the first label, https://*.example.com",
            ));
        }
        let parsed = Url::parse(&url_text).map_err(|e| refused(&format!("not a URL: {e}")))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(refused(
                "an origin has no user or password; name a secret for its header instead",
            ));
        }
        if parsed.path() != "/" || parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(refused(
                "an origin is scheme://host[:port], without a path, query or fragment",
            ));
        }
        let origin = origin_of(&parsed, text)?;
        if origin.scheme == Scheme::Http && (wildcard || !origin.host.is_loopback()) {
            return Err(refused(
                "plain http:// is granted only for localhost and loopback addresses; use https://",
            ));
        }
        let host = if wildcard {
            match origin.host {
                Host::Name(name) if name.contains('.') => HostPattern::Under(name),
                _ => {
                    return Err(refused(
                        "a wildcard stands before a domain of at least two labels, such as *.example.com",
                    ))
                }
            }
        } else {
            HostPattern::Exact(origin.host)
        };
        Ok(OriginPattern {
            scheme: origin.scheme,
            host,
            port: origin.port,
        })
    }

    /// Whether a request to `origin` is allowed by this grant.
    pub fn permits(&self, origin: &Origin) -> bool {
        if self.scheme != origin.scheme || self.port != origin.port {
            return false;
        }
        match (&self.host, &origin.host) {
            (HostPattern::Exact(granted), host) => granted == host,
            (HostPattern::Under(domain), Host::Name(name)) => name
                .strip_suffix(domain.as_str())
                .is_some_and(|label| label.len() > 1 && label.ends_with('.')),
            (HostPattern::Under(_), Host::Ip(_)) => false,
        }
    }
}

impl fmt::Display for OriginPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match &self.host {
            HostPattern::Exact(host) => host.to_string(),
            HostPattern::Under(domain) => format!("*.{domain}"),
        };
        write!(f, "{}://{host}", self.scheme.as_str())?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> OriginPattern {
        OriginPattern::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn permits(grant: &str, url: &str) -> bool {
        pattern(grant).permits(&Origin::of_request(url).expect("a request URL"))
    }

    #[test]
    fn an_exact_grant_allows_its_origin_and_nothing_near_it() {
        let grant = "https://docs.example.com";
        assert!(permits(grant, "https://docs.example.com/team/rules.md?v=2"));
        assert!(permits(grant, "https://DOCS.Example.com:443/"));
        assert!(permits(
            "https://docs.example.com/",
            "https://docs.example.com"
        ));
        for other in [
            "http://docs.example.com/",
            "https://docs.example.com:8443/",
            "https://example.com/",
            "https://a.docs.example.com/",
            "https://docs.example.com.evil.net/",
            "https://docs-example.com/",
            "https://93.184.215.14/",
        ] {
            assert!(!permits(grant, other), "{other}");
        }
        assert!(permits("https://[::1]:8443", "https://[0:0::1]:8443/x"));
        assert!(permits("http://127.0.0.1:9000", "http://127.0.0.1:9000/x"));
        assert!(!permits("http://127.0.0.1:9000", "http://127.0.0.2:9000/x"));
        assert!(permits("http://localhost:9000", "http://localhost:9000/x"));
    }

    #[test]
    fn a_wildcard_allows_the_hosts_under_a_domain_not_the_domain() {
        let grant = "https://*.example.com";
        assert!(permits(grant, "https://docs.example.com/"));
        assert!(permits(grant, "https://a.b.example.com/"));
        assert!(!permits(grant, "https://example.com/"));
        assert!(!permits(grant, "https://badexample.com/"));
        assert!(!permits(grant, "https://docs.example.com:444/"));
        assert_eq!(
            pattern("https://*.Example.com:8443").to_string(),
            "https://*.example.com:8443"
        );
    }

    #[test]
    fn what_is_not_an_origin_is_refused_saying_what_to_write() {
        let cases = [
            (
                "http://docs.example.com",
                "plain http:// is granted only for localhost and loopback addresses; use https://",
            ),
            (
                "http://*.example.com",
                "plain http:// is granted only for localhost and loopback addresses; use https://",
            ),
            (
                "https://docs.example.com/path",
                "an origin is scheme://host[:port], without a path, query or fragment",
            ),
            (
                "https://docs.example.com?q",
                "an origin is scheme://host[:port], without a path, query or fragment",
            ),
            (
                "https://user:pw@docs.example.com",
                "an origin has no user or password; name a secret for its header instead",
            ),
            (
                "https://*.com",
                "a wildcard stands before a domain of at least two labels, such as *.example.com",
            ),
            (
                "https://*.127.0.0.1",
                "a wildcard stands before a domain of at least two labels, such as *.example.com",
            ),
            (
                "https://docs.*.com",
                "a wildcard is written only as the first label, https://*.example.com",
            ),
            (
                "*",
                "a wildcard is written only as the first label, https://*.example.com",
            ),
        ];
        for (text, why) in cases {
            assert_eq!(
                OriginPattern::parse(text).unwrap_err().to_string(),
                format!("`{text}`: {why}")
            );
        }
        assert_eq!(
            OriginPattern::parse("ftp://example.com").unwrap_err().to_string(),
            "`ftp://example.com`: the scheme `ftp` is not HTTP; expected https:// (or http:// on loopback)"
        );
        assert!(OriginPattern::parse("docs.example.com").is_err());
    }

    #[test]
    fn a_request_url_with_credentials_is_refused() {
        assert_eq!(
            Origin::of_request("https://token@docs.example.com/")
                .unwrap_err()
                .to_string(),
            "a URL with a user or password is refused: the host adds credentials"
        );
        let origin = Origin::of_request("https://bücher.example/x").unwrap();
        assert_eq!(origin.to_string(), "https://xn--bcher-kva.example");
        assert_eq!(
            Origin::of_request("http://[::1]:8080/")
                .unwrap()
                .to_string(),
            "http://[::1]:8080"
        );
    }
}
