//! `oci://REGISTRY/REPOSITORY:TAG` and `oci://REGISTRY/REPOSITORY@sha256:DIGEST`: how a
//! deployment names a plugin published to an OCI registry.
//!
//! The registry is always written out (no implicit Docker Hub), and a tag or a digest is
//! always given (no implicit `latest`): a reference says exactly where its bytes come from.

use std::fmt;

/// The scheme every reference starts with.
pub const SCHEME: &str = "oci://";

/// A parsed `oci://` reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OciReference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

/// Whether `text` is meant as an `oci://` reference (rather than a file path).
pub fn is_oci(text: &str) -> bool {
    text.starts_with(SCHEME)
}

impl OciReference {
    /// Parse `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`; the message says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| format!("expected a reference starting with {SCHEME}"))?;
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| "expected oci://REGISTRY/REPOSITORY:TAG (no repository)".to_string())?;
        if !valid_registry(registry) {
            return Err(format!(
                "expected a registry host[:port] after {SCHEME}, got \"{registry}\""
            ));
        }
        let (name, digest) = match path.split_once('@') {
            Some((name, digest)) => {
                if !valid_digest(digest) {
                    return Err(format!(
                        "expected a digest sha256:<64 lower-case hex digits> after @, got \"{digest}\""
                    ));
                }
                (name, Some(digest.to_string()))
            }
            None => (path, None),
        };
        // A tag follows the last ':' after the last '/'.
        let slash = name.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match name[slash..].find(':') {
            Some(colon) => {
                let (repository, tag) = name.split_at(slash + colon);
                (repository, Some(tag[1..].to_string()))
            }
            None => (name, None),
        };
        if !valid_repository(repository) {
            return Err(format!(
                "expected a repository of lower-case path components ([a-z0-9] joined by . _ - or /), got \"{repository}\""
            ));
        }
        if let Some(tag) = &tag {
            if !valid_tag(tag) {
                return Err(format!(
                    "expected a tag of at most 128 characters [A-Za-z0-9_.-] not starting with . or -, got \"{tag}\""
                ));
            }
        }
        if tag.is_none() && digest.is_none() {
            return Err(format!(
                "{text} names no tag and no digest; add one (…:1.0 or …@sha256:…): there is no implicit latest"
            ));
        }
        Ok(Self {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// `host[:port]`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository path, e.g. `plugins/identity`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, if the reference has one.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The manifest digest (`sha256:…`), if the reference has one.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// Whether the registry is this machine (`localhost`, `127.0.0.0/8`, `[::1]`): the only
    /// registries plain HTTP may be used with.
    pub fn is_loopback(&self) -> bool {
        is_loopback_registry(&self.registry)
    }
}

impl fmt::Display for OciReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// Whether `registry` (`host[:port]`) is this machine.
pub fn is_loopback_registry(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => registry.rsplit_once(':').map_or(registry, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `sha256:` and 64 lower-case hex digits.
pub fn valid_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn valid_registry(registry: &str) -> bool {
    let (host, port) = match registry.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((ip, rest)) => {
                if ip.parse::<std::net::Ipv6Addr>().is_err() {
                    return false;
                }
                (None, rest.strip_prefix(':'))
            }
            None => return false,
        },
        None => match registry.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(registry), None),
        },
    };
    let host_ok = host.is_none_or(|h| {
        !h.is_empty()
            && h.len() <= 253
            && h.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    });
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.parse::<u16>().is_ok_and(|n| n > 0));
    host_ok && port_ok
}

/// The OCI distribution specification's repository grammar.
fn valid_repository(repository: &str) -> bool {
    !repository.is_empty()
        && repository.len() <= 255
        && repository.split('/').all(|component| {
            let bytes = component.as_bytes();
            !bytes.is_empty()
                && bytes[0].is_ascii_alphanumeric()
                && bytes[bytes.len() - 1].is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|&b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
                && !component.contains("..")
        })
}

fn valid_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn tags_digests_and_ports_parse_and_print_back() {
        for text in [
            "oci://127.0.0.1:5000/plugins/identity:1.0".to_string(),
            format!("oci://ghcr.io/acme/prompt/identity@{D}"),
            format!("oci://localhost:5000/identity:v2@{D}"),
            "oci://[::1]:5000/a/b-c_d.e:latest".to_string(),
        ] {
            let parsed = OciReference::parse(&text).unwrap();
            assert_eq!(parsed.to_string(), text);
        }
        let r = OciReference::parse("oci://localhost:5000/plugins/identity:1.0").unwrap();
        assert_eq!(r.registry(), "localhost:5000");
        assert_eq!(r.repository(), "plugins/identity");
        assert_eq!(r.tag(), Some("1.0"));
        assert!(r.is_loopback());
        assert!(!OciReference::parse("oci://ghcr.io/a:1")
            .unwrap()
            .is_loopback());
        assert!(is_loopback_registry("[::1]:5000"));
        assert!(is_loopback_registry("127.3.4.5"));
    }

    #[test]
    fn malformed_references_are_refused_with_what_was_expected() {
        let err = |t: &str| OciReference::parse(t).unwrap_err();
        assert_eq!(
            err("oci://localhost:5000/identity"),
            "oci://localhost:5000/identity names no tag and no digest; add one (…:1.0 or …@sha256:…): there is no implicit latest"
        );
        assert!(err("oci://localhost:5000").contains("no repository"));
        assert!(err("oci://bad host/x:1").contains("registry host[:port]"));
        assert!(err("oci://h:0/x:1").contains("registry host[:port]"));
        assert!(err("oci://h/Upper:1").contains("lower-case path components"));
        assert!(err("oci://h/a/../b:1").contains("lower-case path components"));
        assert!(err("oci://h/a:-x").contains("a tag of at most 128"));
        assert!(err("oci://h/a@sha256:ABC").contains("64 lower-case hex"));
        assert!(err("https://h/a:1").contains("starting with oci://"));
        assert!(err(&format!("oci://h/a:{}", "x".repeat(129))).contains("at most 128"));
    }
}
