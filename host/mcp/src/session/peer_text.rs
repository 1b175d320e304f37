//! A server's text as the host shows it. Whatever an MCP server says — a JSON-RPC error's
//! message, an HTTP error body rmcp quotes, a protocol version, a tool's name — reaches an
//! error message, `mcp_status`, a warning on stderr or a `serve` notification only escaped
//! (control and bidi characters as escapes: it cannot clear a screen, move the cursor or
//! forge a line) and capped ([`prompt_host_peer::shown`]).

use prompt_host_peer::{shown, shown_within};

/// The most bytes of a server's protocol version shown (a version is ten).
const MAX_VERSION_BYTES: usize = 32;

/// An error of rmcp's as a message shows it: without anything that could carry a secret
/// (rmcp's transport errors print the request's URL at most, and the URL's query is cut),
/// and with the server's part — a JSON-RPC error's message, an HTTP error body — escaped
/// and capped.
pub(crate) fn remote_error(text: &str) -> String {
    // rmcp names the transport's Rust type (`Transport [rmcp::transport::…] error: `), which
    // says nothing to an operator.
    let mut text = text.replace("Send message error ", "");
    while let Some(at) = text.find("Transport [") {
        let Some(end) = text[at..].find("] error: ") else {
            break;
        };
        text.replace_range(at..at + end + "] error: ".len(), "");
    }
    let mut out = String::with_capacity(text.len());
    for word in text.as_str().split_inclusive(char::is_whitespace) {
        let bare = word.trim_end();
        if bare.starts_with("http://") || bare.starts_with("https://") {
            let url = bare.trim_end_matches([')', ',', '.', ';']);
            out.push_str(&super::super::remote::shown_url(url));
            out.push_str(&word[url.len()..]);
        } else {
            out.push_str(word);
        }
    }
    shown(&out)
}

/// A failed lifecycle's error as text, with the cause rmcp drops: its transport errors do
/// not hand on their source, so a server that is down reads `error sending request for url
/// (…)` and nothing of why. The innermost cause is found by hand and added (`…: connection
/// refused`). The text still goes through [`remote_error`].
pub(super) fn lifecycle_error(e: &rmcp::service::ClientInitializeError) -> String {
    let text = e.to_string();
    match innermost_cause(e) {
        Some(cause) if !text.contains(&cause) => format!("{text}: {cause}"),
        _ => text,
    }
}

/// The innermost cause of a transport's failure, if rmcp's error holds one.
fn innermost_cause(e: &rmcp::service::ClientInitializeError) -> Option<String> {
    use rmcp::service::ClientInitializeError as E;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let transport: &(dyn std::error::Error + 'static) = match e {
        E::TransportError { error, .. } => error.error.as_ref(),
        // Its own text says only that both failed.
        E::LegacyFallbackFailed { discover, fallback } => {
            return innermost_cause(fallback).or_else(|| innermost_cause(discover))
        }
        _ => return None,
    };
    let mut current = match transport.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        // The client's error is kept as a field, not as a source.
        Some(StreamableHttpError::Client(client)) => client as &(dyn std::error::Error + 'static),
        _ => transport,
    };
    let mut deeper = false;
    while let Some(next) = current.source() {
        current = next;
        deeper = true;
    }
    deeper.then(|| cause_text(current))
}

/// An operating-system error without its number (`Connection refused (os error 111)` reads
/// `connection refused`), lower-cased at its start as the rest of the message is.
fn cause_text(cause: &(dyn std::error::Error + 'static)) -> String {
    let text = cause.to_string();
    let text = match (
        cause.downcast_ref::<std::io::Error>(),
        text.rfind(" (os error "),
    ) {
        (Some(_), Some(at)) => text[..at].to_owned(),
        _ => text,
    };
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if second.is_lowercase() => {
            let mut out: String = first.to_lowercase().collect();
            out.push_str(&text[first.len_utf8()..]);
            out
        }
        _ => text,
    }
}

/// A server's protocol version as the status and `inspect` show it: escaped, and cut to
/// [`MAX_VERSION_BYTES`] (a real one is `2025-11-25`).
pub(super) fn shown_version(version: &str) -> String {
    shown_within(version, MAX_VERSION_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_error_loses_type_names_and_url_queries() {
        assert_eq!(
            remote_error("Send message error Transport [rmcp::transport::worker::WorkerTransport<X<Y>>] error: HTTP status 500 from https://h.example/mcp?key=s3cr3t, when send discover request"),
            "HTTP status 500 from https://h.example/mcp, when send discover request"
        );
    }

    #[test]
    fn a_server_s_error_message_is_escaped_and_capped() {
        let forged = "Mcp error: -32603: boom\n\u{1b}[2J\rerror: forged\u{202e}";
        assert_eq!(
            remote_error(forged),
            "Mcp error: -32603: boom\\n\\u{1b}[2J\\rerror: forged\\u{202e}"
        );
        let huge = format!("Mcp error: -32603: {}", "x".repeat(20 << 20));
        let shown = remote_error(&huge);
        assert_eq!(shown.len(), 512 + " … (20971027 more bytes)".len());
        assert!(shown.ends_with(" … (20971027 more bytes)"), "{shown}");
    }

    #[test]
    fn a_server_s_version_is_shown_escaped_and_short() {
        assert_eq!(shown_version("2025-11-25"), "2025-11-25");
        assert_eq!(shown_version("\u{1b}[2J2025"), "\\u{1b}[2J2025");
        assert_eq!(
            shown_version(&"9".repeat(100)),
            format!("{} … (68 more bytes)", "9".repeat(32))
        );
    }
}
