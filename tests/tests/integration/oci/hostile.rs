//! A hostile registry and token service against `prompt-host pull` (docs/oci.md, "A
//! registry is a network peer"): a 1 GiB manifest, component or token answer, declared or
//! not, an endless or a trickled one, a token holding a line break, a layer size at its
//! extremes, 10,000 headers and a 20 MB error body full of terminal escapes. Each ends with
//! exit status 1 (never 101) and the exact message, within the memory bound and the time
//! bound below, and what the registry said reaches stderr escaped and capped.

use std::time::Duration;

use crate::integration::support::fake_registry::{
    honest, reference, registry, token_service, Artifact, Auth, Site, Twist, ENDED,
};
use crate::integration::support::hostile_peer::{
    forged_text, shows_no_raw_control, Answer, Measured, Peer, Reply,
};

/// The most a pull may hold at its peak (its own `VmHWM`). An honest pull of the 265 KiB
/// declare guest peaks at 21-24 MiB, a refused 1 GiB body at 21-27 MiB; before the
/// bounds, a 1 GiB manifest cost 2.2 GB.
const RSS_BOUND_KIB: u64 = 64 << 10;

/// The `[host.registry]` of these sites: the fake registry (and 127.0.0.2's token
/// service) in plain HTTP, a generous read timeout and a short total one, so a trickle is
/// stopped by the total bound alone.
fn table(peer: &Peer) -> String {
    format!(
        "plain_http = [\"{}\"]\ntimeout_ms = 30000\ntotal_timeout_ms = 3000",
        peer.host_port()
    )
}

/// The run failed with exactly `message` on stderr, within both bounds.
fn refused(run: &Measured, message: &str) {
    assert_eq!(run.stderr, format!("error: {message}\n"), "{run:?}");
    assert_eq!(run.code, Some(1), "{run:?}");
    within_bounds(run);
}

fn within_bounds(run: &Measured) {
    assert!(!run.killed && run.elapsed < ENDED, "{run:?}");
    assert!(
        run.max_rss_kib < RSS_BOUND_KIB,
        "peak {} KiB over {RSS_BOUND_KIB} KiB: {run:?}",
        run.max_rss_kib
    );
}

/// A named way to answer one request.
type Case = (&'static str, Box<dyn Fn() -> Answer + Send + Sync>);

fn twist(path: String, answer: impl Fn() -> Answer + Send + Sync + 'static) -> Twist {
    Box::new(move |request| (request.path() == path).then(&answer))
}

fn manifest_path() -> String {
    format!(
        "/v2/{}/manifests/1.0",
        crate::integration::support::fake_registry::REPOSITORY
    )
}

#[test]
fn an_honest_pull_succeeds_within_the_memory_bound() {
    let artifact = Artifact::declare(None);
    let peer = registry(artifact.clone(), Auth::Anonymous, honest());
    let site = Site::new(&table(&peer), &[]);
    let run = site.pull(&reference(&peer));
    assert_eq!(run.code, Some(0), "{run:?}");
    let out: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["component"], artifact.component_digest.as_str());
    assert_eq!(out["manifest"], artifact.manifest_digest.as_str());
    within_bounds(&run);
}

#[test]
fn huge_endless_and_trickled_manifests_end_within_the_bounds() {
    let trickle = Artifact::declare(None).manifest.clone();
    let cases: Vec<Case> = vec![
        (
            "1 GiB declared",
            Box::new(|| Reply::new(200).sized(1 << 30, true).into()),
        ),
        (
            "1 GiB chunked",
            Box::new(|| Reply::new(200).sized(1 << 30, false).into()),
        ),
        ("endless", Box::new(|| Reply::new(200).endless().into())),
        (
            "trickled",
            Box::new(move || {
                Reply::new(200)
                    .trickle(trickle.clone(), Duration::from_millis(200))
                    .into()
            }),
        ),
    ];
    for (case, answer) in cases {
        let peer = registry(
            Artifact::declare(None),
            Auth::Anonymous,
            twist(manifest_path(), answer),
        );
        let site = Site::new(&table(&peer), &[]);
        let r = reference(&peer);
        let run = site.pull(&r);
        let expected = if case == "trickled" {
            format!(
                "{r}: the pull did not complete within total_timeout_ms = 3000 (the whole exchange with the registry {}); stopped",
                peer.host_port()
            )
        } else {
            format!("{r}: its manifest is larger than 4194304 bytes")
        };
        refused(&run, &expected);
        eprintln!("{case}: peak {} KiB, {:?}", run.max_rss_kib, run.elapsed);
    }
}

#[test]
fn huge_endless_and_trickled_components_end_within_the_bounds() {
    let artifact = Artifact::declare(None);
    let size = artifact.component.len();
    let component = artifact.component.clone();
    let cases: Vec<Case> = vec![
        (
            "1 GiB declared",
            Box::new(|| Reply::new(200).sized(1 << 30, true).into()),
        ),
        (
            "1 GiB chunked",
            Box::new(|| Reply::new(200).sized(1 << 30, false).into()),
        ),
        ("endless", Box::new(|| Reply::new(200).endless().into())),
        (
            "trickled",
            Box::new(move || {
                Reply::new(200)
                    .trickle(component.clone(), Duration::from_millis(200))
                    .into()
            }),
        ),
    ];
    for (case, answer) in cases {
        let peer = registry(
            artifact.clone(),
            Auth::Anonymous,
            twist(artifact.blob_path(), answer),
        );
        let site = Site::new(&table(&peer), &[]);
        let r = reference(&peer);
        let run = site.pull(&r);
        let expected = if case == "trickled" {
            format!(
                "{r}: the pull did not complete within total_timeout_ms = 3000 (the whole exchange with the registry {}); stopped",
                peer.host_port()
            )
        } else {
            format!("{r}: the registry sent more than the {size} bytes the manifest declares")
        };
        refused(&run, &expected);
        eprintln!("{case}: peak {} KiB, {:?}", run.max_rss_kib, run.elapsed);
    }
}

#[test]
fn a_layer_size_at_its_extremes_is_refused_before_anything_is_sized_by_it() {
    for (size, expected) in [
        ("-1", "its component has -1 bytes, more than max_wasm_bytes = 134217728".to_owned()),
        (
            "9223372036854775807",
            "its component has 9223372036854775807 bytes, more than max_wasm_bytes = 134217728".to_owned(),
        ),
        (
            "18446744073709551615",
            "its manifest is not an OCI image manifest: invalid value: integer `18446744073709551615`, expected i64 at line 1 column 382".to_owned(),
        ),
        ("0", "the registry sent more than the 0 bytes the manifest declares".to_owned()),
    ] {
        let peer = registry(Artifact::declare(Some(size)), Auth::Anonymous, honest());
        let site = Site::new(&table(&peer), &[]);
        let r = reference(&peer);
        refused(&site.pull(&r), &format!("{r}: {expected}"));
    }
}

#[test]
fn token_answers_huge_endless_trickled_or_with_a_line_break_are_refused() {
    let cases: Vec<Case> = vec![
        (
            "1 GiB declared",
            Box::new(|| Reply::new(200).sized(1 << 30, true).into()),
        ),
        (
            "1 GiB chunked",
            Box::new(|| Reply::new(200).sized(1 << 30, false).into()),
        ),
        ("endless", Box::new(|| Reply::new(200).endless().into())),
        (
            "trickled",
            Box::new(|| {
                Reply::new(200)
                    .trickle(br#"{"token":"abc"}"#.to_vec(), Duration::from_millis(500))
                    .into()
            }),
        ),
        (
            "a line break",
            Box::new(|| {
                Reply::new(200)
                    .json(&serde_json::json!({"token": "abc\ndef"}))
                    .into()
            }),
        ),
    ];
    for (case, answer) in cases {
        let tokens = token_service(false, twist("/token".into(), answer));
        let peer = registry(
            Artifact::declare(None),
            Auth::Bearer(tokens.url("/token")),
            honest(),
        );
        let site = Site::new(
            &format!(
                "plain_http = [\"{}\", \"{}\"]\ntotal_timeout_ms = 3000",
                peer.host_port(),
                tokens.host_port()
            ),
            &[],
        );
        let r = reference(&peer);
        let registry = peer.host_port();
        let expected = match case {
            "trickled" => format!("{r}: the pull did not complete within total_timeout_ms = 3000 (the whole exchange with the registry {registry}); stopped"),
            "a line break" => format!("{r}: the token service of the registry {registry} sent a token that is not valid in an HTTP header (a control character or a line break); refused"),
            _ => format!("{r}: the token response of the registry {registry}'s token service is larger than 262144 bytes"),
        };
        let run = site.pull(&r);
        refused(&run, &expected);
        eprintln!("{case}: peak {} KiB, {:?}", run.max_rss_kib, run.elapsed);
    }
}

#[test]
fn a_tokens_times_at_their_extremes_change_nothing() {
    for expires_in in ["0", "-1", "18446744073709551615", "1e400", "\"soon\""] {
        let body = format!(
            r#"{{"token":"{}","expires_in":{expires_in},"issued_at":-5}}"#,
            crate::integration::support::fake_registry::TOKEN
        );
        let tokens = token_service(
            false,
            twist("/token".into(), move || {
                Reply::new(200)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .into()
            }),
        );
        let peer = registry(
            Artifact::declare(None),
            Auth::Bearer(tokens.url("/token")),
            honest(),
        );
        let site = Site::new(
            &format!(
                "plain_http = [\"{}\", \"{}\"]",
                peer.host_port(),
                tokens.host_port()
            ),
            &[],
        );
        let run = site.pull(&reference(&peer));
        assert_eq!(run.code, Some(0), "expires_in {expires_in}: {run:?}");
        within_bounds(&run);
    }
}

#[test]
fn error_bodies_reach_stderr_escaped_and_capped() {
    let forged = forged_text();
    let big = forged.repeat((20 << 20) / forged.len());
    let big_len = big.len();
    let shown = prompt_host::peer::shown_bytes(&big.as_bytes()[..512]);
    let body = big.clone();
    let peer = registry(
        Artifact::declare(None),
        Auth::Anonymous,
        twist(manifest_path(), move || Reply::new(500).text(&body).into()),
    );
    let site = Site::new(&table(&peer), &[]);
    let r = reference(&peer);
    let run = site.pull(&r);
    refused(
        &run,
        &format!(
            "{r}: the registry {} answered the manifest request with HTTP 500: {shown} … ({} more bytes)",
            peer.host_port(),
            big_len - 512
        ),
    );
    assert!(shows_no_raw_control(&run.stderr), "{}", run.stderr);
    assert!(run.stderr.len() < 4096 && run.stderr.lines().count() == 1);

    // An endless error body: what arrived is shown, the rest is not waited for.
    let peer = registry(
        Artifact::declare(None),
        Auth::Anonymous,
        twist(manifest_path(), || Reply::new(503).endless().into()),
    );
    let site = Site::new(&table(&peer), &[]);
    let r = reference(&peer);
    refused(
        &site.pull(&r),
        &format!(
            "{r}: the registry {} answered the manifest request with HTTP 503: {} … (more bytes, not read)",
            peer.host_port(),
            "x".repeat(512)
        ),
    );

    // The token service's error, forged, likewise.
    let body = forged.clone();
    let tokens = token_service(
        false,
        twist("/token".into(), move || Reply::new(500).text(&body).into()),
    );
    let peer = registry(
        Artifact::declare(None),
        Auth::Bearer(tokens.url("/token")),
        honest(),
    );
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\", \"{}\"]",
            peer.host_port(),
            tokens.host_port()
        ),
        &[],
    );
    let r = reference(&peer);
    let run = site.pull(&r);
    refused(
        &run,
        &format!(
            "{r}: the token service of the registry {} answered with HTTP 500: {}",
            peer.host_port(),
            prompt_host::peer::shown(&forged)
        ),
    );
    assert!(shows_no_raw_control(&run.stderr), "{}", run.stderr);
}

#[test]
fn ten_thousand_headers_are_refused_naming_the_registry() {
    let peer = registry(
        Artifact::declare(None),
        Auth::Anonymous,
        twist(manifest_path(), || {
            Reply::new(200).many_headers(10_000).into()
        }),
    );
    let site = Site::new(&table(&peer), &[]);
    let r = reference(&peer);
    refused(
        &site.pull(&r),
        &format!(
            "{r}: cannot reach the registry {}: message head is too large",
            peer.host_port()
        ),
    );
}

#[test]
fn timeouts_of_zero_are_refused_and_the_largest_are_taken() {
    let site = Site::new("timeout_ms = 0", &[]);
    refused(
        &site.pull("oci://127.0.0.1:9/a/b:1"),
        "host.toml: host.registry.timeout_ms: must be at least 1 (0 would fail every request)",
    );
    // The largest TOML integer: no instant overflows, the refused connection is reported.
    let site = Site::new(
        "plain_http = [\"127.0.0.1:9\"]\ntimeout_ms = 9223372036854775807\ntotal_timeout_ms = 9223372036854775807",
        &[],
    );
    refused(
        &site.pull("oci://127.0.0.1:9/a/b:1"),
        "oci://127.0.0.1:9/a/b:1: cannot reach the registry 127.0.0.1:9: Connection refused (os error 111)",
    );
}
