//! Where the registry client may connect, and what it may send there.
//!
//! A registry names other URLs: a token service (`realm`), a redirect for a manifest or a
//! blob, an upload location. Each is a place credentials could leak to, or be read on the
//! way over plain HTTP. The rules, in one place:
//!
//! - Connect over HTTPS anywhere, over plain HTTP only to an origin listed in `plain_http`
//!   (all of which are loopback). The registry's own plain-HTTP origin is listed, or it
//!   would not be spoken to that way.
//! - The registry's credentials (and a token obtained with them) go only to the registry's
//!   own origin — scheme, host and port alike — and, for the Docker config's password, to
//!   the token service the registry names, which the first rule already confines to HTTPS
//!   or a listed origin. A redirect to any other origin is followed without them.

use reqwest::Url;

use super::RegistryError;
use prompt_host_peer::shown;

/// Scheme, host (lower case) and port: what decides where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// The origin of `url`, or `None` for a URL without a host or a known port.
    pub(super) fn of(url: &Url) -> Option<Origin> {
        Some(Origin {
            scheme: url.scheme().to_ascii_lowercase(),
            host: url.host_str()?.to_ascii_lowercase(),
            port: url.port_or_known_default()?,
        })
    }

    /// `host:port`, as `plain_http` writes it.
    pub(super) fn host_port(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The registries spoken to over plain HTTP, as origins.
#[derive(Debug, Clone, Default)]
pub(super) struct PlainHttp(Vec<Origin>);

impl PlainHttp {
    /// The origins of `registries` (`host[:port]`, port 80 when left out); one that does
    /// not parse as a host is left out (host.toml refuses it before this).
    pub(super) fn new(registries: &[String]) -> Self {
        PlainHttp(
            registries
                .iter()
                .filter_map(|r| Url::parse(&format!("http://{r}/")).ok())
                .filter_map(|url| Origin::of(&url))
                .collect(),
        )
    }

    /// Whether `registry` (`host[:port]`) is spoken to over plain HTTP.
    pub(super) fn lists(&self, registry: &str) -> bool {
        Url::parse(&format!("http://{registry}/"))
            .ok()
            .and_then(|url| Origin::of(&url))
            .is_some_and(|origin| self.0.contains(&origin))
    }

    /// `url` when the host may connect to it (HTTPS, or plain HTTP to a listed origin),
    /// else why not, in the words of a [`RegistryError::Destination`] for `registry`, which
    /// named it as `role`.
    pub(super) fn check(
        &self,
        url: Url,
        registry: &str,
        role: &'static str,
    ) -> Result<Url, RegistryError> {
        let refused = |why: String| RegistryError::Destination {
            registry: registry.to_owned(),
            role,
            url: shown_url(&url),
            why,
        };
        let Some(origin) = Origin::of(&url) else {
            return Err(refused("which names no host".into()));
        };
        match origin.scheme.as_str() {
            "https" => Ok(url),
            "http" if self.0.contains(&origin) => Ok(url),
            "http" => Err(refused(format!(
                "plain HTTP to {}, which is not in plain_http",
                shown(&origin.host_port())
            ))),
            other => Err(refused(format!("scheme {}, not HTTPS", shown(other)))),
        }
    }
}

/// `url` as a message shows it: without its query (a signed URL's query is a credential)
/// or user name and password, escaped and capped.
pub(super) fn shown_url(url: &Url) -> String {
    let mut bare = url.clone();
    bare.set_query(None);
    bare.set_fragment(None);
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    shown(bare.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn plain_http_reaches_only_the_listed_origins() {
        let plain = PlainHttp::new(&["127.0.0.1:5000".into(), "localhost".into()]);
        assert!(plain.lists("127.0.0.1:5000"));
        assert!(plain.lists("LOCALHOST:80"));
        assert!(!plain.lists("127.0.0.1:5001"));
        for ok in [
            "https://auth.example/token",
            "http://127.0.0.1:5000/v2/x",
            "http://localhost/token",
        ] {
            assert!(plain.check(url(ok), "r", "redirects to").is_ok(), "{ok}");
        }
        let refused = |u: &str| {
            plain
                .check(url(u), "127.0.0.1:5000", "names the token service")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            refused("http://127.0.0.2:5000/token?scope=x"),
            "the registry 127.0.0.1:5000 names the token service http://127.0.0.2:5000/token, plain HTTP to 127.0.0.2:5000, which is not in plain_http; not contacted"
        );
        assert_eq!(
            refused("http://auth.example/token"),
            "the registry 127.0.0.1:5000 names the token service http://auth.example/token, plain HTTP to auth.example:80, which is not in plain_http; not contacted"
        );
        assert_eq!(
            refused("ftp://user:pw@files.example/x"),
            "the registry 127.0.0.1:5000 names the token service ftp://files.example/x, scheme ftp, not HTTPS; not contacted"
        );
    }

    #[test]
    fn origins_differ_by_scheme_host_and_port() {
        let base = Origin::of(&url("http://127.0.0.1:5000/v2/"));
        assert_eq!(base, Origin::of(&url("http://127.0.0.1:5000/other?q")));
        assert_ne!(base, Origin::of(&url("https://127.0.0.1:5000/v2/")));
        assert_ne!(base, Origin::of(&url("http://127.0.0.1:5001/v2/")));
        assert_ne!(base, Origin::of(&url("http://127.0.0.2:5000/v2/")));
        assert_eq!(
            Origin::of(&url("https://Registry.Example/v2/")),
            Origin::of(&url("https://registry.example:443/x"))
        );
    }
}
