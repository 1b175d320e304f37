//! `dev --ui`: `inspect --html`'s page, served live on a loopback port and drawn again after
//! every reload, with what the edit changed.
//!
//! The page is all it serves: `GET /` (the page) and `GET /updates?after=N` (the next report
//! once its generation passes `N`, else `204` after a while: the page asks again). Anything
//! else is `404`, a method other than `GET` `405`. It binds 127.0.0.1 only, and answers only
//! requests whose `Host` is that address or `localhost` at its port: a page elsewhere that
//! rebinds its own name to 127.0.0.1 (DNS rebinding) gets `421` and nothing of the report.
//! Every connection has a deadline for its head and for its whole life, and a bounded head.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::watch;

/// How long an `/updates` request waits for a new report before `204`.
const LONG_POLL: Duration = Duration::from_secs(25);
/// The time a connection has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a connection lives (several long polls, kept alive).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(300);
/// The largest request head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 32;

/// One drawing of the page: its generation and the report, as the page's JSON.
#[derive(Debug, Clone)]
pub struct Drawing {
    /// Counts from 1, one per report.
    pub generation: u64,
    /// The page for this report.
    pub page: Arc<String>,
    /// The report as `/updates` sends it.
    pub json: Arc<String>,
}

/// The running server: publish a new drawing with [`Live::publish`].
pub struct Live {
    sender: watch::Sender<Drawing>,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl Live {
    /// Listen on 127.0.0.1:`port` (0: any free port) and serve `first`.
    pub async fn start(port: u16, first: Drawing) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let (sender, receiver) = watch::channel(first);
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        tokio::spawn(async move {
            loop {
                let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
                    return;
                };
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors, say: wait rather than spin on the same error.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let receiver = receiver.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        answer(request, receiver.clone(), addr)
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEAD_TIMEOUT)
                        .max_buf_size(MAX_HEAD_BYTES)
                        .serve_connection(TokioIo::new(stream), service);
                    let _ = tokio::time::timeout(CONNECTION_LIFETIME, connection).await;
                    drop(permit);
                });
            }
        });
        Ok(Self { sender, addr })
    }

    /// Serve `drawing` from now on, and wake the pages waiting for it.
    pub fn publish(&self, drawing: Drawing) {
        self.sender.send_replace(drawing);
    }

    /// The generation served now.
    pub fn generation(&self) -> u64 {
        self.sender.borrow().generation
    }
}

async fn answer(
    request: Request<Incoming>,
    mut drawings: watch::Receiver<Drawing>,
    addr: SocketAddr,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if !host_is_ours(&request, addr) {
        return Ok(plain(
            StatusCode::MISDIRECTED_REQUEST,
            "this server answers only requests for its own loopback address\n",
        ));
    }
    if request.method() != hyper::Method::GET {
        return Ok(plain(StatusCode::METHOD_NOT_ALLOWED, "GET only\n"));
    }
    match request.uri().path() {
        "/" => {
            let page = drawings.borrow().page.clone();
            let mut response = respond(
                StatusCode::OK,
                "text/html; charset=utf-8",
                Bytes::from(page.as_bytes().to_vec()),
            );
            // The page's own policy, and no framing by another page.
            let policy = format!(
                "{}; frame-ancestors 'none'",
                crate::inspect::html::policy(true)
            );
            if let Ok(value) = hyper::header::HeaderValue::from_str(&policy) {
                response
                    .headers_mut()
                    .insert(hyper::header::CONTENT_SECURITY_POLICY, value);
            }
            Ok(response)
        }
        "/updates" => {
            let after = request
                .uri()
                .query()
                .and_then(|q| q.strip_prefix("after="))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            let newer = tokio::time::timeout(
                LONG_POLL,
                drawings.wait_for(|drawing| drawing.generation > after),
            )
            .await;
            match newer {
                Ok(Ok(drawing)) => {
                    let json = drawing.json.clone();
                    Ok(respond(
                        StatusCode::OK,
                        "application/json",
                        Bytes::from(json.as_bytes().to_vec()),
                    ))
                }
                // No new report yet (or the server is stopping): the page asks again.
                _ => Ok(respond(StatusCode::NO_CONTENT, "text/plain", Bytes::new())),
            }
        }
        _ => Ok(plain(StatusCode::NOT_FOUND, "not found\n")),
    }
}

/// Whether the request's `Host` names this server: its address, or `localhost`, at its port.
fn host_is_ours(request: &Request<Incoming>, addr: SocketAddr) -> bool {
    let Some(host) = request
        .headers()
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
    else {
        return false;
    };
    let port = addr.port();
    host == format!("127.0.0.1:{port}") || host == format!("localhost:{port}")
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    respond(
        status,
        "text/plain; charset=utf-8",
        Bytes::from_static(text.as_bytes()),
    )
}

fn respond(status: StatusCode, kind: &str, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    let set = |headers: &mut hyper::HeaderMap, name: &'static str, value: &str| {
        if let Ok(value) = hyper::header::HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    };
    set(headers, "content-type", kind);
    set(headers, "cache-control", "no-store");
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "referrer-policy", "no-referrer");
    set(headers, "x-frame-options", "DENY");
    response
}
