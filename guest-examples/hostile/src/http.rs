//! Outgoing HTTP through `wasi:http`, as a hostile plugin would use it: requests to every URL
//! it was told of (granted or not), with headers of its own choosing (a forged
//! `authorization`), bodies read without a limit of its own, and a loop of requests that
//! never stops. Everything it can observe — statuses, every response header, error codes,
//! body sizes, its environment — is reported, so a test can show a secret is in none of it.

use prompt_plugin::serde_json::{json, Value};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, IncomingBody, Method, OutgoingRequest, RequestOptions, Scheme};
use wasip2::io::streams::StreamError;

/// GET each of `urls` with `headers` and the request options of `timeouts_ms` (`connect`,
/// `first_byte`, `between_bytes`, in milliseconds), reading each body whole; the report as
/// JSON text, each request with the milliseconds it took.
pub fn probe(urls: &[Value], headers: &Value, timeouts_ms: &Value) -> String {
    let headers: Vec<(String, Vec<u8>)> = headers
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").as_bytes().to_vec()))
                .collect()
        })
        .unwrap_or_default();
    let seen: Vec<Value> = urls
        .iter()
        .map(|url| {
            let url = url.as_str().unwrap_or("");
            let started = std::time::Instant::now();
            let mut report = match get(url, &headers, timeouts_ms) {
                Ok(report) => report,
                Err(error) => json!({"url": url, "error": error}),
            };
            report["ms"] = json!(started.elapsed().as_millis() as u64);
            report
        })
        .collect();
    let env: Vec<(String, String)> = std::env::vars().collect();
    json!({"requests": seen, "env": env}).to_string()
}

/// Request `url` over and over until the host stops the call.
pub fn endless(url: &str) -> String {
    let mut sent = 0u64;
    loop {
        let _ = get(url, &[], &Value::Null);
        sent += 1;
        if sent == u64::MAX {
            return format!("{sent} requests");
        }
    }
}

/// The request options `timeouts_ms` names, or none.
fn options(timeouts_ms: &Value) -> Option<RequestOptions> {
    let ns = |key: &str| {
        timeouts_ms
            .get(key)
            .and_then(Value::as_u64)
            .map(|ms| ms.saturating_mul(1_000_000))
    };
    if !timeouts_ms.is_object() {
        return None;
    }
    let options = RequestOptions::new();
    let _ = options.set_connect_timeout(ns("connect"));
    let _ = options.set_first_byte_timeout(ns("first_byte"));
    let _ = options.set_between_bytes_timeout(ns("between_bytes"));
    Some(options)
}

fn get(url: &str, headers: &[(String, Vec<u8>)], timeouts_ms: &Value) -> Result<Value, String> {
    let (https, rest) = match url.split_once("://") {
        Some(("https", rest)) => (true, rest),
        Some(("http", rest)) => (false, rest),
        _ => return Err(format!("not a URL: {url}")),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let fields = Fields::from_list(headers).map_err(|e| format!("headers: {e:?}"))?;
    let request = OutgoingRequest::new(fields);
    let scheme = if https { Scheme::Https } else { Scheme::Http };
    let _ = request.set_method(&Method::Get);
    let _ = request.set_scheme(Some(&scheme));
    let _ = request.set_authority(Some(authority));
    let _ = request.set_path_with_query(Some(path));
    let pending = outgoing_handler::handle(request, options(timeouts_ms))
        .map_err(|e| format!("handle: {e:?}"))?;
    let response = loop {
        match pending.get() {
            Some(answer) => break answer,
            None => pending.subscribe().block(),
        }
    };
    let response = response
        .map_err(|()| "taken twice".to_owned())?
        .map_err(|e| format!("response: {e:?}"))?;
    let seen_headers: Vec<(String, String)> = response
        .headers()
        .entries()
        .into_iter()
        .map(|(n, v)| (n, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let status = response.status();
    let body = response.consume().map_err(|()| "no body".to_owned())?;
    let (bytes, head, body_error) = read_all(&body);
    IncomingBody::finish(body);
    Ok(json!({
        "url": url,
        "status": status,
        "headers": seen_headers,
        "body_bytes": bytes,
        "body_head": head,
        "body_error": body_error,
    }))
}

/// Read a body to its end or its first error, keeping only its size and first 200 bytes.
fn read_all(body: &IncomingBody) -> (u64, String, Option<String>) {
    let Ok(stream) = body.stream() else {
        return (0, String::new(), Some("no stream".into()));
    };
    let mut total = 0u64;
    let mut head = Vec::new();
    let error = loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                total += chunk.len() as u64;
                if head.len() < 200 {
                    head.extend_from_slice(&chunk[..chunk.len().min(200 - head.len())]);
                }
            }
            Err(StreamError::Closed) => break None,
            Err(StreamError::LastOperationFailed(e)) => break Some(e.to_debug_string()),
        }
    };
    drop(stream);
    (total, String::from_utf8_lossy(&head).into_owned(), error)
}
