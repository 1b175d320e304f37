//! The hostile-peer kit: a loopback HTTP(S) server that answers each request the way a test's
//! handler says — a huge, endless or trickled body, a redirect to another origin or to plain
//! HTTP, 10,000 headers, a connection that hangs or closes — and records what every request
//! carried, so that a test can show a secret reached no origin but its own.
//!
//! Every network client of the host (the OCI registry client and its token service, MCP over
//! Streamable HTTP and its OAuth token endpoint, the OTLP exporter) is run against it.
//! Bodies are generated as they are sent, never held: a 1 GiB body costs the peer nothing,
//! so what a test measures is the client. [`run_measured`] runs a command (the `prompt-host`
//! binary) and reports its peak memory and whether it ended within a bound.

// A kit: each test uses the parts of it its client needs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a peer does with one request.
pub enum Answer {
    /// A response, as built.
    Reply(Reply),
    /// Reads the request and never answers, holding the connection open until the peer is
    /// dropped.
    Hang,
    /// Closes the connection without answering.
    Close,
}

/// A response: status, headers and a body that is sent as described, never held whole.
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
    many_headers: usize,
}

enum Body {
    Bytes(Vec<u8>),
    /// `len` bytes of `x`, with a `Content-Length` when declared, else chunked.
    Sized {
        len: u64,
        declared: bool,
    },
    /// Chunks of `x` without end.
    Endless,
    /// The bytes, one at a time, `every` apart (with their `Content-Length`).
    Trickle {
        bytes: Vec<u8>,
        every: Duration,
    },
}

impl Reply {
    /// An empty response with `status`.
    pub fn new(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: Body::Bytes(Vec::new()),
            many_headers: 0,
        }
    }

    /// With a header (may be given more than once).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// With `bytes` as the body.
    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.body = Body::Bytes(bytes.into());
        self
    }

    /// With a text body (`text/plain`).
    pub fn text(self, text: &str) -> Self {
        self.header("content-type", "text/plain; charset=utf-8")
            .body(text.as_bytes().to_vec())
    }

    /// With a JSON body (`application/json`).
    pub fn json(self, value: &serde_json::Value) -> Self {
        self.header("content-type", "application/json")
            .body(value.to_string().into_bytes())
    }

    /// With a body of `len` bytes (`x`), generated as it is sent; its `Content-Length` is
    /// declared when `declared`, else it is sent chunked.
    pub fn sized(mut self, len: u64, declared: bool) -> Self {
        self.body = Body::Sized { len, declared };
        self
    }

    /// With a chunked body that never ends.
    pub fn endless(mut self) -> Self {
        self.body = Body::Endless;
        self
    }

    /// With `bytes` sent one byte every `every`.
    pub fn trickle(mut self, bytes: impl Into<Vec<u8>>, every: Duration) -> Self {
        self.body = Body::Trickle {
            bytes: bytes.into(),
            every,
        };
        self
    }

    /// With `n` more headers (`x-h-<i>: <i>`).
    pub fn many_headers(mut self, n: usize) -> Self {
        self.many_headers = n;
        self
    }
}

impl From<Reply> for Answer {
    fn from(reply: Reply) -> Self {
        Answer::Reply(reply)
    }
}

/// A redirect to `location`.
pub fn redirect(status: u16, location: &str) -> Answer {
    Reply::new(status).header("location", location).into()
}

/// Text a peer uses to attack a terminal or a log: ESC sequences (clear screen, colour, a
/// title), a carriage return that overwrites a line, forged `error:` and `warning:` lines,
/// and bidirectional-text controls.
pub fn forged_text() -> String {
    "\u{1b}[2J\u{1b}]0;pwned\u{7}\u{1b}[31mred\rwarning: forged\nerror: forged line\n\u{202e}txt.exe\u{2066}x\u{2069}"
        .to_owned()
}

/// Whether `text` holds none of what [`forged_text`] uses: no control character but a
/// newline at most at its end of lines, no bidi control. For stderr as a whole, lines are
/// checked one by one.
pub fn shows_no_raw_control(text: &str) -> bool {
    text.lines().all(|line| {
        !line.chars().any(|c| {
            (c.is_control() && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
    }) && !text.contains('\r')
}

/// One request as the peer received it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// The headers, names lowercased, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body (its first 1 MiB).
    pub body: Vec<u8>,
    /// The peer's own origin (`http://127.0.0.1:PORT`), for a handler that redirects to
    /// itself.
    pub origin: String,
}

impl Request {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The query, if any.
    pub fn query(&self) -> Option<&str> {
        self.target.split_once('?').map(|(_, q)| q)
    }
}

type Handler = dyn Fn(&Request) -> Answer + Send + Sync;

struct Shared {
    handler: Box<Handler>,
    requests: Mutex<Vec<Request>>,
    sent: AtomicU64,
    stop: AtomicBool,
    origin: String,
    tls: Option<Arc<rustls::ServerConfig>>,
    /// Connections held open, shut down when the peer is dropped.
    open: Mutex<Vec<TcpStream>>,
}

/// A loopback HTTP or HTTPS server driven by a handler; stopped when dropped (every
/// connection it holds is shut down).
pub struct Peer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    ca: Option<tempfile::TempDir>,
}

impl Peer {
    /// A plain-HTTP peer on 127.0.0.1.
    pub fn http(handler: impl Fn(&Request) -> Answer + Send + Sync + 'static) -> Peer {
        Self::start("127.0.0.1", Box::new(handler), None)
    }

    /// A plain-HTTP peer on another loopback address (`127.0.0.2`): another host, as far
    /// as origins go.
    pub fn http_at(ip: &str, handler: impl Fn(&Request) -> Answer + Send + Sync + 'static) -> Peer {
        Self::start(ip, Box::new(handler), None)
    }

    /// An HTTPS peer on 127.0.0.1 with a certificate for `127.0.0.1` and `localhost` from a
    /// CA of its own ([`Peer::ca_pem`]).
    pub fn https(handler: impl Fn(&Request) -> Answer + Send + Sync + 'static) -> Peer {
        let (config, dir) = tls_config();
        let mut peer = Self::start("127.0.0.1", Box::new(handler), Some(config));
        peer.ca = Some(dir);
        peer
    }

    fn start(ip: &str, handler: Box<Handler>, tls: Option<Arc<rustls::ServerConfig>>) -> Peer {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let shared = Arc::new(Shared {
            handler,
            requests: Mutex::new(Vec::new()),
            sent: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            origin: format!("{scheme}://{addr}"),
            tls,
            open: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stop.load(Ordering::Acquire) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                if let Ok(kept) = stream.try_clone() {
                    accepting.open.lock().unwrap().push(kept);
                }
                let shared = Arc::clone(&accepting);
                std::thread::spawn(move || serve_connection(&shared, stream));
            }
        });
        Peer {
            addr,
            shared,
            ca: None,
        }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `ip:port`, as a registry is named.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }

    /// `http://ip:port` (or `https://`).
    pub fn origin(&self) -> String {
        self.shared.origin.clone()
    }

    /// The origin followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.shared.origin)
    }

    /// The CA certificate (PEM) an HTTPS peer's certificate is issued by.
    pub fn ca_pem(&self) -> Option<PathBuf> {
        self.ca.as_ref().map(|dir| dir.path().join("ca.pem"))
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Body bytes written to clients so far.
    pub fn body_bytes_sent(&self) -> u64 {
        self.shared.sent.load(Ordering::Relaxed)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        for stream in self.shared.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Wakes the accepting thread, which then sees the stop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// One connection, plain or TLS.
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

fn serve_connection(shared: &Shared, tcp: TcpStream) {
    let _ = tcp.set_nodelay(true);
    let Ok(kept) = tcp.try_clone() else { return };
    let conn = match &shared.tls {
        Some(config) => match rustls::ServerConnection::new(Arc::clone(config)) {
            Ok(conn) => Conn::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))),
            Err(_) => return,
        },
        None => Conn::Plain(tcp),
    };
    let mut reader = BufReader::new(conn);
    // One request per connection: every answer says `connection: close`.
    let Some(request) = read_request(&mut reader, &shared.origin) else {
        return;
    };
    let answer = (shared.handler)(&request);
    shared.requests.lock().unwrap().push(request);
    let mut conn = reader.into_inner();
    match answer {
        Answer::Close => {}
        Answer::Hang => {
            while !shared.stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Answer::Reply(reply) => {
            let _ = write_reply(shared, &mut conn, reply);
        }
    }
    if let Conn::Tls(tls) = &mut conn {
        tls.conn.send_close_notify();
    }
    let _ = conn.flush();
    // The accepting thread keeps a clone of the socket (to shut it down when the peer is
    // dropped): the connection ends only when it is shut down.
    let _ = kept.shutdown(Shutdown::Both);
}

fn read_request(reader: &mut impl BufRead, origin: &str) -> Option<Request> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take(64 << 10)
            .read_until(b'\n', &mut line)
            .ok()?;
        if n == 0 {
            return None;
        }
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        head.push(String::from_utf8_lossy(&line).trim_end().to_owned());
        if head.len() > 20_000 {
            return None;
        }
    }
    let mut first = head.first()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = head[1..]
        .iter()
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = find("content-length").and_then(|v| v.parse::<u64>().ok()) {
        let mut limited = reader.by_ref().take(len);
        let mut chunk = [0u8; 64 << 10];
        loop {
            let n = limited.read(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            if body.len() < 1 << 20 {
                body.extend_from_slice(&chunk[..n.min((1 << 20) - body.len())]);
            }
        }
    } else if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            if body.len() < 1 << 20 {
                body.extend_from_slice(&chunk[..size]);
            }
        }
    }
    Some(Request {
        method,
        target,
        headers,
        body,
        origin: origin.to_owned(),
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn write_reply(shared: &Shared, stream: &mut dyn Stream, reply: Reply) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    for i in 0..reply.many_headers {
        head.push_str(&format!("x-h-{i}: {i}\r\n"));
    }
    head.push_str("connection: close\r\n");
    let chunked = match &reply.body {
        Body::Bytes(bytes) => {
            head.push_str(&format!("content-length: {}\r\n", bytes.len()));
            false
        }
        Body::Sized {
            len,
            declared: true,
        } => {
            head.push_str(&format!("content-length: {len}\r\n"));
            false
        }
        Body::Trickle { bytes, .. } => {
            head.push_str(&format!("content-length: {}\r\n", bytes.len()));
            false
        }
        Body::Sized {
            declared: false, ..
        }
        | Body::Endless => {
            head.push_str("transfer-encoding: chunked\r\n");
            true
        }
    };
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let block = vec![b'x'; 64 << 10];
    let send = |stream: &mut dyn Stream, bytes: &[u8]| -> std::io::Result<()> {
        if shared.stop.load(Ordering::Acquire) {
            return Err(std::io::Error::other("peer stopped"));
        }
        if chunked {
            stream.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
            stream.write_all(bytes)?;
            stream.write_all(b"\r\n")?;
        } else {
            stream.write_all(bytes)?;
        }
        shared.sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    };
    match reply.body {
        Body::Bytes(bytes) => send(stream, &bytes)?,
        Body::Sized { len, .. } => {
            let mut left = len;
            while left > 0 {
                let n = left.min(block.len() as u64) as usize;
                send(stream, &block[..n])?;
                left -= n as u64;
            }
        }
        Body::Endless => loop {
            send(stream, &block)?;
        },
        Body::Trickle { bytes, every } => {
            for byte in bytes {
                send(stream, &[byte])?;
                stream.flush()?;
                let until = Instant::now() + every;
                while Instant::now() < until {
                    if shared.stop.load(Ordering::Acquire) {
                        return Ok(());
                    }
                    std::thread::sleep(every.min(Duration::from_millis(50)));
                }
            }
        }
    }
    if chunked {
        stream.write_all(b"0\r\n\r\n")?;
    }
    stream.flush()
}

/// A server configuration with a certificate for `127.0.0.1` and `localhost`, issued by a
/// CA written to `ca.pem` in the returned directory.
fn tls_config() -> (Arc<rustls::ServerConfig>, tempfile::TempDir) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "hostile peer test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca, &ca_key)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![leaf.der().clone()], key)
    .unwrap();
    (Arc::new(config), dir)
}

/// How a command ran under [`run_measured`].
#[derive(Debug)]
pub struct Measured {
    /// Its exit code (`None` when a signal ended it).
    pub code: Option<i32>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
    /// Its peak resident set, in KiB: its own high-water mark (`VmHWM`), read while it
    /// runs. `ru_maxrss` is no measure here: a child inherits at exec the high-water mark of
    /// the process it was spawned from, the test binary's hundreds of MiB.
    pub max_rss_kib: u64,
    /// From start to exit.
    pub elapsed: Duration,
    /// Whether it was killed for running past the limit.
    pub killed: bool,
}

/// Run `cmd` (its standard input closed) to its end, killing it once `limit` has passed,
/// and measure its peak memory.
pub fn run_measured(cmd: &mut Command, limit: Duration) -> Measured {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of a plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    let mut peak_kib = 0;
    loop {
        // Read before each reap attempt: once reaped, its memory is gone. A client that
        // holds a body it should not grows for as long as the body takes to arrive, far
        // longer than one poll.
        peak_kib = peak_kib.max(high_water_kib(pid).unwrap_or(0));
        // SAFETY: `pid` is our child, not yet reaped; both pointers are to live locals.
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if reaped == pid {
            break;
        }
        if started.elapsed() > limit && !killed {
            // SAFETY: signalling our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let elapsed = started.elapsed();
    // The child was reaped here, not through `child`: forget it without waiting.
    drop(child);
    Measured {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        max_rss_kib: if peak_kib > 0 {
            peak_kib
        } else {
            usage.ru_maxrss as u64
        },
        elapsed,
        killed,
    }
}

/// `VmHWM` of process `pid`, in KiB, while it lives.
fn high_water_kib(pid: libc::pid_t) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
fn the_kit_sends_what_it_is_told_and_records_what_it_received() {
    let peer = Peer::http(|request| match request.path() {
        "/huge" => Reply::new(200).sized(3 << 20, false).into(),
        "/redirect" => redirect(307, &format!("{}/huge", request.origin)),
        _ => Reply::new(404).text("no").into(),
    });
    let mut tcp = TcpStream::connect(peer.host_port()).unwrap();
    tcp.write_all(b"GET /huge HTTP/1.1\r\nhost: x\r\nx-api-key: k1\r\n\r\n")
        .unwrap();
    let mut all = Vec::new();
    tcp.read_to_end(&mut all).unwrap();
    let text = String::from_utf8_lossy(&all);
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{}", &text[..80]);
    assert!(text.contains("transfer-encoding: chunked"));
    assert!(all.len() > 3 << 20);
    assert_eq!(peer.body_bytes_sent(), 3 << 20);
    let seen = peer.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("X-Api-Key"), Some("k1"));
    assert!(!shows_no_raw_control(&forged_text()));
    assert!(shows_no_raw_control("fine\\u{1b}\nlines\n"));
}

#[test]
fn an_https_peer_is_trusted_through_its_ca_only() {
    let peer = Peer::https(|_| Reply::new(200).text("hello").into());
    let ca = peer.ca_pem().unwrap();
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(&ca).unwrap();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(peer.host_port()).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    let mut all = Vec::new();
    let _ = tls.read_to_end(&mut all);
    let text = String::from_utf8_lossy(&all);
    assert!(text.ends_with("\r\n\r\nhello"), "{text}");
}

#[test]
fn a_measured_child_s_peak_is_its_own_not_the_test_process_s() {
    // The test process holds 256 MiB, touched, while the child runs.
    let held = vec![1u8; 256 << 20];
    let run = run_measured(
        Command::new("sh").args(["-c", "sleep 0.2"]),
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.max_rss_kib > 0 && run.max_rss_kib < 64 << 10, "{run:?}");
    assert_eq!(
        held.iter().map(|b| usize::from(*b)).sum::<usize>(),
        256 << 20
    );
}
