//! The OAuth 2.1 client credentials grant (RFC 6749 §4.4) at a configured token endpoint:
//! one token request, and when its token is to be replaced.
//!
//! The token endpoint is a network peer (docs/threat-model.md, "Network peers"). Its answer
//! is read up to [`MAX_TOKEN_RESPONSE_BYTES`] within the connection's timeout (the whole
//! exchange, not each read); a redirect is not followed (the client secret goes to the
//! configured endpoint only); what it says in an error (`error`, `error_description`) is
//! escaped and capped; and its `expires_in` is a number at its extremes: `0` would renew the
//! token (and reconnect) in a loop, `2^64-1` overflows an instant. A token is renewed at
//! half its life, at most 30 s before it expires, but never sooner than
//! [`MIN_TOKEN_RENEWAL`] after it was fetched nor later than [`MAX_TOKEN_LIFE`] (also when
//! it does not say when it expires).

use std::time::Duration;

use prompt_host_peer::{innermost, instant_after, read_bounded, shown};

use super::super::Secret;
use super::{check_endpoint, shown_url, AccessToken, ClientCredentials};

/// The most bytes of a token response read: a token response is a few kilobytes at most.
pub(crate) const MAX_TOKEN_RESPONSE_BYTES: usize = 64 << 10;

/// The soonest a token is renewed after it was fetched, whatever its `expires_in` says (`0`
/// included). Renewing ends the session and starts the next one, so this is also the
/// shortest time between two reconnects a token can cause: the longest delay between two
/// attempts against a failing server (the default reconnect policy's), no more often.
pub(crate) const MIN_TOKEN_RENEWAL: Duration = Duration::from_secs(5);

/// The longest a token is used before it is renewed, however long its `expires_in`: a day.
pub(crate) const MAX_TOKEN_LIFE: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest a token is renewed before it expires.
const MAX_EARLY: Duration = Duration::from_secs(30);

/// How long after it was fetched a token of `expires_in` is renewed: at half its life, at
/// most 30 s early (as rmcp's own authorization manager does, so a request never goes out
/// with an expiring token), within [`MIN_TOKEN_RENEWAL`] and [`MAX_TOKEN_LIFE`].
pub(crate) fn renew_after(expires_in: Duration) -> Duration {
    let life = expires_in.min(MAX_TOKEN_LIFE);
    let early = (life / 2).min(MAX_EARLY);
    life.saturating_sub(early).max(MIN_TOKEN_RENEWAL)
}

/// [`renew_after`] a token's `expires_in`, if it gave one. A token that does not say when
/// it expires is renewed after the longest life: it expires some time, and a day is when
/// the host asks again rather than fail then.
pub(crate) fn renew_in(expires_in: Option<Duration>) -> Duration {
    expires_in.map_or(MAX_TOKEN_LIFE, renew_after)
}

/// Fetch an access token with the client credentials grant, within `timeout`. The error says
/// what the authorization server answered (its `error` code and description, escaped), never
/// a secret.
pub(crate) async fn fetch_token(
    http: &reqwest::Client,
    grant: &ClientCredentials,
    server_url: &str,
    timeout: Duration,
) -> Result<AccessToken, String> {
    use oauth2::basic::BasicClient;
    use oauth2::{AuthType, ClientId, ClientSecret, Scope, TokenResponse, TokenUrl};
    let shown_endpoint = shown_url(&grant.token_url);
    check_endpoint(&grant.token_url, "the token endpoint")?;
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
    let answer = prompt_host_peer::within(timeout, request.request_async(&send))
        .await
        .ok_or_else(|| {
            format!(
                "the token endpoint {shown_endpoint} did not answer within {} ms",
                timeout.as_millis()
            )
        })?;
    let token = answer.map_err(|e| refused(&shown_endpoint, e))?;
    let value = token.access_token().secret();
    check_sendable(value).map_err(|why| format!("the token endpoint {shown_endpoint} {why}"))?;
    let fetched = tokio::time::Instant::now();
    let renew_at = instant_after(fetched, renew_in(token.expires_in()));
    Ok(AccessToken {
        value: Secret::new(value.clone()),
        renew_at,
    })
}

/// A failed token request as an error message: what the server answered, escaped.
fn refused(
    endpoint: &str,
    error: oauth2::RequestTokenError<
        TokenHttpError,
        oauth2::StandardErrorResponse<oauth2::basic::BasicErrorResponseType>,
    >,
) -> String {
    use oauth2::RequestTokenError;
    match error {
        RequestTokenError::ServerResponse(r) => {
            let mut text = format!(
                "the token endpoint {endpoint} refused the client credentials: {}",
                shown(r.error().as_ref())
            );
            if let Some(description) = r.error_description() {
                text.push_str(&format!(" ({})", shown(description)));
            }
            text
        }
        RequestTokenError::Request(e) => format!("the token endpoint {endpoint}: {e}"),
        RequestTokenError::Parse(_, body) => {
            format!("the token endpoint {endpoint} {}", not_a_token(&body))
        }
        RequestTokenError::Other(e) => format!("the token endpoint {endpoint}: {}", shown(&e)),
    }
}

/// What is wrong with an answer that did not parse as a token response, by field: the
/// parser's own message is not shown, as it may quote the answer (which holds the token).
/// JSON's syntax errors quote nothing and are shown (`number out of range` for `1e400`).
fn not_a_token(body: &[u8]) -> String {
    let value = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => value,
        Err(e) => return format!("answered something that is not JSON ({e})"),
    };
    let Some(fields) = value.as_object() else {
        return "answered something that is not a token response (not a JSON object)".into();
    };
    let field = match (
        fields.get("access_token"),
        fields.get("token_type"),
        fields.get("expires_in"),
    ) {
        (Some(serde_json::Value::String(_)), Some(serde_json::Value::String(_)), expires) => {
            match expires {
                None | Some(serde_json::Value::Null) => None,
                Some(n) if n.as_u64().is_some() => None,
                Some(_) => {
                    return "answered a token response whose `expires_in` is not a whole number of seconds (0 to 2^64-1)".into()
                }
            }
        }
        (Some(serde_json::Value::String(_)), _, _) => Some("token_type"),
        _ => Some("access_token"),
    };
    match field {
        Some(field) => {
            format!("answered a token response without a valid `{field}` (a string is expected)")
        }
        None => "answered something that is not a token response".into(),
    }
}

/// Whether `token` can go out as `Authorization: Bearer <token>`: a token with a line break
/// or another control character cannot be sent (and would be a header injection if it were).
fn check_sendable(token: &str) -> Result<(), String> {
    if token.is_empty() {
        return Err("answered an empty access token".into());
    }
    if http::HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
        return Err(
            "answered an access token that cannot be sent in a header (it holds a line break or another control character)"
                .into(),
        );
    }
    Ok(())
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
pub(crate) struct TokenHttpError(String);

/// One token request through `http`. A redirect is refused unread (the client's policy
/// follows none); a failure that is not JSON is its status alone; any other answer's body
/// is read up to [`MAX_TOKEN_RESPONSE_BYTES`].
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
        .map_err(|e| TokenHttpError(innermost(&e)))?;
    let status = answer.status();
    if status.is_redirection() {
        return Err(TokenHttpError(format!(
            "answered {status}, a redirect, which is not followed (the client secret goes to the configured token endpoint only)"
        )));
    }
    let json = answer
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if !status.is_success() && !json {
        return Err(TokenHttpError(format!("answered {status}")));
    }
    let headers = answer.headers().clone();
    let body = read_bounded(answer, MAX_TOKEN_RESPONSE_BYTES, "the token response")
        .await
        .map_err(|e| TokenHttpError(e.to_string()))?;
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_renewed_at_half_its_life_within_the_floor_and_the_cap() {
        let s = Duration::from_secs;
        // Half its life, at most 30 s early.
        assert_eq!(renew_after(s(20)), s(10));
        assert_eq!(renew_after(s(3600)), s(3570));
        // 0 and tiny lives: not a loop.
        assert_eq!(renew_after(s(0)), MIN_TOKEN_RENEWAL);
        assert_eq!(renew_after(s(1)), MIN_TOKEN_RENEWAL);
        // 2^64-1 seconds: a day, less the 30 s; no overflow.
        assert_eq!(renew_after(s(u64::MAX)), MAX_TOKEN_LIFE - s(30));
        assert_eq!(renew_after(Duration::MAX), MAX_TOKEN_LIFE - s(30));
        // Silent on it: a day.
        assert_eq!(renew_in(None), MAX_TOKEN_LIFE);
        assert_eq!(renew_in(Some(s(20))), s(10));
        let now = tokio::time::Instant::now();
        assert!(instant_after(now, renew_after(s(u64::MAX))).is_some());
    }

    #[test]
    fn an_answer_that_is_no_token_response_is_named_by_its_field() {
        let why = |body: &str| not_a_token(body.as_bytes());
        let whole = "answered a token response whose `expires_in` is not a whole number of seconds (0 to 2^64-1)";
        for expires in ["-1", "3600.5", "\"3600\"", "true"] {
            let body =
                format!(r#"{{"access_token":"t","token_type":"Bearer","expires_in":{expires}}}"#);
            assert_eq!(why(&body), whole, "{body}");
        }
        assert_eq!(
            why(r#"{"access_token":"t","token_type":"Bearer","expires_in":1e400}"#),
            "answered something that is not JSON (number out of range at line 1 column 60)"
        );
        assert_eq!(
            why(r#"{"token_type":"Bearer"}"#),
            "answered a token response without a valid `access_token` (a string is expected)"
        );
        assert_eq!(
            why(r#"{"access_token":"secret-7","token_type":5}"#),
            "answered a token response without a valid `token_type` (a string is expected)"
        );
        assert_eq!(
            why("[1]"),
            "answered something that is not a token response (not a JSON object)"
        );
        assert!(!why(r#"{"access_token":"secret-7","token_type":5}"#).contains("secret-7"));
    }

    #[test]
    fn a_token_that_cannot_be_a_header_is_refused_by_name() {
        assert_eq!(check_sendable("abc.def-ghi_~+/="), Ok(()));
        assert_eq!(
            check_sendable("abc\r\nX-Injected: 1"),
            Err("answered an access token that cannot be sent in a header (it holds a line break or another control character)".into())
        );
        assert_eq!(
            check_sendable("abc\n"),
            Err("answered an access token that cannot be sent in a header (it holds a line break or another control character)".into())
        );
        assert_eq!(
            check_sendable(""),
            Err("answered an empty access token".into())
        );
    }
}
