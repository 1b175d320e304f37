//! One GET of the document through `wasi:http/outgoing-handler`, conditional on an `ETag`
//! when there is one. The host decides whether the request may go out (the operator's grant)
//! and adds the credential; what comes back here is the status, the headers the plugin needs
//! and a body read up to `max_bytes`.

use std::fmt;

use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, IncomingBody, Method, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// The document's URL, split as `wasi:http` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    https: bool,
    authority: String,
    path_with_query: String,
}

impl Target {
    /// `https://HOST[:PORT]/PATH?QUERY` (or `http://`); the path defaults to `/`.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let (https, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(format!("\"{url}\" is not an https:// (or http://) URL"));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) if rest[at..].starts_with('/') => (&rest[..at], rest[at..].to_owned()),
            Some(at) => (&rest[..at], format!("/{}", &rest[at..])),
            None => (rest, "/".to_owned()),
        };
        if authority.is_empty() || authority.contains(['@', ' ', '#']) || path.contains('#') {
            return Err(format!(
                "\"{url}\" needs a host, and no user, space or fragment"
            ));
        }
        Ok(Target {
            https,
            authority: authority.to_owned(),
            path_with_query: path,
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        // The path only: a query may hold a key.
        let path = self.path_with_query.split('?').next().unwrap_or("/");
        write!(f, "{scheme}://{}{path}", self.authority)
    }
}

/// What a fetch brought.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fetched {
    /// `304`: the text held is still the document.
    NotModified { max_age: Option<u64> },
    /// `200`: the document, its `ETag` and the server's `max-age`.
    Text {
        text: String,
        etag: Option<String>,
        max_age: Option<u64>,
    },
}

/// GET `target`, with `If-None-Match: etag` when given; a body past `max_bytes`, a status
/// other than 200 and 304, or a body that is not UTF-8 is an error.
pub(crate) fn get(
    target: &Target,
    etag: Option<&str>,
    max_bytes: usize,
) -> Result<Fetched, String> {
    let mut headers = vec![(
        "accept".to_owned(),
        b"text/markdown, text/plain;q=0.9, */*;q=0.1".to_vec(),
    )];
    if let Some(etag) = etag {
        headers.push(("if-none-match".to_owned(), etag.as_bytes().to_vec()));
    }
    let fields = Fields::from_list(&headers).map_err(|e| format!("headers: {e:?}"))?;
    let request = OutgoingRequest::new(fields);
    let scheme = if target.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    let set = request.set_method(&Method::Get).is_ok()
        && request.set_scheme(Some(&scheme)).is_ok()
        && request.set_authority(Some(&target.authority)).is_ok()
        && request
            .set_path_with_query(Some(&target.path_with_query))
            .is_ok();
    if !set {
        return Err("the URL cannot be put on a request".into());
    }
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    let response = loop {
        match pending.get() {
            Some(answer) => break answer,
            None => pending.subscribe().block(),
        }
    };
    let response = response
        .map_err(|()| "the response was taken twice".to_owned())?
        .map_err(|e| format!("{e:?}"))?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .into_iter()
            .next()
            .and_then(|v| String::from_utf8(v).ok())
    };
    let max_age = header("cache-control").and_then(|v| crate::freshness::max_age(&v));
    match response.status() {
        304 => Ok(Fetched::NotModified { max_age }),
        200 => {
            let etag = header("etag");
            let body = response.consume().map_err(|()| "no body".to_owned())?;
            let text = read_body(&body, max_bytes)?;
            IncomingBody::finish(body);
            Ok(Fetched::Text {
                text,
                etag,
                max_age,
            })
        }
        status => Err(format!("the server answered {status}")),
    }
}

/// The body as text, refused past `max_bytes` or when not UTF-8.
fn read_body(body: &IncomingBody, max_bytes: usize) -> Result<String, String> {
    let stream = body.stream().map_err(|()| "no body stream".to_owned())?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > max_bytes {
                    return Err(format!("the document is longer than {max_bytes} bytes"));
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the body: {}", e.to_debug_string()))
            }
        }
    }
    drop(stream);
    String::from_utf8(bytes).map_err(|_| "the document is not UTF-8 text".to_owned())
}
