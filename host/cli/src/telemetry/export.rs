//! The HTTP side of the trace export: the client the OTLP exporter sends with, and the
//! exporter around it that bounds each export and says why one failed.
//!
//! A collector is a network peer (docs/threat-model.md), and the SDK's own client trusts it
//! more than prompt-host can: reqwest follows a redirect to another host or port with every
//! header but `Authorization`, `Cookie` and `Proxy-Authorization`, so an `x-api-key` (or
//! `x-honeycomb-team`, `dd-api-key`, …) from `OTEL_EXPORTER_OTLP_HEADERS` would go wherever
//! the collector points; and the blocking client bounds each read of a body, not the
//! exchange, so a collector trickling its answer one byte a second holds the export for
//! days. [`CollectorClient`] follows no redirect (a redirect is a failed export naming its
//! status: every configured header is a secret for the configured endpoint only), reads at
//! most [`MAX_ANSWER_BYTES`] of a successful answer and none of a failed one, and bounds
//! the whole exchange; [`BoundedExporter`] makes that bound one per export, retries
//! included (`OTEL_EXPORTER_OTLP_TIMEOUT`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response, ResponseBodyTooLarge};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use prompt_host::peer::{innermost, read_bounded, shown, BodyError};

use super::warnings::Warnings;

/// The most bytes of a collector's successful answer read: an OTLP answer is a partial
/// success at most (a count and a message), a few hundred bytes.
pub(super) const MAX_ANSWER_BYTES: usize = 64 << 10;

/// What one export has left, shared by the exporter (which starts it) and the client (which
/// spends it, and says why it failed).
#[derive(Debug, Default)]
struct Budget {
    /// When the running export must have ended; `None` between exports.
    deadline: Option<Instant>,
    /// Why the last attempt of the running export failed, as the warning says it.
    failure: Option<String>,
}

/// The export's shared state.
#[derive(Debug)]
pub(super) struct Exchange {
    timeout: Duration,
    budget: Mutex<Budget>,
}

impl Exchange {
    /// An exchange whose exports each end within `timeout`.
    pub(super) fn new(timeout: Duration) -> Arc<Self> {
        Arc::new(Exchange {
            timeout,
            budget: Mutex::default(),
        })
    }

    fn budget(&self) -> std::sync::MutexGuard<'_, Budget> {
        self.budget.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn begin(&self) {
        let mut budget = self.budget();
        budget.deadline = Instant::now().checked_add(self.timeout);
        budget.failure = None;
    }

    /// The time the next attempt may take: what is left of the export's.
    fn left(&self) -> Duration {
        match self.budget().deadline {
            Some(deadline) => deadline.saturating_duration_since(Instant::now()),
            None => self.timeout,
        }
    }

    fn failed(&self, why: String) {
        self.budget().failure = Some(why);
    }

    fn end(&self) -> Option<String> {
        let mut budget = self.budget();
        budget.deadline = None;
        budget.failure.take()
    }
}

/// The OTLP exporter with each export bounded by the export timeout as a whole (the SDK
/// bounds its retries by it, but each attempt only by the client), and each failed export
/// reported once, with its reason.
#[derive(Debug)]
pub(super) struct BoundedExporter<E> {
    inner: E,
    exchange: Arc<Exchange>,
    warnings: Arc<Warnings>,
}

impl<E> BoundedExporter<E> {
    pub(super) fn new(inner: E, exchange: Arc<Exchange>, warnings: Arc<Warnings>) -> Self {
        BoundedExporter {
            inner,
            exchange,
            warnings,
        }
    }
}

impl<E: SpanExporter> SpanExporter for BoundedExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.exchange.begin();
        let result = self.inner.export(batch).await;
        let why = self.exchange.end();
        if let Err(e) = &result {
            // The client's reason when it had one; the SDK's otherwise (a batch it could
            // not encode, say), which may quote the collector.
            let why = why.unwrap_or_else(|| shown(&e.to_string()));
            self.warnings.say(&why);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter's HTTP client: reqwest on a runtime of its own (the SDK's batch thread
/// runs the export with a plain executor), no redirects, answers bounded in size and time.
pub(super) struct CollectorClient {
    http: reqwest::Client,
    runtime: Option<tokio::runtime::Runtime>,
    exchange: Arc<Exchange>,
}

impl std::fmt::Debug for CollectorClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CollectorClient").finish_non_exhaustive()
    }
}

impl CollectorClient {
    /// A client whose exchanges spend `exchange`'s budget. Call it outside any async
    /// runtime (it starts one of its own).
    pub(super) fn new(exchange: Arc<Exchange>) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("prompt-host-otlp")
            .enable_all()
            .build()
            .map_err(|e| anyhow::anyhow!("cannot start the exporter's runtime: {e}"))?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("prompt-host/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the exporter's HTTP client: {e}"))?;
        Ok(CollectorClient {
            http,
            runtime: Some(runtime),
            exchange,
        })
    }
}

impl Drop for CollectorClient {
    fn drop(&mut self) {
        // Never blocks, so the client may be dropped on any thread: an exchange still
        // running (the exporter gave up on it) is abandoned with its connection.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Why an exchange failed; the export's warning says it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failed(String);

/// Why an exchange failed, as the exchange knows it.
enum Failure {
    /// The answer was larger than [`MAX_ANSWER_BYTES`]: no retry would fare better.
    TooLarge(String),
    /// Anything else (the SDK retries what it takes for a network error).
    Other(String),
}

impl Failure {
    fn why(&self) -> &str {
        match self {
            Failure::TooLarge(why) | Failure::Other(why) => why,
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for CollectorClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let endpoint = shown_endpoint(&request.uri().to_string());
        let limit = self.exchange.left();
        let request = reqwest::Request::try_from(request)?;
        let (Some(runtime), false) = (&self.runtime, limit.is_zero()) else {
            let why = format!("{endpoint}: no time left for another attempt");
            self.exchange.failed(why.clone());
            return Err(Box::new(Failed(why)));
        };
        let timeout = self.exchange.timeout;
        let running = runtime.spawn(exchange(self.http.clone(), request, limit, timeout));
        let answer = match running.await {
            Ok(answer) => answer,
            Err(e) => Err(Failure::Other(format!("the exchange ended early: {e}"))),
        };
        match answer {
            Ok(response) => {
                if !response.status().is_success() {
                    self.exchange.failed(refused(&endpoint, response.status()));
                }
                Ok(response)
            }
            Err(failure) => {
                let why = format!("{endpoint}: {}", failure.why());
                self.exchange.failed(why.clone());
                match failure {
                    // The SDK's own type: it does not retry an answer that will be as large
                    // again (its text is not shown; the export's warning says `why`).
                    Failure::TooLarge(_) => Err(Box::new(ResponseBodyTooLarge::new())),
                    Failure::Other(_) => Err(Box::new(Failed(why))),
                }
            }
        }
    }
}

/// One request within `limit` (what is left of the export's `timeout`), all of it:
/// connecting, sending, the answer's head and its body (at most [`MAX_ANSWER_BYTES`], read
/// only for a success: the SDK reads a failed answer's body for its debug log alone).
async fn exchange(
    http: reqwest::Client,
    request: reqwest::Request,
    limit: Duration,
    timeout: Duration,
) -> Result<Response<Bytes>, Failure> {
    let exchange = async {
        let response = http.execute(request).await.map_err(|e| {
            let cause = innermost(&e);
            Failure::Other(if e.is_connect() {
                format!("cannot reach the collector: {cause}")
            } else {
                format!("the exchange with the collector failed: {cause}")
            })
        })?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = if status.is_success() {
            read_bounded(response, MAX_ANSWER_BYTES, "the collector's answer")
                .await
                .map_err(|e| match e {
                    BodyError::TooLarge { .. } => Failure::TooLarge(e.to_string()),
                    BodyError::Read { .. } => Failure::Other(e.to_string()),
                })?
        } else {
            Vec::new()
        };
        let mut answer = Response::new(Bytes::from(body));
        *answer.status_mut() = status;
        *answer.headers_mut() = headers;
        Ok(answer)
    };
    match tokio::time::timeout(limit, exchange).await {
        Ok(answer) => answer,
        Err(_) => Err(Failure::Other(format!(
            "the collector did not answer within {} ms (OTEL_EXPORTER_OTLP_TIMEOUT)",
            timeout.as_millis()
        ))),
    }
}

/// What a collector's refusal says: its status (a number and the standard reason, never
/// the collector's text), and for a redirect that it is not followed.
fn refused(endpoint: &str, status: reqwest::StatusCode) -> String {
    if status.is_redirection() {
        format!(
            "{endpoint} answered {status}, a redirect, which is not followed (the export's \
             headers go to the configured endpoint only)"
        )
    } else {
        format!("{endpoint} answered {status}")
    }
}

/// The endpoint as a warning names it: without credentials, query or fragment.
fn shown_endpoint(uri: &str) -> String {
    match reqwest::Url::parse(uri) {
        Ok(mut url) => {
            url.set_query(None);
            url.set_fragment(None);
            let _ = url.set_password(None);
            let _ = url.set_username("");
            shown(url.as_str())
        }
        Err(_) => "the collector".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_status_and_a_redirect_says_it_is_not_followed() {
        let endpoint = "http://127.0.0.1:4318/v1/traces";
        assert_eq!(
            refused(endpoint, reqwest::StatusCode::TEMPORARY_REDIRECT),
            "http://127.0.0.1:4318/v1/traces answered 307 Temporary Redirect, a redirect, \
             which is not followed (the export's headers go to the configured endpoint only)"
        );
        assert_eq!(
            refused(endpoint, reqwest::StatusCode::INTERNAL_SERVER_ERROR),
            "http://127.0.0.1:4318/v1/traces answered 500 Internal Server Error"
        );
    }

    #[test]
    fn an_endpoint_is_named_without_what_may_hold_a_key() {
        assert_eq!(
            shown_endpoint("https://user:pw@collector.example:4318/v1/traces?key=s3cr3t#x"),
            "https://collector.example:4318/v1/traces"
        );
        assert_eq!(shown_endpoint("not a url"), "the collector");
    }

    #[test]
    fn each_export_has_the_whole_timeout_and_no_more() {
        let exchange = Exchange::new(Duration::from_millis(300));
        assert_eq!(exchange.left(), Duration::from_millis(300));
        exchange.begin();
        std::thread::sleep(Duration::from_millis(100));
        let left = exchange.left();
        assert!(left <= Duration::from_millis(200), "{left:?}");
        exchange.failed("why".into());
        assert_eq!(exchange.end().as_deref(), Some("why"));
        assert_eq!(exchange.end(), None);
        assert_eq!(exchange.left(), Duration::from_millis(300));
    }
}
