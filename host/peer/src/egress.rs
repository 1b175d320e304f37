//! Where a plugin's outgoing request may go, decided by the host: the origins its grant
//! names ([`OriginPattern`]), and — for a granted *name* — only public addresses
//! ([`special_range`]), connected to as checked. The connection is the host's, made here,
//! so no other part resolves the name a second time (DNS rebinding: a second answer could
//! be 127.0.0.1), and every step is bounded by the time left to the request.

mod address;
mod grant;
mod origin;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

pub use address::{special_range, SpecialRange};
pub use grant::{GrantError, HttpGrant};
pub use origin::{Host, Origin, OriginError, OriginPattern, Scheme};

/// Why a request could not be connected; every message names the origin, none a secret.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// No grant of the plugin names the request's origin.
    #[error("{origin} is not among the origins this plugin is granted")]
    NotGranted {
        /// The request's origin.
        origin: String,
    },
    /// A granted name resolved to an address the grant does not name.
    #[error("{origin}: {host} resolves to {address}, {}: refused (a grant that names the address itself allows it)", range.described())]
    SpecialAddress {
        /// The request's origin.
        origin: String,
        /// The name that was resolved.
        host: String,
        /// The address it resolved to.
        address: IpAddr,
        /// The range the address is in.
        range: SpecialRange,
    },
    /// The name could not be resolved.
    #[error("{origin}: cannot resolve {host}")]
    Resolve {
        /// The request's origin.
        origin: String,
        /// The name.
        host: String,
        /// What the resolver said.
        #[source]
        source: std::io::Error,
    },
    /// The name resolved to no address.
    #[error("{origin}: {host} resolves to no address")]
    NoAddress {
        /// The request's origin.
        origin: String,
        /// The name.
        host: String,
    },
    /// No address accepted the connection.
    #[error("{origin}: cannot connect to {address}")]
    Connect {
        /// The request's origin.
        origin: String,
        /// The last address tried.
        address: SocketAddr,
        /// Why it failed.
        #[source]
        source: std::io::Error,
    },
    /// The time the request had ran out while resolving or connecting.
    #[error("{origin}: no connection within {} ms", limit.as_millis())]
    TimedOut {
        /// The request's origin.
        origin: String,
        /// The time the request had.
        limit: Duration,
    },
}

/// The first of `grants` whose [`HttpGrant`] (`grant_of` it) permits a request to
/// `origin`; a caller keeps what it opened for each grant (a TLS configuration) beside it.
pub fn granted<'a, T>(
    grants: &'a [T],
    grant_of: impl Fn(&T) -> &HttpGrant,
    origin: &Origin,
) -> Result<&'a T, EgressError> {
    grants
        .iter()
        .find(|g| grant_of(g).permits(origin))
        .ok_or_else(|| EgressError::NotGranted {
            origin: origin.to_string(),
        })
}

/// The addresses a request to `origin` may connect to, within `limit`: an address the
/// origin names itself, as named; `localhost` as 127.0.0.1 and ::1 (never asked of DNS);
/// a name by the system's resolver, refused whole if any address it gives is special (the
/// error names it).
pub async fn addresses(origin: &Origin, limit: Duration) -> Result<Vec<SocketAddr>, EgressError> {
    let port = origin.port;
    let name = match &origin.host {
        Host::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(name) if name == "localhost" => {
            return Ok(vec![
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port),
            ])
        }
        Host::Name(name) => name,
    };
    let timed_out = || EgressError::TimedOut {
        origin: origin.to_string(),
        limit,
    };
    let found = crate::within(limit, tokio::net::lookup_host((name.as_str(), port)))
        .await
        .ok_or_else(timed_out)?
        .map_err(|source| EgressError::Resolve {
            origin: origin.to_string(),
            host: name.clone(),
            source,
        })?;
    checked(origin, name, found)
}

/// The addresses a resolver gave for `name`, as [`addresses`] keeps them: all, once each,
/// when none is special; else the first special one refuses the request.
pub fn checked(
    origin: &Origin,
    name: &str,
    found: impl IntoIterator<Item = SocketAddr>,
) -> Result<Vec<SocketAddr>, EgressError> {
    let mut addresses = Vec::new();
    for address in found {
        if let Some(range) = special_range(address.ip()) {
            return Err(EgressError::SpecialAddress {
                origin: origin.to_string(),
                host: name.to_string(),
                address: address.ip(),
                range,
            });
        }
        if !addresses.contains(&address) {
            addresses.push(address);
        }
    }
    if addresses.is_empty() {
        return Err(EgressError::NoAddress {
            origin: origin.to_string(),
            host: name.to_string(),
        });
    }
    Ok(addresses)
}

/// A TCP connection for a request to `origin`: to the first of [`addresses`] that accepts,
/// resolving and connecting together within `limit`.
pub async fn connect(
    origin: &Origin,
    limit: Duration,
) -> Result<(TcpStream, SocketAddr), EgressError> {
    let deadline = Instant::now() + limit;
    let addresses = addresses(origin, limit).await?;
    let mut last = None;
    for address in addresses {
        let left = deadline.saturating_duration_since(Instant::now());
        match crate::within(left, TcpStream::connect(address)).await {
            None => break,
            Some(Ok(stream)) => {
                // One request's bytes are written at once; Nagle would hold the last piece.
                let _ = stream.set_nodelay(true);
                return Ok((stream, address));
            }
            Some(Err(source)) => last = Some((address, source)),
        }
    }
    Err(match last {
        Some((address, source)) if Instant::now() < deadline => EgressError::Connect {
            origin: origin.to_string(),
            address,
            source,
        },
        _ => EgressError::TimedOut {
            origin: origin.to_string(),
            limit,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(url: &str) -> Origin {
        Origin::of_request(url).expect("a URL")
    }

    #[test]
    fn a_request_is_granted_by_the_first_pattern_that_names_its_origin() {
        let grants = [
            HttpGrant::new("https://docs.example.com", [], |_| None).unwrap(),
            HttpGrant::new("http://127.0.0.1:9000", [], |_| None).unwrap(),
        ];
        let grant = granted(&grants, |g| g, &origin("http://127.0.0.1:9000/x")).unwrap();
        assert_eq!(grant.origin().to_string(), "http://127.0.0.1:9000");
        assert_eq!(
            granted(&grants, |g| g, &origin("https://evil.example.net/steal"))
                .unwrap_err()
                .to_string(),
            "https://evil.example.net is not among the origins this plugin is granted"
        );
    }

    #[test]
    fn a_name_resolved_to_any_special_address_is_refused_naming_it() {
        let docs = origin("https://docs.example.com/");
        let at = |ip: &str| SocketAddr::new(ip.parse().unwrap(), 443);
        // What a hostile DNS answer for a granted name looks like: loopback, the metadata
        // endpoint, or a public address with a private one behind it.
        for (answer, described) in [
            (vec![at("127.0.0.1")], "127.0.0.1, a loopback address"),
            (
                vec![at("169.254.169.254")],
                "169.254.169.254, a cloud metadata address",
            ),
            (
                vec![at("93.184.215.14"), at("10.0.0.7")],
                "10.0.0.7, a private address",
            ),
            (
                vec![at("::ffff:127.0.0.1")],
                "::ffff:127.0.0.1, a loopback address",
            ),
        ] {
            let err = checked(&docs, "docs.example.com", answer).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("https://docs.example.com: docs.example.com resolves to {described}: refused (a grant that names the address itself allows it)")
            );
        }
        let public = checked(
            &docs,
            "docs.example.com",
            [
                at("93.184.215.14"),
                at("93.184.215.14"),
                at("2606:2800:21f:cb07::1"),
            ],
        )
        .unwrap();
        assert_eq!(public, [at("93.184.215.14"), at("2606:2800:21f:cb07::1")]);
        assert_eq!(
            checked(&docs, "docs.example.com", [])
                .unwrap_err()
                .to_string(),
            "https://docs.example.com: docs.example.com resolves to no address"
        );
    }

    #[tokio::test]
    async fn a_named_address_and_localhost_are_connected_as_named() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (_stream, address) = connect(
            &origin(&format!("http://127.0.0.1:{port}/")),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(address, listener.local_addr().unwrap());
        let (_stream, address) = connect(
            &origin(&format!("http://localhost:{port}/")),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert_eq!(address, listener.local_addr().unwrap());
    }

    #[tokio::test]
    async fn a_refused_connection_names_the_address() {
        // A port nothing listens on: bound, then closed.
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let err = connect(
            &origin(&format!("http://127.0.0.1:{port}/")),
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("http://127.0.0.1:{port}: cannot connect to 127.0.0.1:{port}")
        );
    }

    #[tokio::test]
    async fn an_unresolvable_name_fails_naming_it() {
        let err = addresses(
            &origin("https://no-such-host.invalid/"),
            Duration::from_secs(10),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                &err,
                EgressError::Resolve { .. } | EgressError::TimedOut { .. }
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("https://no-such-host.invalid: "),
            "{err}"
        );
    }
}
