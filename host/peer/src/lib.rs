//! What the host takes from a network peer — a registry, an MCP server, a token service, a
//! collector — before it holds or shows it: a body read up to a bound (never whole first and
//! measured after), a whole exchange bounded in time, and a peer's text escaped and capped
//! before it reaches a message, a log line or a terminal.
//!
//! A peer is untrusted (docs/threat-model.md, "Network peers"). Its error body can be 20 MB
//! of ESC sequences and forged `error:` lines; its response can be endless or trickled one
//! byte a second. These helpers are the one place that decides what of it the host keeps.
//!
//! A crate of its own, on `prompt-host-core` and reqwest alone, so that the clients of
//! network peers (the OCI registry client, the MCP client) can be crates of their own
//! without depending on each other or on the WebAssembly runtime. The `prompt-host` crate
//! re-exports it as `prompt_host::peer`.

use std::time::Duration;

pub mod egress;
mod secret;

pub use secret::{resolve_secret, Secret};

/// The most bytes of a peer's text (an error body, a JSON-RPC error message, a child's
/// stderr tail, a collector's message) shown in one message; the rest is counted, not shown.
pub const MAX_SHOWN_BYTES: usize = 512;

/// `text` as a message may show it: control and bidirectional-text characters written as
/// escapes (`\n`, `\u{1b}`: one line, nothing the terminal acts on), at most
/// [`MAX_SHOWN_BYTES`] of it, cut at a character boundary and followed by how much was left
/// out.
pub fn shown(text: &str) -> String {
    shown_within(text, MAX_SHOWN_BYTES)
}

/// [`shown`] with another cap, in bytes of the original text.
pub fn shown_within(text: &str, max_bytes: usize) -> String {
    prompt_host_core::escape::shown_within(text, max_bytes)
}

/// [`shown`] for bytes that may not be UTF-8 (an HTTP body): invalid sequences become
/// U+FFFD before escaping.
pub fn shown_bytes(bytes: &[u8]) -> String {
    // A character cut at the cap becomes U+FFFD, which is what it is: a cut.
    let head = &bytes[..bytes.len().min(MAX_SHOWN_BYTES)];
    let mut out =
        prompt_host_core::escape::escape(String::from_utf8_lossy(head).trim()).into_owned();
    if bytes.len() > head.len() {
        out.push_str(&format!(" … ({} more bytes)", bytes.len() - head.len()));
    }
    out
}

/// Why a body could not be read within its bound.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The peer sent (or declared) more than the bound.
    #[error("{what} is larger than {limit} bytes")]
    TooLarge {
        /// What the body is ("the manifest", "the token response").
        what: String,
        /// The bound.
        limit: usize,
    },
    /// The connection failed while the body was read.
    #[error("{what} could not be read: {cause}")]
    Read {
        /// What the body is.
        what: String,
        /// reqwest's innermost cause, without the URL.
        cause: String,
    },
}

/// The body of `response`, read chunk by chunk and refused as soon as it passes `limit`
/// bytes (a declared `Content-Length` over it is refused before anything is read). `what`
/// names the body in the error.
pub async fn read_bounded(
    mut response: reqwest::Response,
    limit: usize,
    what: &str,
) -> Result<Vec<u8>, BodyError> {
    let too_large = || BodyError::TooLarge {
        what: what.to_owned(),
        limit,
    };
    if response
        .content_length()
        .is_some_and(|declared| declared > limit as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => {
                return Err(BodyError::Read {
                    what: what.to_owned(),
                    cause: innermost(&e),
                })
            }
        }
    }
}

/// A reqwest error's innermost cause ("timed out" for a timeout), without the URL reqwest
/// repeats at every level: the caller names the peer once, without its query.
pub fn innermost(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "timed out".into();
    }
    let mut source: &dyn std::error::Error = error;
    while let Some(next) = source.source() {
        source = next;
    }
    shown(&source.to_string())
}

/// `future` within `limit`, or `None` when the limit passed first (the future is dropped,
/// which ends the exchange: its connection is closed). A limit of zero allows nothing: the
/// future is not polled at all. (tokio's timer polls the future before its clock, which
/// ticks by the millisecond, so a zero limit would otherwise let a fast peer through.)
pub async fn within<F: std::future::Future>(limit: Duration, future: F) -> Option<F::Output> {
    if limit.is_zero() {
        return None;
    }
    tokio::time::timeout(limit, future).await.ok()
}

/// `future` by `when`, or `None` when `when` came first; like [`within`], a time already
/// past allows nothing.
pub async fn by<F: std::future::Future>(
    when: tokio::time::Instant,
    future: F,
) -> Option<F::Output> {
    if when <= tokio::time::Instant::now() {
        return None;
    }
    tokio::time::timeout_at(when, future).await.ok()
}

/// `now + seconds` a peer named (a token's `expires_in`, a time to live), or `None` when it
/// does not fit an instant: a peer's number is never added unchecked.
pub fn instant_after(now: tokio::time::Instant, after: Duration) -> Option<tokio::time::Instant> {
    now.checked_add(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_text_is_escaped_and_capped() {
        assert_eq!(shown("plain"), "plain");
        assert_eq!(
            shown("ok\n\u{1b}[2Jerror: forged\r\u{202e}"),
            "ok\\n\\u{1b}[2Jerror: forged\\r\\u{202e}"
        );
        let long = "x".repeat(20 << 20);
        let out = shown(&long);
        assert_eq!(
            out,
            format!("{} … ({} more bytes)", "x".repeat(512), (20 << 20) - 512)
        );
        // Cut at a character boundary.
        let wide = "é".repeat(400);
        let out = shown(&wide);
        assert!(out.starts_with(&"é".repeat(256)), "{out}");
        assert!(out.ends_with(" … (288 more bytes)"), "{out}");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_replaced() {
        assert_eq!(shown_bytes(b"bad \xff\x1b"), "bad \u{fffd}\\u{1b}");
        let big = vec![b'a'; 10_000];
        assert!(shown_bytes(&big).ends_with(" … (9488 more bytes)"));
    }

    #[test]
    fn a_peers_number_never_overflows_an_instant() {
        let now = tokio::time::Instant::now();
        assert!(instant_after(now, Duration::from_secs(u64::MAX)).is_none());
        assert!(instant_after(now, Duration::from_secs(60)).is_some());
    }

    #[test]
    fn a_limit_of_zero_allows_nothing_even_a_future_already_done() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            assert_eq!(within(Duration::ZERO, async { 1 }).await, None);
            assert_eq!(within(Duration::from_secs(5), async { 1 }).await, Some(1));
            let now = tokio::time::Instant::now();
            assert_eq!(by(now, async { 1 }).await, None);
            assert_eq!(by(now + Duration::from_secs(5), async { 1 }).await, Some(1));
        });
    }
}
