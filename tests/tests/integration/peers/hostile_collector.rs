//! The OTLP exporter against a hostile collector, through the `prompt-host` binary and
//! `serve` (docs/observability.md, "A collector is a network peer"): a redirect to another
//! port or host carries neither the exporter's headers nor the spans; a 1 GiB, endless or
//! trickled answer and 10,000 headers cost a bounded time and memory and a warning; what a
//! collector says reaches stderr escaped and capped. Each command still does its work.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::integration::support::cli::{bin, Deployment, QUIET_PROGRESS};
use crate::integration::support::hostile_peer::{
    forged_text, redirect, run_measured, shows_no_raw_control, Answer, Measured, Peer, Reply,
};

/// One attack: what it is, the answer that makes it, and what the error must say.
type Case = (&'static str, fn() -> Answer, &'static str);

/// The secrets a collector's headers carry, every one of them a secret.
const HEADERS: &str =
    "x-api-key=otlp-key-5e1d,x-honeycomb-team=otlp-team-8c2a,dd-api-key=otlp-dd-0b7f";
/// What of them must never be seen outside the configured collector.
const SECRETS: [&str; 3] = ["otlp-key-5e1d", "otlp-team-8c2a", "otlp-dd-0b7f"];

/// A command's bound: work, an export that fails at its 2 s timeout, and a loaded machine.
const ENDED: Duration = Duration::from_secs(60);

fn render_args(d: &Deployment) -> Vec<String> {
    let config = d.config().to_str().unwrap().to_owned();
    ["render", "--config", &config, "--scope", "agent:1"]
        .map(str::to_owned)
        .to_vec()
}

/// `prompt-host render` exporting to `endpoint` with the secret headers and a 2 s export
/// timeout, measured.
fn render_exporting(d: &Deployment, endpoint: &str) -> Measured {
    let mut command = Command::new(bin());
    command
        .args(render_args(d))
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_HEADERS", HEADERS)
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
        // One export, at exit: not another on the batch's timer on a slow machine.
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000");
    run_measured(&mut command, ENDED)
}

/// The same render without export: what it prints, and its peak memory.
fn render_alone(d: &Deployment) -> Measured {
    let mut command = Command::new(bin());
    command
        .args(render_args(d))
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1);
    let alone = run_measured(&mut command, ENDED);
    assert_eq!(alone.code, Some(0), "{}", alone.stderr);
    alone
}

/// The command did its work, printed what it prints alone, and ended by itself.
fn did_its_work(run: &Measured, alone: &Measured) {
    assert!(!run.killed, "still running after {ENDED:?}: {}", run.stderr);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout, alone.stdout);
    assert!(shows_no_raw_control(&run.stderr), "{:?}", run.stderr);
    for secret in SECRETS {
        assert!(!run.stderr.contains(secret), "{}", run.stderr);
    }
}

/// Every request `peer` received was an export carrying the three secret headers.
fn exports_with_their_headers(peer: &Peer) -> usize {
    let requests = peer.requests();
    for request in &requests {
        assert_eq!(
            (request.method.as_str(), request.path()),
            ("POST", "/v1/traces")
        );
        assert_eq!(request.header("x-api-key"), Some("otlp-key-5e1d"));
        assert_eq!(request.header("x-honeycomb-team"), Some("otlp-team-8c2a"));
        assert_eq!(request.header("dd-api-key"), Some("otlp-dd-0b7f"));
    }
    requests.len()
}

#[test]
fn a_collector_s_redirect_to_another_port_or_host_carries_no_header_and_no_span() {
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let alone = render_alone(&d);
    // Where a redirect points: another port, another loopback host.
    let elsewhere = Peer::http(|_| Reply::new(200).into());
    let other_host = Peer::http_at("127.0.0.2", |_| Reply::new(200).into());
    for (status, target) in [
        (307, elsewhere.url("/v1/traces")),
        (308, elsewhere.url("/v1/traces")),
        (302, other_host.url("/v1/traces")),
        (301, other_host.url("/collect")),
    ] {
        let target_for_peer = target.clone();
        let collector = Peer::http(move |_| redirect(status, &target_for_peer));
        let run = render_exporting(&d, &collector.origin());
        did_its_work(&run, &alone);
        assert_eq!(exports_with_their_headers(&collector), 1, "{}", run.stderr);
        let reason = match status {
            301 => "Moved Permanently",
            302 => "Found",
            307 => "Temporary Redirect",
            _ => "Permanent Redirect",
        };
        assert_eq!(
            run.stderr,
            format!(
                "warning: trace export: {}/v1/traces answered {status} {reason}, a redirect, \
                 which is not followed (the export's headers go to the configured endpoint \
                 only)\n",
                collector.origin()
            ),
            "{target}"
        );
    }
    assert!(
        elsewhere.requests().is_empty(),
        "{:?}",
        elsewhere.requests()
    );
    assert!(
        other_host.requests().is_empty(),
        "{:?}",
        other_host.requests()
    );
}

#[test]
fn serve_s_export_follows_no_redirect_either() {
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let elsewhere = Peer::http(|_| Reply::new(200).into());
    let target = elsewhere.url("/v1/traces");
    let collector = Peer::http(move |_| redirect(307, &target));
    let mut serve = Command::new(bin())
        .args(["serve", "--config", d.config().to_str().unwrap()])
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.origin())
        .env("OTEL_EXPORTER_OTLP_HEADERS", HEADERS)
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = serve.stdin.take().unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":1,"method":"render","params":{{"scope":"agent:1"}}}}"#
        )
        .unwrap();
    }
    let out = serve.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""result""#));
    assert_eq!(exports_with_their_headers(&collector), 1, "{stderr}");
    assert!(elsewhere.requests().is_empty());
    assert!(
        stderr.contains("answered 307 Temporary Redirect, a redirect, which is not followed"),
        "{stderr}"
    );
    assert!(SECRETS.iter().all(|s| !stderr.contains(s)), "{stderr}");
}

#[test]
fn a_collector_s_huge_endless_or_trickled_answer_costs_a_warning_within_bounds() {
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let alone = render_alone(&d);
    let too_large = "the collector's answer is larger than 65536 bytes";
    let cases: Vec<Case> = vec![
        (
            "1 GiB declared",
            || Reply::new(200).sized(1 << 30, true).into(),
            too_large,
        ),
        (
            "1 GiB chunked",
            || Reply::new(200).sized(1 << 30, false).into(),
            too_large,
        ),
        ("endless", || Reply::new(200).endless().into(), too_large),
        (
            "trickled",
            || {
                Reply::new(200)
                    .trickle(vec![0u8; 64], Duration::from_secs(1))
                    .into()
            },
            "the collector did not answer within 2000 ms (OTEL_EXPORTER_OTLP_TIMEOUT)",
        ),
        (
            "never answered",
            || Answer::Hang,
            "the collector did not answer within 2000 ms (OTEL_EXPORTER_OTLP_TIMEOUT)",
        ),
    ];
    for (what, answer, expected) in cases {
        let collector = Peer::http(move |_| answer());
        let run = render_exporting(&d, &collector.origin());
        did_its_work(&run, &alone);
        // An answer too large is not asked for again; a timeout leaves no time to.
        assert_eq!(exports_with_their_headers(&collector), 1, "{what}");
        assert_eq!(
            run.stderr,
            format!(
                "warning: trace export: {}/v1/traces: {expected}\n",
                collector.origin()
            ),
            "{what}"
        );
        // Read up to the bound, never whole: what the peer could push into the socket
        // buffers at most.
        assert!(
            collector.body_bytes_sent() < 32 << 20,
            "{what}: {} bytes sent",
            collector.body_bytes_sent()
        );
        assert!(
            run.max_rss_kib < alone.max_rss_kib + 48 * 1024,
            "{what}: {} KiB at the peak, {} KiB without export",
            run.max_rss_kib,
            alone.max_rss_kib
        );
        // The export's bound is its timeout, not the 64 bytes' minute or a never.
        assert!(
            run.elapsed < alone.elapsed + Duration::from_secs(20),
            "{what}: {:?}",
            run.elapsed
        );
    }
}

#[test]
fn ten_thousand_headers_from_a_collector_fail_the_export_only() {
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let alone = render_alone(&d);
    let collector = Peer::http(|_| Reply::new(200).many_headers(10_000).into());
    let run = render_exporting(&d, &collector.origin());
    did_its_work(&run, &alone);
    // The SDK retries what looks like a network error, within the export's timeout.
    assert!(exports_with_their_headers(&collector) >= 1);
    assert_eq!(
        run.stderr,
        format!(
            "warning: trace export: {}/v1/traces: the exchange with the collector failed: \
             message head is too large\n",
            collector.origin()
        )
    );
}

/// An OTLP/HTTP answer with a partial success of `rejected` spans and `message`, as
/// protobuf (`ExportTraceServiceResponse { partial_success: { rejected_spans,
/// error_message } }`).
fn partial_success(rejected: u8, message: &str) -> Vec<u8> {
    fn varint(mut n: usize, out: &mut Vec<u8>) {
        while n >= 0x80 {
            out.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    let mut inner = vec![0x08, rejected, 0x12];
    varint(message.len(), &mut inner);
    inner.extend_from_slice(message.as_bytes());
    let mut outer = vec![0x0a];
    varint(inner.len(), &mut outer);
    outer.extend_from_slice(&inner);
    outer
}

#[test]
fn a_collector_s_message_reaches_stderr_escaped_and_capped() {
    let d = Deployment::new(crate::integration::observability::timings::DEPLOYMENT);
    let alone = render_alone(&d);
    let answer = |message: String| {
        let body = partial_success(2, &message);
        Peer::http(move |_| {
            Reply::new(200)
                .header("content-type", "application/x-protobuf")
                .body(body.clone())
                .into()
        })
    };
    let collector = answer(forged_text());
    let run = render_exporting(&d, &collector.origin());
    did_its_work(&run, &alone);
    assert_eq!(
        run.stderr,
        "warning: trace export: HttpTraceClient.PartialSuccess rejected_spans=2 \
         error_message=\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{1b}[31mred\\rwarning: forged\\nerror: \
         forged line\\n\\u{202e}txt.exe\\u{2066}x\\u{2069}\n"
    );
    // 60,000 bytes of it: 512 shown, the rest counted.
    let collector = answer(format!("{}\n", "w".repeat(60_000)));
    let run = render_exporting(&d, &collector.origin());
    did_its_work(&run, &alone);
    assert_eq!(
        run.stderr,
        format!(
            "warning: trace export: HttpTraceClient.PartialSuccess rejected_spans=2 \
             error_message={} … (59488 more bytes)\n",
            "w".repeat(512)
        )
    );
}
