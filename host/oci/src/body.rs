//! Bodies a registry sends, read within bounds: an error body (a prefix of it, waited for
//! briefly, shown escaped and capped) and a component blob (streamed into a buffer of the
//! size its manifest declares, hashed as it arrives, refused past that size).
//!
//! The manifest and the token response are read with [`prompt_host_peer::read_bounded`]: whole
//! or refused. An error body is not worth refusing: what of it arrived is shown.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::RegistryError;
use prompt_host_peer::{shown, shown_bytes, BodyError, MAX_SHOWN_BYTES};

/// The most of an error body read (enough for any OCI error envelope worth reading).
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// What an error answer said.
#[derive(Debug, Default)]
pub(super) struct PeerError {
    /// The OCI error codes of its envelope (`MANIFEST_UNKNOWN`, …), if it had one.
    pub(super) codes: Vec<String>,
    /// `: ` and the envelope's messages or the body, shown; empty for an empty body.
    pub(super) detail: String,
}

/// The first [`MAX_ERROR_BODY_BYTES`] of `response`'s body, waited for at most `wait`, as
/// [`PeerError`] says it. A body that trickles is shown as far as it arrived.
pub(super) async fn read_error(mut response: reqwest::Response, wait: Duration) -> PeerError {
    let declared = response.content_length();
    let mut body = Vec::new();
    let complete = tokio::time::timeout(wait, read_prefix(&mut response, &mut body))
        .await
        .unwrap_or(false);
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    if complete {
        if let Ok(envelope) = serde_json::from_slice::<Envelope>(&body) {
            if !envelope.errors.is_empty() {
                let text = envelope
                    .errors
                    .iter()
                    .map(|e| format!("{}: {}", e.code, e.message))
                    .collect::<Vec<_>>()
                    .join("; ");
                return PeerError {
                    codes: envelope.errors.into_iter().map(|e| e.code).collect(),
                    detail: format!(": {}", shown(&text)),
                };
            }
        }
    }
    PeerError {
        codes: Vec::new(),
        detail: shown_prefix(&body, complete, declared),
    }
}

/// [`read_error`]'s detail alone.
pub(super) async fn error_detail(response: reqwest::Response, wait: Duration) -> String {
    read_error(response, wait).await.detail
}

/// Read `response` into `body` up to [`MAX_ERROR_BODY_BYTES`]; whether the body ended
/// there (not cut, not failed).
async fn read_prefix(response: &mut reqwest::Response, body: &mut Vec<u8>) -> bool {
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_ERROR_BODY_BYTES - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    return false;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}

/// `: ` and the first [`MAX_SHOWN_BYTES`] of `body`, shown, with how much more there was
/// (as declared, as read, or "more" when the rest was not read); empty for an empty body.
fn shown_prefix(body: &[u8], complete: bool, declared: Option<u64>) -> String {
    if body.iter().all(u8::is_ascii_whitespace) && complete {
        return String::new();
    }
    let head = &body[..body.len().min(MAX_SHOWN_BYTES)];
    let mut out = format!(": {}", shown_bytes(head));
    let total = match declared {
        Some(n) => Some(n),
        None if complete => u64::try_from(body.len()).ok(),
        None => None,
    };
    let shown_len = u64::try_from(head.len()).unwrap_or(u64::MAX);
    match total {
        Some(total) if total > shown_len => {
            out.push_str(&format!(" … ({} more bytes)", total - shown_len));
        }
        Some(_) => {}
        None => out.push_str(" … (more bytes, not read)"),
    }
    out
}

/// The component blob of `response`: at most `declared` bytes (the manifest's layer size;
/// a declared `Content-Length` over it is refused before anything is read), hashed as they
/// arrive and checked against `digest`.
pub(super) async fn download_blob(
    mut response: reqwest::Response,
    declared: u64,
    digest: &str,
) -> Result<Vec<u8>, RegistryError> {
    let too_large = || RegistryError::BlobTooLarge { declared };
    if response.content_length().is_some_and(|n| n > declared) {
        return Err(too_large());
    }
    let size = usize::try_from(declared).map_err(|_| too_large())?;
    let mut bytes = Vec::new();
    // Reserved, not touched: pages the registry never fills are never resident. A failure
    // to reserve is an error, not an abort.
    bytes.try_reserve_exact(size).map_err(|_| too_large())?;
    let mut hasher = Sha256::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if chunk.len() > size - bytes.len() {
                    return Err(too_large());
                }
                hasher.update(&chunk);
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(RegistryError::Body(BodyError::Read {
                    what: "the component".into(),
                    cause: prompt_host_peer::innermost(&e),
                }))
            }
        }
    }
    let actual: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let actual = format!("sha256:{actual}");
    if actual != digest {
        return Err(RegistryError::DigestMismatch {
            what: "the component",
            expected: digest.to_owned(),
            actual,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_body_is_shown_escaped_capped_and_counted() {
        assert_eq!(shown_prefix(b"", true, Some(0)), "");
        assert_eq!(shown_prefix(b" \n", true, None), "");
        assert_eq!(
            shown_prefix(b"oops\n\x1b[31mwarning: forged", true, None),
            ": oops\\n\\u{1b}[31mwarning: forged"
        );
        let big = vec![b'x'; 1000];
        assert_eq!(
            shown_prefix(&big, true, None),
            format!(": {} … (488 more bytes)", "x".repeat(512))
        );
        assert_eq!(
            shown_prefix(&big, false, Some(20 << 20)),
            format!(": {} … ({} more bytes)", "x".repeat(512), (20 << 20) - 512)
        );
        assert_eq!(
            shown_prefix(&big, false, None),
            format!(": {} … (more bytes, not read)", "x".repeat(512))
        );
    }
}
