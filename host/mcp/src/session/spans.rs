//! The spans of a session's MCP exchanges, with the OpenTelemetry MCP semantic conventions'
//! attributes. A server's text reaches a span only where it looks like what it claims to be
//! (a protocol version): an exporter copies every attribute into a trace backend.

/// The span of one MCP request this client sends (the lifecycle's, `server/discover`, or one
/// `tools/list` page), with the OpenTelemetry MCP semantic conventions' attributes: named by
/// the method (`otel.name`), a client span over a pipe (stdio) or TCP (HTTP).
pub(super) fn exchange_span(method: &'static str, server: &str, transport: &str) -> tracing::Span {
    let network = match transport {
        "http" => "tcp",
        "stdio" => "pipe",
        _ => "",
    };
    let span = tracing::info_span!(
        "prompt_host.mcp",
        otel.name = method,
        otel.kind = "client",
        mcp.method.name = method,
        mcp.protocol.version = tracing::field::Empty,
        network.transport = tracing::field::Empty,
        prompt_host.mcp.server = server,
    );
    if !network.is_empty() {
        span.record("network.transport", network);
    }
    span
}

/// The span of a lifecycle's first exchange: named once it is known which lifecycle was used
/// (`server/discover` or `initialize`), or by what was tried when none answered.
pub(super) fn lifecycle_span(server: &str, transport: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "prompt_host.mcp",
        otel.name = tracing::field::Empty,
        otel.kind = "client",
        mcp.method.name = tracing::field::Empty,
        mcp.protocol.version = tracing::field::Empty,
        network.transport = if transport == "http" { "tcp" } else { "pipe" },
        prompt_host.mcp.server = server,
    );
    span
}

/// A server's text as a span attribute: a version is short and printable ASCII, so anything
/// else an untrusted server sends is not copied into every exporter's data.
pub(super) fn attribute_text(text: &str) -> &str {
    let plain = !text.is_empty() && text.len() <= 32 && text.bytes().all(|b| b.is_ascii_graphic());
    if plain {
        text
    } else {
        "(not a version)"
    }
}

#[cfg(test)]
mod tests {
    use super::attribute_text;

    #[test]
    fn a_server_s_version_reaches_a_span_only_when_it_looks_like_one() {
        assert_eq!(attribute_text("2025-06-18"), "2025-06-18");
        for hostile in [
            "x".repeat(33),
            "2025\n06".into(),
            "v\u{202e}1".into(),
            String::new(),
        ] {
            assert_eq!(attribute_text(&hostile), "(not a version)", "{hostile:?}");
        }
    }
}
