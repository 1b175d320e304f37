//! OTLP export of prompt-host's spans (docs/observability.md), opt-in through the standard
//! OpenTelemetry environment variables: nothing is installed, and nothing is paid, unless an
//! OTLP endpoint (or `OTEL_TRACES_EXPORTER=otlp`) is named. Spans leave over http/protobuf
//! in batches from a thread of the exporter's own; a command flushes them before it exits.
//!
//! Only prompt-host's own spans are exported (targets `prompt_host*`): the HTTP client the
//! exporter sends with has spans of its own, and exporting those would feed the exporter
//! with its own work. The exporter's failures (a collector that is down, refuses, redirects
//! or times out) are warnings on stderr, a few at most, never a failed command. The
//! collector is a network peer: what it answers is bounded and what it says is escaped
//! ([`export`], [`warnings`]).

mod export;
mod warnings;

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{Layer, Registry};

use export::{BoundedExporter, CollectorClient, Exchange};
use warnings::{ExportWarnings, Warnings};

/// The variable that asks for prompt text in spans, as the OpenTelemetry GenAI
/// instrumentations name it.
pub const CAPTURE_CONTENT: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// The service name spans carry when `OTEL_SERVICE_NAME` does not give one.
const SERVICE_NAME: &str = "prompt-host";

/// How long one export may take when the environment does not say (the OpenTelemetry
/// default).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The export a command line runs with; flushed and stopped when dropped.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

/// What the environment asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    /// No export (the default).
    Off,
    /// Export over OTLP/HTTP with protobuf.
    Otlp,
    /// Export asked for in a way prompt-host does not support: the warning says which.
    Unsupported(String),
}

/// Read the OpenTelemetry variables through `var`.
fn asked(var: impl Fn(&str) -> Option<String>) -> Asked {
    let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Asked::Off;
    }
    let named_endpoint = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .is_some();
    match set("OTEL_TRACES_EXPORTER") {
        // A comma-separated list; "none" anywhere means no export.
        Some(list) => {
            let names: Vec<&str> = list.split(',').map(str::trim).collect();
            if names.contains(&"none") {
                return Asked::Off;
            }
            if let Some(other) = names.iter().find(|name| **name != "otlp") {
                return Asked::Unsupported(format!(
                    "OTEL_TRACES_EXPORTER={} is not supported (prompt-host exports with \"otlp\" only, not \"{other}\")",
                    list.trim()
                ));
            }
        }
        None if !named_endpoint => return Asked::Off,
        None => {}
    }
    for name in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        if let Some(protocol) = set(name) {
            if protocol.trim() != "http/protobuf" {
                return Asked::Unsupported(format!(
                    "{name}={} is not supported (prompt-host exports with http/protobuf only)",
                    protocol.trim()
                ));
            }
            break;
        }
    }
    Asked::Otlp
}

/// How long one export may take, retries included: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else 10 s — the precedence the exporter
/// itself reads them in.
fn export_timeout(var: impl Fn(&str) -> Option<String>) -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|name| var(name).and_then(|v| v.trim().parse::<u64>().ok()))
    .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
}

/// The root span of a one-shot command, named for it (`prompt-host step`), so that
/// everything the command does — compiles, plugin loads, MCP servers' opening exchanges,
/// the step — is one trace. `serve` and `dev` get none: they run for as long as they are
/// used, and a trace that lasts hours is not one a backend shows; each request of `serve`
/// and each rendering of `dev` is a trace of its own.
pub fn command_span(command: &super::Command) -> tracing::Span {
    use super::Command;
    let (name, otel_name) = match command {
        Command::Serve { .. } | Command::Dev { .. } => return tracing::Span::none(),
        Command::Assemble { .. } => ("assemble", "prompt-host assemble"),
        Command::Render { .. } => ("render", "prompt-host render"),
        Command::Step { .. } => ("step", "prompt-host step"),
        Command::Assistant { .. } => ("assistant", "prompt-host assistant"),
        Command::ToolResult { .. } => ("tool-result", "prompt-host tool-result"),
        Command::Replay { .. } => ("replay", "prompt-host replay"),
        Command::Compact { .. } => ("compact", "prompt-host compact"),
        Command::Inspect { .. } => ("inspect", "prompt-host inspect"),
        Command::Call { .. } => ("call", "prompt-host call"),
        Command::Check { .. } => ("check", "prompt-host check"),
        Command::New(_) => ("new", "prompt-host new"),
        Command::Pull { .. } => ("pull", "prompt-host pull"),
        Command::Push { .. } => ("push", "prompt-host push"),
        Command::Lock { .. } => ("lock", "prompt-host lock"),
        Command::Sessions { .. } => ("sessions", "prompt-host sessions"),
        Command::Skill { .. } => ("skill", "prompt-host skill"),
    };
    tracing::info_span!(
        target: "prompt_host::command",
        parent: None,
        "prompt_host.command",
        otel.name = otel_name,
        prompt_host.command = name,
        otel.status_code = tracing::field::Empty,
    )
}

/// Mark a command's span as failed (OpenTelemetry's `ERROR` status; the error's text is not
/// an attribute: it can quote what a plugin said).
pub fn command_failed(span: &tracing::Span) {
    span.record("otel.status_code", "ERROR");
}

/// Whether the environment asks for prompt text in spans.
pub fn capture_content() -> bool {
    std::env::var(CAPTURE_CONTENT).is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Start the export the environment asks for, if any. Call it outside any async runtime:
/// the exporter's blocking HTTP client must not be built or dropped inside one. A
/// configuration that cannot be honoured is a warning and no export, never a failed
/// command: traces are an operator's view, not the work.
pub fn start() -> Option<Telemetry> {
    match asked(|name| std::env::var(name).ok()) {
        Asked::Off => None,
        Asked::Unsupported(why) => {
            super::warn(&format!("warning: no traces are exported: {why}"));
            None
        }
        Asked::Otlp => match install() {
            Ok(telemetry) => Some(telemetry),
            Err(e) => {
                super::warn(&format!(
                    "warning: no traces are exported: {}",
                    super::chain(&e)
                ));
                None
            }
        },
    }
}

fn install() -> anyhow::Result<Telemetry> {
    // rustls for an https:// collector, with ring: installed once per process (a second
    // command line in the same process finds it installed, which is fine).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let timeout = export_timeout(|name| std::env::var(name).ok());
    let exchange = Exchange::new(timeout);
    let warnings = Arc::new(Warnings::to_stderr());
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(CollectorClient::new(exchange.clone())?)
        .with_timeout(timeout)
        .build()
        .map_err(|e| anyhow::anyhow!("cannot build the OTLP exporter: {e}"))?;
    let exporter = BoundedExporter::new(exporter, exchange, warnings.clone());
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(SERVICE_NAME);
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let ours =
        tracing_subscriber::filter::filter_fn(|meta| meta.target().starts_with("prompt_host"));
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("prompt-host"))
        .with_filter(ours);
    let subscriber = Registry::default()
        .with(spans)
        .with(ExportWarnings::new(warnings));
    if tracing::subscriber::set_global_default(subscriber).is_err() {
        // A subscriber is global and set once per process: the process installed its own,
        // or an earlier command line in it did (the Python package runs the command line in
        // process). That one's export ended with its command, so a later command in the same
        // process exports nothing, and says so.
        let _ = provider.shutdown();
        anyhow::bail!(
            "a tracing subscriber is already installed in this process (only the first command line run in a process exports)"
        );
    }
    Ok(Telemetry { provider })
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Sends what the batch holds; a collector that does not answer costs at most the
        // export timeout (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default), or the SDK's 5 s.
        if let Err(e) = self.provider.shutdown() {
            super::warn(&format!(
                "warning: traces not exported: {}",
                prompt_host::peer::shown(&e.to_string())
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(pairs: &[(&str, &str)]) -> Asked {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        asked(|name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn export_is_off_unless_an_endpoint_or_the_exporter_is_named() {
        assert_eq!(from(&[]), Asked::Off);
        assert_eq!(from(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]), Asked::Off);
        assert_eq!(
            from(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")]),
            Asked::Otlp
        );
        assert_eq!(
            from(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://h/v1/traces")]),
            Asked::Otlp
        );
        assert_eq!(from(&[("OTEL_TRACES_EXPORTER", "otlp")]), Asked::Otlp);
    }

    #[test]
    fn disabled_or_none_wins_over_an_endpoint() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert_eq!(from(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")]), Asked::Off);
        assert_eq!(
            from(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")]),
            Asked::Off
        );
        assert_eq!(
            from(&[endpoint, ("OTEL_SDK_DISABLED", "false")]),
            Asked::Otlp
        );
    }

    #[test]
    fn other_protocols_and_exporters_are_named_as_unsupported() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317");
        assert_eq!(
            from(&[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]),
            Asked::Unsupported(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (prompt-host exports with \
                 http/protobuf only)"
                    .into()
            )
        );
        // The traces-specific variable is read first.
        assert_eq!(
            from(&[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
            ]),
            Asked::Otlp
        );
        assert_eq!(
            from(&[("OTEL_TRACES_EXPORTER", "zipkin")]),
            Asked::Unsupported(
                "OTEL_TRACES_EXPORTER=zipkin is not supported (prompt-host exports with \
                 \"otlp\" only, not \"zipkin\")"
                    .into()
            )
        );
        assert_eq!(
            from(&[("OTEL_TRACES_EXPORTER", "otlp, console")]),
            Asked::Unsupported(
                "OTEL_TRACES_EXPORTER=otlp, console is not supported (prompt-host exports \
                 with \"otlp\" only, not \"console\")"
                    .into()
            )
        );
        assert_eq!(from(&[("OTEL_TRACES_EXPORTER", "otlp,none")]), Asked::Off);
    }

    #[test]
    fn the_export_timeout_is_read_as_the_exporter_reads_it() {
        let timeout = |pairs: &[(&str, &str)]| {
            export_timeout(|name| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            })
        };
        assert_eq!(timeout(&[]), Duration::from_secs(10));
        assert_eq!(
            timeout(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "1500")]),
            Duration::from_millis(1500)
        );
        assert_eq!(
            timeout(&[
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700")
            ]),
            Duration::from_millis(700)
        );
        // Not a number: the next one, as the exporter does.
        assert_eq!(
            timeout(&[
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
                ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "soon")
            ]),
            Duration::from_millis(1500)
        );
    }
}
