//! The registry's authentication challenge, answered with the [`Credentials`] of the
//! Docker-style config. A request goes out anonymously first; a `401` names how to authenticate in
//! `WWW-Authenticate`: `Basic` (the credentials themselves, to the registry) or `Bearer`
//! (a token from the service at `realm`, asked with the credentials). Every header built
//! from them, or from a token a peer sent, is built with a checked constructor: a token
//! holding a line break is refused, naming the registry, never a panic.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};

pub(super) use super::credentials::Credentials;
use super::destination::PlainHttp;
use super::RegistryError;
use prompt_host_peer::{read_bounded, shown, shown_bytes};

/// The largest token response read. Real ones are a few KiB (a JWT and its times).
pub(super) const MAX_TOKEN_RESPONSE_BYTES: usize = 256 << 10;

/// One challenge of a `WWW-Authenticate` header: its scheme (lower case) and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Challenge {
    scheme: String,
    params: Vec<(String, String)>,
}

impl Challenge {
    fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The challenges of every `WWW-Authenticate` header in `headers`, in order. A value that
/// is not text, or does not parse, gives none.
pub(super) fn challenges(headers: &HeaderMap) -> Vec<Challenge> {
    headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(parse_challenges)
        .collect()
}

/// `Scheme k=v, k="v", Scheme2 …` (RFC 9110 §11.6.1), without allocating more than the
/// header's own size: a header is bounded by the HTTP client's limit on a response head.
fn parse_challenges(text: &str) -> Vec<Challenge> {
    let mut out: Vec<Challenge> = Vec::new();
    let mut rest = text.trim_start_matches([' ', ',']);
    while !rest.is_empty() {
        let token_end = rest.find([' ', ',', '=']).unwrap_or(rest.len());
        let token = &rest[..token_end];
        let after = rest[token_end..].trim_start();
        if let Some(value) = after.strip_prefix('=') {
            // A parameter of the challenge before it.
            let (value, remainder) = parse_value(value.trim_start());
            if let Some(challenge) = out.last_mut() {
                challenge.params.push((token.to_ascii_lowercase(), value));
            }
            rest = remainder.trim_start_matches([' ', ',']);
        } else {
            if !token.is_empty() {
                out.push(Challenge {
                    scheme: token.to_ascii_lowercase(),
                    params: Vec::new(),
                });
            }
            rest = after.trim_start_matches([' ', ',']);
        }
    }
    out
}

/// A quoted string (with `\` escapes) or a token, and what follows it.
fn parse_value(text: &str) -> (String, &str) {
    let Some(quoted) = text.strip_prefix('"') else {
        let end = text.find([',', ' ']).unwrap_or(text.len());
        return (text[..end].to_owned(), &text[end..]);
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (value, &quoted[i + 1..]),
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            c => value.push(c),
        }
    }
    (value, "")
}

/// How [`authorization`] reaches a token service.
pub(super) struct TokenClient<'a> {
    /// The HTTP client (no redirects followed).
    pub(super) http: &'a reqwest::Client,
    /// Where plain HTTP may go.
    pub(super) plain_http: &'a PlainHttp,
    /// `host[:port]` of the registry that challenged.
    pub(super) registry: &'a str,
    /// The repository and the access asked: `repository:NAME:pull` or `…:pull,push`.
    pub(super) scope: String,
    /// The most time a token error body is waited for.
    pub(super) error_wait: Duration,
}

/// The `Authorization` header the registry's `challenges` ask for, made with `credentials`:
/// `Basic` with them, or `Bearer` with a token from the service the challenge names.
pub(super) async fn authorization(
    client: &TokenClient<'_>,
    challenges: &[Challenge],
    credentials: &Credentials,
) -> Result<HeaderValue, RegistryError> {
    let refused = || RegistryError::Refused {
        registry: client.registry.to_owned(),
    };
    if let Some(bearer) = challenges.iter().find(|c| c.scheme == "bearer") {
        return bearer_token(client, bearer, credentials).await;
    }
    if challenges.iter().any(|c| c.scheme == "basic") {
        return match credentials {
            Credentials::Basic { user, password } => {
                basic(user, password.expose()).ok_or_else(refused)
            }
            Credentials::Anonymous => Err(refused()),
        };
    }
    match challenges.first() {
        // A scheme the host does not speak (Negotiate, a custom one): said, shown.
        Some(other) => Err(RegistryError::Challenge {
            registry: client.registry.to_owned(),
            detail: format!("the {} scheme", shown(&other.scheme)),
        }),
        None => Err(refused()),
    }
}

/// `Basic base64(user:password)`, marked sensitive; `None` if it cannot be a header (a
/// user name with a line break in the config file).
fn basic(user: &str, password: &str) -> Option<HeaderValue> {
    let encoded = base64(format!("{user}:{password}").as_bytes());
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// A token from the service `challenge` names, as a `Bearer` header.
async fn bearer_token(
    client: &TokenClient<'_>,
    challenge: &Challenge,
    credentials: &Credentials,
) -> Result<HeaderValue, RegistryError> {
    let registry = client.registry;
    let Some(realm) = challenge.param("realm") else {
        return Err(RegistryError::Challenge {
            registry: registry.to_owned(),
            detail: "a Bearer challenge without a realm".into(),
        });
    };
    let mut url = reqwest::Url::parse(realm).map_err(|_| RegistryError::Challenge {
        registry: registry.to_owned(),
        detail: format!("a realm that is not a URL: {}", shown(realm)),
    })?;
    // A user name and password in the realm itself would be sent as well: never.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_fragment(None);
    let mut url = client
        .plain_http
        .check(url, registry, "names the token service")?;
    {
        let mut query = url.query_pairs_mut();
        if let Some(service) = challenge.param("service") {
            query.append_pair("service", service);
        }
        query.append_pair("scope", &client.scope);
    }
    let mut request = client.http.get(url);
    if let Credentials::Basic { user, password } = credentials {
        let header = basic(user, password.expose()).ok_or_else(|| RegistryError::Refused {
            registry: registry.to_owned(),
        })?;
        request = request.header(AUTHORIZATION, header);
    }
    let response = request
        .send()
        .await
        .map_err(|e| RegistryError::token_unreachable(registry, &e))?;
    let status = response.status();
    if !status.is_success() {
        if matches!(status.as_u16(), 401 | 403) {
            return Err(RegistryError::Refused {
                registry: registry.to_owned(),
            });
        }
        let detail = super::body::error_detail(response, client.error_wait).await;
        return Err(RegistryError::TokenStatus {
            registry: registry.to_owned(),
            status: status.as_u16(),
            detail,
        });
    }
    let what = format!("the token response of the registry {registry}'s token service");
    let body = read_bounded(response, MAX_TOKEN_RESPONSE_BYTES, &what)
        .await
        .map_err(RegistryError::Body)?;
    let token = token_of(&body).map_err(|detail| RegistryError::NoToken {
        registry: registry.to_owned(),
        detail,
    })?;
    let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
        RegistryError::InvalidToken {
            registry: registry.to_owned(),
        }
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The token of a token service's answer: `token`, else `access_token`. Nothing else is
/// read — `expires_in` and `issued_at` do not matter to a token used for one exchange, and
/// are skipped unparsed, so a peer's number at any extreme (`1e400`, `-1`, `2^64-1`)
/// changes nothing.
fn token_of(body: &[u8]) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(default)]
        token: Option<String>,
        #[serde(default)]
        access_token: Option<String>,
    }
    let answer: Answer = serde_json::from_slice(body)
        .map_err(|e| format!("{}: {}", shown(&e.to_string()), shown_bytes(body)))?;
    [answer.token, answer.access_token]
        .into_iter()
        .flatten()
        .find(|t| !t.is_empty())
        .ok_or_else(|| shown_bytes(body))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_with_quotes_escapes_and_several_schemes() {
        let parsed = parse_challenges(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push", Basic realm="x \"y\"""#,
        );
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].scheme, "bearer");
        assert_eq!(parsed[0].param("realm"), Some("https://auth.example/token"));
        assert_eq!(parsed[0].param("SERVICE"), Some("registry.example"));
        assert_eq!(parsed[0].param("scope"), Some("repository:a/b:pull,push"));
        assert_eq!(parsed[1].scheme, "basic");
        assert_eq!(parsed[1].param("realm"), Some("x \"y\""));
        assert_eq!(
            parse_challenges("Basic realm=plain")[0].param("realm"),
            Some("plain")
        );
        // Unterminated, empty and odd inputs end without a panic.
        for odd in [
            "",
            ",,,",
            "=",
            "Bearer realm=\"x",
            "Bearer ==",
            &"a=".repeat(10_000),
        ] {
            let _ = parse_challenges(odd);
        }
    }

    #[test]
    fn a_token_is_read_from_token_or_access_token_whatever_its_times_say() {
        assert_eq!(
            token_of(br#"{"token":"t1","expires_in":-1}"#).unwrap(),
            "t1"
        );
        assert_eq!(
            token_of(br#"{"access_token":"t2","expires_in":18446744073709551615,"issued_at":"x"}"#)
                .unwrap(),
            "t2"
        );
        assert_eq!(
            token_of(br#"{"token":"","access_token":"t3","expires_in":1e400}"#).unwrap(),
            "t3"
        );
        assert_eq!(
            token_of(b"{\"nothing\":1}\x1b[2J").unwrap_err(),
            "trailing characters at line 1 column 14: {\"nothing\":1}\\u{1b}[2J"
        );
        assert_eq!(
            token_of(br#"{"nothing":1}"#).unwrap_err(),
            r#"{"nothing":1}"#
        );
        assert_eq!(
            token_of(br#"{"token":5}"#).unwrap_err(),
            r#"invalid type: integer `5`, expected a string at line 1 column 10: {"token":5}"#
        );
    }

    #[test]
    fn a_token_with_a_line_break_cannot_become_a_header() {
        assert!(HeaderValue::from_str("Bearer a\nb").is_err());
        assert!(basic("user", "pass").is_some());
        assert_eq!(
            basic("publisher", "s3cret").map(|v| v.to_str().unwrap_or("").to_owned()),
            Some("Basic cHVibGlzaGVyOnMzY3JldA==".to_owned())
        );
        assert!(basic("publisher", "s3cret").is_some_and(|v| v.is_sensitive()));
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
    }
}
