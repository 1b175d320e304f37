//! What the trace export says on stderr: a few warnings per process at most, each one line,
//! with whatever came from the collector escaped and capped.
//!
//! Two sources share one budget: the export itself ([`super::export`] says why an export
//! failed, once per failed export) and the OpenTelemetry SDK's own internal log
//! ([`ExportWarnings`]: a partial success, spans dropped, a shutdown that timed out). A
//! collector's text reaches both — a partial success's `error_message` is whatever the
//! collector wrote — so every value is passed through [`prompt_host::peer::shown`]: ESC,
//! CR, bidi controls and newlines become escapes, and 20 MB becomes 512 bytes and a count.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use prompt_host::peer::shown;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

/// The exporter's warnings shown per process: a collector that stays down would otherwise
/// print one every batch, for as long as `serve` runs.
const MAX_WARNINGS: usize = 5;

/// The SDK's events about a failed export. The export reports each failure itself, with
/// the reason the SDK's text leaves out ("network error"), so these would only repeat it.
const REPORTED_BY_THE_EXPORT: [&str; 2] = ["BatchSpanProcessor.ExportError", "Export.Failed."];

/// Where a warning line goes.
type Sink = Box<dyn Fn(&str) + Send + Sync>;

/// The warnings budget of one process, and where its lines go.
pub(super) struct Warnings {
    shown: AtomicUsize,
    sink: Sink,
}

impl std::fmt::Debug for Warnings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warnings")
            .field("shown", &self.shown)
            .finish_non_exhaustive()
    }
}

impl Warnings {
    /// Warnings written to stderr.
    pub(super) fn to_stderr() -> Self {
        Warnings::new(Box::new(crate::warn))
    }

    fn new(sink: Sink) -> Self {
        Warnings {
            shown: AtomicUsize::new(0),
            sink,
        }
    }

    /// `warning: trace export: <text>` on stderr, unless the budget is spent (the first
    /// warning past it says that further ones are not shown). `text` is the caller's own,
    /// already escaped where it holds a peer's.
    pub(super) fn say(&self, text: &str) {
        let shown = self.shown.fetch_add(1, Ordering::Relaxed);
        if shown > MAX_WARNINGS {
            return;
        }
        if shown == MAX_WARNINGS {
            (self.sink)("warning: trace export: further warnings are not shown");
            return;
        }
        (self.sink)(&format!("warning: trace export: {text}"));
    }
}

/// The OpenTelemetry SDK's own warnings and errors, on stderr through [`Warnings`].
pub(super) struct ExportWarnings {
    warnings: Arc<Warnings>,
}

impl ExportWarnings {
    pub(super) fn new(warnings: Arc<Warnings>) -> Self {
        ExportWarnings { warnings }
    }
}

impl<S: Subscriber> Layer<S> for ExportWarnings {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() > Level::WARN || !meta.target().starts_with("opentelemetry") {
            return;
        }
        if REPORTED_BY_THE_EXPORT
            .iter()
            .any(|name| meta.name().starts_with(name))
        {
            return;
        }
        let mut text = String::new();
        event.record(&mut Text(&mut text));
        self.warnings.say(&format!("{}{text}", shown(meta.name())));
    }
}

/// An event's fields as ` key=value` pairs (but `name`, which repeats the event's name),
/// each value escaped and capped: a collector's text is among them.
struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() != "name" {
            self.push(field, &format!("{value:?}"));
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() != "name" {
            self.push(field, value);
        }
    }
}

impl Text<'_> {
    fn push(&mut self, field: &Field, value: &str) {
        use std::fmt::Write as _;
        let _ = write!(self.0, " {}={}", field.name(), shown(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tracing_subscriber::layer::SubscriberExt;

    /// The lines the layer writes while `record` runs.
    fn said(record: impl FnOnce()) -> Vec<String> {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = lines.clone();
        let warnings = Warnings::new(Box::new(move |line: &str| {
            if let Ok(mut kept) = kept.lock() {
                kept.push(line.to_owned());
            }
        }));
        let subscriber =
            tracing_subscriber::registry().with(ExportWarnings::new(Arc::new(warnings)));
        tracing::subscriber::with_default(subscriber, record);
        let lines = lines.lock().map(|l| l.clone()).unwrap_or_default();
        lines
    }

    #[test]
    fn a_collector_s_message_is_escaped_and_capped() {
        let forged = "spans refused\n\u{1b}[2Jerror: forged\r\u{202e}";
        let huge = "x".repeat(1 << 20);
        let lines = said(|| {
            tracing::warn!(
                name: "HttpTraceClient.PartialSuccess",
                target: "opentelemetry-otlp",
                name = "HttpTraceClient.PartialSuccess",
                rejected_spans = 3,
                error_message = forged,
            );
            tracing::warn!(name: "Big", target: "opentelemetry_sdk", error_message = huge.as_str());
        });
        assert_eq!(
            lines,
            [
                "warning: trace export: HttpTraceClient.PartialSuccess rejected_spans=3 \
                 error_message=spans refused\\n\\u{1b}[2Jerror: forged\\r\\u{202e}"
                    .to_owned(),
                format!(
                    "warning: trace export: Big error_message={} … ({} more bytes)",
                    "x".repeat(512),
                    (1 << 20) - 512
                )
            ]
        );
    }

    #[test]
    fn export_failures_are_left_to_the_export_and_others_capped_at_five() {
        let lines = said(|| {
            tracing::error!(name: "BatchSpanProcessor.ExportError", target: "opentelemetry_sdk", error = "HTTP export failed: network error");
            tracing::warn!(name: "Export.Failed.NonRetryable", target: "opentelemetry-otlp", operation = "x");
            // Not the SDK's, or below a warning: not shown.
            tracing::warn!(name: "Other", target: "rmcp", message = "no");
            tracing::info!(name: "Info", target: "opentelemetry_sdk", message = "no");
            for n in 0..8 {
                tracing::warn!(name: "BatchSpanProcessor.SpansDropped", target: "opentelemetry_sdk", dropped_span_count = n);
            }
        });
        let mut expected: Vec<String> = (0..5)
            .map(|n| {
                format!(
                    "warning: trace export: BatchSpanProcessor.SpansDropped dropped_span_count={n}"
                )
            })
            .collect();
        expected.push("warning: trace export: further warnings are not shown".into());
        assert_eq!(lines, expected);
    }
}
