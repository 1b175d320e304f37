//! One request of a plugin, sent by the host: checked against the grants, connected to a
//! checked address, TLS where the origin says `https`, the grant's headers put on, and the
//! response's head and body bounded — all by the request's deadline, and by the shorter
//! connect, first-byte and between-bytes timeouts the plugin's request options ask for.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use prompt_host_peer::egress::{self, EgressError, Host, Origin, Scheme};
use rustls::pki_types::ServerName;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use super::reach::{Egress, Sent};

/// The times a request has: the host's deadline (the running call's), and the plugin's own
/// timeouts, which may only end a phase sooner.
pub(super) struct Times {
    deadline: Instant,
    connect: Option<Duration>,
    first_byte: Option<Duration>,
    between_bytes: Option<Duration>,
}

impl Times {
    pub(super) fn new(deadline: Instant, options: Option<RequestOptions>) -> Times {
        let options = options.unwrap_or_default();
        Times {
            deadline,
            connect: options.connect_timeout,
            first_byte: options.first_byte_timeout,
            between_bytes: options.between_bytes_timeout,
        }
    }

    /// When a phase that may take `timeout` from now must end, and whether that is the
    /// plugin's timeout (sooner than the deadline) rather than the deadline.
    fn phase(&self, timeout: Option<Duration>) -> (Instant, bool) {
        match timeout.and_then(|t| Instant::now().checked_add(t)) {
            Some(by) if by < self.deadline => (by, true),
            _ => (self.deadline, false),
        }
    }
}

/// Send `request` for `plugin` within `times`. A failure is logged (naming the plugin,
/// the method and the URL without its query) and answered to the plugin as an error code
/// that carries no text of the host's.
pub(super) async fn send(
    egress: Option<Arc<Egress>>,
    plugin: Arc<str>,
    request: http::Request<WasiBody>,
    times: Times,
    span: tracing::Span,
) -> Sent {
    let deadline = times.deadline;
    // Only a timeout shorter than the time left counts (the deadline ends the body anyway),
    // which also keeps `now + timeout` below from overflowing on a plugin's `u64::MAX`.
    let between_bytes = times
        .between_bytes
        .filter(|t| *t < deadline.saturating_duration_since(Instant::now()));
    let started = Instant::now();
    let shown = format!("{} {}", request.method(), without_query(request.uri()));
    // A task of its own: a panic in the client (hyper, rustls, on a peer's bytes) ends that
    // task, not the host; the plugin gets an error code and the log says what happened.
    let outcome = match tokio::spawn(exchange(egress, request, times)).await {
        Ok(outcome) => outcome,
        Err(e) => Err((
            format!("the request failed inside the host: {e}"),
            Error::InternalError(None),
        )),
    };
    match outcome {
        Ok((response, max)) => {
            let status = response.status().as_u16();
            span.record("http.response.status_code", i64::from(status));
            let tally = Tally {
                plugin,
                shown,
                status,
                started,
                bytes: 0,
                ended: false,
                span,
            };
            let response = response.map(|incoming| {
                Bounded {
                    incoming,
                    read: 0,
                    max,
                    deadline: Box::pin(tokio::time::sleep_until(deadline.into())),
                    idle: between_bytes.map(|t| (t, Box::pin(tokio::time::sleep(t)))),
                    tally,
                }
                .boxed_unsync()
            });
            Ok((response, Box::new(async { Ok(()) })))
        }
        Err((message, code)) => {
            log::warn!("plugin \"{plugin}\": {shown}: {message}");
            span.record("error.type", format!("{code:?}").as_str());
            Err(code)
        }
    }
}

/// The span of one request: the method, the origin and the path (never the query, never a
/// header); its status, body size and error are recorded as they are known.
pub(super) fn span(plugin: &str, request: &http::Request<WasiBody>) -> tracing::Span {
    use tracing::field::Empty;
    let uri = request.uri();
    tracing::info_span!(
        "prompt_host.plugin_http",
        prompt_host.plugin = plugin,
        http.request.method = request.method().as_str(),
        server.address = uri.host().unwrap_or(""),
        server.port = uri.port_u16().map(i64::from),
        url.path = uri.path(),
        http.response.status_code = Empty,
        http.response.body.size = Empty,
        error.type = Empty,
    )
}

/// The connection a request is sent over: TCP, or TLS over it.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// A failure: what the log says, and the code the plugin gets.
type Failure = (String, Error);

async fn exchange(
    egress: Option<Arc<Egress>>,
    mut request: http::Request<WasiBody>,
    times: Times,
) -> Result<(http::Response<hyper::body::Incoming>, u64), Failure> {
    let deadline = times.deadline;
    let Some(egress) = egress else {
        return Err((
            "no origin is granted to this plugin (grants.http)".into(),
            Error::HttpRequestDenied,
        ));
    };
    let origin = Origin::of_request(&request.uri().to_string())
        .map_err(|e| (e.to_string(), Error::HttpRequestUriInvalid))?;
    let (grant, tls) = egress
        .granted(&origin)
        .map_err(|e| (e.to_string(), Error::HttpRequestDenied))?;
    let tls = Arc::clone(tls);
    grant.apply(request.headers_mut());

    let left = deadline.saturating_duration_since(Instant::now());
    // Resolving, connecting, TLS and the HTTP handshake: by the plugin's connect timeout.
    let (connect_by, plugins_connect) = times.phase(times.connect);
    let connect_left = connect_by.saturating_duration_since(Instant::now());
    let (tcp, _address) = egress::connect(&origin, connect_left).await.map_err(|e| {
        let code = match &e {
            EgressError::SpecialAddress { .. } => Error::DestinationIpProhibited,
            EgressError::Resolve { .. } => Error::DnsError {
                rcode: None,
                info_code: None,
            },
            EgressError::NoAddress { .. } => Error::DestinationNotFound,
            EgressError::TimedOut { .. } => Error::ConnectionTimeout,
            EgressError::NotGranted { .. } => Error::HttpRequestDenied,
            _ => Error::ConnectionRefused,
        };
        (chain(&e), code)
    })?;
    let timed_out = || {
        (
            format!(
                "{origin}: no answer within the {} ms the request had",
                left.as_millis()
            ),
            Error::HttpResponseTimeout,
        )
    };
    let connect_timed_out = || {
        if plugins_connect {
            (
                format!("{origin}: not connected within the plugin's connect timeout"),
                Error::ConnectionTimeout,
            )
        } else {
            timed_out()
        }
    };
    let connect_by = tokio::time::Instant::from_std(connect_by);
    let limits = egress.limits;
    let mut builder = hyper::client::conn::http1::Builder::new();
    builder
        .max_headers(limits.max_headers)
        .max_buf_size(limits.max_head_bytes.max(8192));

    // Only the path and query go on the request line; the host header is the authority.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = path.parse().map_err(|_| {
        (
            "the request's path is not valid".to_string(),
            Error::HttpRequestUriInvalid,
        )
    })?;

    let deadline_tokio = tokio::time::Instant::from_std(deadline);
    let stream: Box<dyn Stream> = match origin.scheme {
        Scheme::Https => {
            let name = match &origin.host {
                Host::Name(name) => ServerName::try_from(name.clone()).map_err(|_| {
                    (
                        format!("{name} is not a TLS server name"),
                        Error::TlsProtocolError,
                    )
                })?,
                Host::Ip(ip) => ServerName::IpAddress((*ip).into()),
            };
            let tls = tokio_rustls::TlsConnector::from(tls);
            let stream = prompt_host_peer::by(connect_by, tls.connect(name, tcp))
                .await
                .ok_or_else(connect_timed_out)?
                .map_err(|e| {
                    // rustls's own error, under the I/O error tokio-rustls wraps it in.
                    let certificate = e
                        .get_ref()
                        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                        .is_some_and(|tls| {
                            matches!(
                                tls,
                                rustls::Error::InvalidCertificate(_)
                                    | rustls::Error::NoCertificatesPresented
                            )
                        });
                    let code = if certificate {
                        Error::TlsCertificateError
                    } else {
                        Error::TlsProtocolError
                    };
                    // The text may carry the peer's certificate names: escaped and capped.
                    (
                        prompt_host_peer::shown(&format!("{origin}: TLS: {e}")),
                        code,
                    )
                })?;
            Box::new(stream)
        }
        Scheme::Http => Box::new(tcp),
    };
    let (mut sender, connection) = prompt_host_peer::by(
        connect_by,
        builder.handshake(hyper_util::rt::TokioIo::new(stream)),
    )
    .await
    .ok_or_else(connect_timed_out)?
    .map_err(|e| (format!("{origin}: {}", chain(&e)), Error::HttpProtocolError))?;
    // The connection runs until the response is read or dropped, and never past the
    // deadline: a peer that keeps it open holds nothing of the host's after that.
    tokio::spawn(async move {
        let _ = tokio::time::timeout_at(deadline_tokio, connection).await;
    });
    // The response's head: by the plugin's first-byte timeout.
    let (first_byte_by, plugins_first_byte) = times.phase(times.first_byte);
    let response = prompt_host_peer::by(first_byte_by.into(), sender.send_request(request))
        .await
        .ok_or_else(|| {
            if plugins_first_byte {
                (
                    format!("{origin}: no answer within the plugin's first-byte timeout"),
                    Error::ConnectionReadTimeout,
                )
            } else {
                timed_out()
            }
        })?
        .map_err(|e| {
            let code = if e.is_parse_too_large() {
                Error::HttpResponseHeaderSectionSize(None)
            } else {
                Error::HttpProtocolError
            };
            (format!("{origin}: {}", chain(&e)), code)
        })?;
    Ok((response, limits.max_body_bytes))
}

/// An error and its causes, one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
        source = cause_of(source);
    }
    prompt_host_peer::shown(&text)
}

fn cause_of<'a>(
    error: Option<&'a (dyn std::error::Error + 'static)>,
) -> Option<&'a (dyn std::error::Error + 'static)> {
    error.and_then(|e| e.source())
}

/// `uri` without its query (which may hold a key the plugin put there).
fn without_query(uri: &http::Uri) -> String {
    let mut shown = String::new();
    if let Some(scheme) = uri.scheme_str() {
        shown.push_str(scheme);
        shown.push_str("://");
    }
    if let Some(authority) = uri.authority() {
        shown.push_str(authority.host());
        if let Some(port) = authority.port_u16() {
            shown.push_str(&format!(":{port}"));
        }
    }
    shown.push_str(uri.path());
    prompt_host_peer::shown(&shown)
}

/// What the log line of a request says when it ends.
struct Tally {
    plugin: Arc<str>,
    shown: String,
    status: u16,
    started: Instant,
    bytes: u64,
    ended: bool,
    /// Closed with the tally: the request lasts until its body is read or dropped.
    span: tracing::Span,
}

impl Drop for Tally {
    fn drop(&mut self) {
        self.span.record(
            "http.response.body.size",
            i64::try_from(self.bytes).unwrap_or(i64::MAX),
        );
        let how = if self.ended {
            ""
        } else {
            " (body not read to its end)"
        };
        log::info!(
            "plugin \"{}\": {} → {}, {} bytes in {} ms{how}",
            self.plugin,
            self.shown,
            self.status,
            self.bytes,
            self.started.elapsed().as_millis()
        );
    }
}

/// A response body read within the request's deadline and byte limit, and the plugin's
/// between-bytes timeout if it set one.
struct Bounded {
    incoming: hyper::body::Incoming,
    read: u64,
    max: u64,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// The plugin's between-bytes timeout, and the wait for the next frame.
    idle: Option<(Duration, Pin<Box<tokio::time::Sleep>>)>,
    tally: Tally,
}

impl Body for Bounded {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Error::HttpResponseTimeout)));
        }
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Pending => {
                let idle = self.idle.as_mut().map(|(_, wait)| wait.as_mut().poll(cx));
                if idle.is_some_and(|p| p.is_ready()) {
                    log::warn!(
                        "plugin \"{}\": {}: no body bytes within the plugin's between-bytes timeout",
                        self.tally.plugin,
                        self.tally.shown
                    );
                    return Poll::Ready(Some(Err(Error::ConnectionReadTimeout)));
                }
                Poll::Pending
            }
            Poll::Ready(None) => {
                self.tally.ended = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Error::from(e)))),
            Poll::Ready(Some(Ok(frame))) => {
                if let Some((timeout, wait)) = self.idle.as_mut() {
                    // Shorter than the time the request had left (see `send`): no overflow.
                    let next = tokio::time::Instant::now() + *timeout;
                    wait.as_mut().reset(next);
                }
                if let Some(data) = frame.data_ref() {
                    self.read = self.read.saturating_add(data.len() as u64);
                    self.tally.bytes = self.read;
                    if self.read > self.max {
                        let max = self.max;
                        log::warn!(
                            "plugin \"{}\": {}: the body passed {max} bytes; the rest is refused",
                            self.tally.plugin,
                            self.tally.shown
                        );
                        return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(max)))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}
