//! Where a hostile registry sends the client, through `prompt-host pull` and `push`: a
//! redirect or an upload location on another port, host or scheme, plain HTTP to a host
//! not in `plain_http` (loopback or not), a token service (`realm`) elsewhere over plain
//! HTTP, a redirect loop, a `401` from another origin. What every peer received is
//! inspected: the Docker config's password, and the token obtained with it, reach the
//! registry's own origin and its token service over HTTPS (or a listed origin), nothing
//! else; a destination the rules refuse is not contacted at all.

use std::sync::Arc;
use std::time::Duration;

use crate::integration::support::fake_registry::{
    basic, honest, reference, registry, saw_a_secret, token_service, token_service_https, Artifact,
    Auth, Site, ENDED, REPOSITORY, TOKEN,
};
use crate::integration::support::hostile_peer::{redirect, Answer, Measured, Peer, Reply, Request};

/// A non-loopback address that is never connected to (TEST-NET-1).
const FAR: &str = "192.0.2.1";

fn refused(run: &Measured, message: &str) {
    assert_eq!(run.stderr, format!("error: {message}\n"), "{run:?}");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!run.killed && run.elapsed < ENDED, "{run:?}");
}

fn pulled(run: &Measured) {
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!run.killed && run.elapsed < ENDED, "{run:?}");
}

/// A peer serving the component bytes (or `answer`) for any path.
fn component_elsewhere(artifact: &Arc<Artifact>, https: bool) -> Peer {
    let bytes = artifact.component.clone();
    let handler = move |_: &Request| Reply::new(200).body(bytes.clone()).into();
    if https {
        Peer::https(handler)
    } else {
        Peer::http_at("127.0.0.2", handler)
    }
}

/// A registry asking `Basic` whose component download is redirected to `location`.
fn redirecting(artifact: &Arc<Artifact>, location: String) -> Peer {
    let blob = artifact.blob_path();
    registry(
        artifact.clone(),
        Auth::Basic,
        Box::new(move |r| (r.path() == blob).then(|| redirect(307, &location))),
    )
}

#[test]
fn a_redirect_elsewhere_gets_no_credentials_and_no_unlisted_plain_http() {
    let artifact = Artifact::declare(None);

    // Another port of this host, not listed: refused, never contacted.
    let other = Peer::http(|_| Reply::new(200).into());
    let peer = redirecting(&artifact, other.url("/blob?X-Signature=s3cr3t"));
    let site = Site::new(
        &format!("plain_http = [\"{}\"]", peer.host_port()),
        &[&peer.host_port()],
    );
    let r = reference(&peer);
    refused(&site.pull(&r), &format!(
        "{r}: the registry {} redirects to {}/blob, plain HTTP to {}, which is not in plain_http; not contacted",
        peer.host_port(), other.origin(), other.host_port()
    ));
    assert!(other.requests().is_empty());

    // Another host, plain HTTP, listed: followed, without the credentials.
    let other = component_elsewhere(&artifact, false);
    let peer = redirecting(&artifact, other.url("/blob"));
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\", \"{}\"]",
            peer.host_port(),
            other.host_port()
        ),
        &[&peer.host_port()],
    );
    pulled(&site.pull(&reference(&peer)));
    assert_eq!(other.requests().len(), 1);
    assert!(!saw_a_secret(&other), "{:?}", other.requests());
    assert!(peer
        .requests()
        .iter()
        .any(|r| r.header("authorization") == Some(basic().as_str())));

    // Another origin over HTTPS: followed, without the credentials.
    let other = component_elsewhere(&artifact, true);
    let peer = redirecting(&artifact, other.url("/blob"));
    let ca = other.ca_pem().unwrap();
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\"]\nca_file = {:?}",
            peer.host_port(),
            ca.to_str().unwrap()
        ),
        &[&peer.host_port()],
    );
    pulled(&site.pull(&reference(&peer)));
    assert_eq!(other.requests().len(), 1);
    assert!(!saw_a_secret(&other), "{:?}", other.requests());

    // Plain HTTP to a host that is not loopback: refused before any connection.
    let peer = redirecting(&artifact, format!("http://{FAR}/blob"));
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\"]\ntotal_timeout_ms = 20000",
            peer.host_port()
        ),
        &[&peer.host_port()],
    );
    let r = reference(&peer);
    let run = site.pull(&r);
    refused(&run, &format!(
        "{r}: the registry {} redirects to http://{FAR}/blob, plain HTTP to {FAR}:80, which is not in plain_http; not contacted",
        peer.host_port()
    ));
    assert!(run.elapsed < Duration::from_secs(15), "{run:?}");

    // A loop on the registry itself: stopped.
    let looping = format!("/v2/{REPOSITORY}/blobs/loop");
    let blob = artifact.blob_path();
    let peer = registry(
        artifact.clone(),
        Auth::Basic,
        Box::new(move |req| {
            (req.path() == blob || req.path() == looping).then(|| redirect(302, &looping))
        }),
    );
    let site = Site::new(
        &format!("plain_http = [\"{}\"]", peer.host_port()),
        &[&peer.host_port()],
    );
    let r = reference(&peer);
    refused(
        &site.pull(&r),
        &format!(
            "{r}: the registry {} redirected the component download more than 5 times; stopped",
            peer.host_port()
        ),
    );
}

#[test]
fn a_401_from_another_origin_is_not_answered_with_credentials() {
    let artifact = Artifact::declare(None);
    let other = Peer::http_at("127.0.0.2", |_| {
        Reply::new(401)
            .header("www-authenticate", r#"Basic realm="phish""#)
            .into()
    });
    let peer = redirecting(&artifact, other.url("/blob"));
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\", \"{}\"]",
            peer.host_port(),
            other.host_port()
        ),
        &[&peer.host_port(), &other.host_port()],
    );
    let r = reference(&peer);
    refused(
        &site.pull(&r),
        &format!(
            "{r}: the registry refused the credentials (or their absence) for {}",
            peer.host_port()
        ),
    );
    assert_eq!(other.requests().len(), 1);
    assert!(!saw_a_secret(&other), "{:?}", other.requests());
}

#[test]
fn a_manifest_redirect_elsewhere_gets_no_credentials() {
    let artifact = Artifact::declare(None);
    let manifest = artifact.manifest.clone();
    let digest = artifact.manifest_digest.clone();
    let other = Peer::http_at("127.0.0.2", move |_| {
        Reply::new(200)
            .header("content-type", "application/vnd.oci.image.manifest.v1+json")
            .header("docker-content-digest", &digest)
            .body(manifest.clone())
            .into()
    });
    let location = other.url("/manifest");
    let path = format!("/v2/{REPOSITORY}/manifests/1.0");
    let peer = registry(
        artifact,
        Auth::Basic,
        Box::new(move |r| (r.path() == path).then(|| redirect(308, &location))),
    );
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\", \"{}\"]",
            peer.host_port(),
            other.host_port()
        ),
        &[&peer.host_port()],
    );
    pulled(&site.pull(&reference(&peer)));
    assert_eq!(other.requests().len(), 1);
    assert!(!saw_a_secret(&other), "{:?}", other.requests());
}

#[test]
fn a_token_service_elsewhere_over_plain_http_is_not_contacted() {
    let artifact = Artifact::declare(None);
    // On another loopback address, over plain HTTP, not listed.
    let tokens = Peer::http_at("127.0.0.2", |_| {
        Reply::new(200)
            .json(&serde_json::json!({"token": TOKEN}))
            .into()
    });
    let peer = registry(
        artifact.clone(),
        Auth::Bearer(tokens.url("/token")),
        honest(),
    );
    let site = Site::new(
        &format!("plain_http = [\"{}\"]", peer.host_port()),
        &[&peer.host_port()],
    );
    let r = reference(&peer);
    refused(&site.pull(&r), &format!(
        "{r}: the registry {} names the token service {}/token, plain HTTP to {}, which is not in plain_http; not contacted",
        peer.host_port(), tokens.origin(), tokens.host_port()
    ));
    assert!(tokens.requests().is_empty());
    assert!(!saw_a_secret(&peer), "{:?}", peer.requests());

    // On a host that is not loopback: refused before any connection.
    let peer = registry(
        artifact.clone(),
        Auth::Bearer(format!("http://{FAR}/token")),
        honest(),
    );
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\"]\ntotal_timeout_ms = 20000",
            peer.host_port()
        ),
        &[&peer.host_port()],
    );
    let r = reference(&peer);
    let run = site.pull(&r);
    refused(&run, &format!(
        "{r}: the registry {} names the token service http://{FAR}/token, plain HTTP to {FAR}:80, which is not in plain_http; not contacted",
        peer.host_port()
    ));
    assert!(run.elapsed < Duration::from_secs(15), "{run:?}");
}

#[test]
fn the_password_goes_to_a_token_service_over_https_or_a_listed_origin_and_the_token_to_the_registry(
) {
    let artifact = Artifact::declare(None);
    for https in [true, false] {
        let tokens = if https {
            token_service_https(true, honest())
        } else {
            token_service(true, honest())
        };
        let peer = registry(
            artifact.clone(),
            Auth::Bearer(tokens.url("/token")),
            honest(),
        );
        let table = if https {
            format!(
                "plain_http = [\"{}\"]\nca_file = {:?}",
                peer.host_port(),
                tokens.ca_pem().unwrap().to_str().unwrap()
            )
        } else {
            format!(
                "plain_http = [\"{}\", \"{}\"]",
                peer.host_port(),
                tokens.host_port()
            )
        };
        let site = Site::new(&table, &[&peer.host_port()]);
        pulled(&site.pull(&reference(&peer)));
        let asked = tokens.requests();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0].header("authorization"), Some(basic().as_str()));
        assert_eq!(
            asked[0].query(),
            Some(
                format!(
                    "service=fake&scope=repository%3A{}%3Apull",
                    REPOSITORY.replace('/', "%2F")
                )
                .as_str()
            )
        );
        // The registry saw the token, never the password.
        let seen = peer.requests();
        assert!(seen
            .iter()
            .any(|r| r.header("authorization") == Some(format!("Bearer {TOKEN}").as_str())));
        assert!(
            seen.iter()
                .all(|r| r.header("authorization") != Some(basic().as_str())),
            "{seen:?}"
        );
    }
}

/// A registry taking pushes, its upload location at `upload`.
fn accepting_pushes(upload: String) -> Peer {
    Peer::http(move |r| -> Answer {
        match (r.method.as_str(), r.path()) {
            ("HEAD", _) => Reply::new(404).into(),
            ("POST", _) => Reply::new(202).header("location", &upload).into(),
            ("PUT", p) if p.contains("/manifests/") => Reply::new(201).into(),
            _ => Reply::new(201).into(),
        }
    })
}

#[test]
fn an_upload_location_elsewhere_gets_no_credentials_and_no_unlisted_plain_http() {
    // Listed, another host: the blob goes there without the credentials.
    let store = Peer::http_at("127.0.0.2", |_| Reply::new(201).into());
    let peer = accepting_pushes(store.url("/upload?state=1"));
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\", \"{}\"]",
            peer.host_port(),
            store.host_port()
        ),
        &[&peer.host_port()],
    );
    let r = reference(&peer);
    let run = crate::integration::support::hostile_peer::run_measured(
        &mut site.command(&["push", env!("GUEST_DECLARE"), &r, "--config", "host.toml"]),
        ENDED * 2,
    );
    pulled(&run);
    let puts = store.requests();
    assert_eq!(puts.len(), 2, "the component and the config: {puts:?}");
    assert!(puts.iter().all(|p| p.method == "PUT"
        && p.query()
            .is_some_and(|q| q.starts_with("state=1&digest=sha256%3A"))));
    assert!(!saw_a_secret(&store), "{puts:?}");

    // Not listed: refused, not contacted.
    let store = Peer::http(|_| Reply::new(201).into());
    let peer = accepting_pushes(store.url("/upload"));
    let site = Site::new(
        &format!("plain_http = [\"{}\"]", peer.host_port()),
        &[&peer.host_port()],
    );
    let r = reference(&peer);
    let run = crate::integration::support::hostile_peer::run_measured(
        &mut site.command(&["push", env!("GUEST_DECLARE"), &r, "--config", "host.toml"]),
        ENDED * 2,
    );
    refused(&run, &format!(
        "{r}: the registry {} names the upload location {}/upload, plain HTTP to {}, which is not in plain_http; not contacted",
        peer.host_port(), store.origin(), store.host_port()
    ));
    assert!(store.requests().is_empty());
}
