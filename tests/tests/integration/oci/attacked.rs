//! The OCI surfaces attacked (docs HOSTILE classes): a FIFO where the lock file or the
//! Docker config should be, a content store another user may write into, a stored component
//! changed on disk, a registry that accepts and never answers, a component larger than
//! `max_wasm_bytes`, an image index under the tag and a component trickled to `render` —
//! each through the `prompt-host` binary, each refused or survived with a message naming
//! what it is about, none hanging. The hostile-peer attacks proper are in `oci/hostile*.rs`.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::integration::oci::registry::{plugin_entry, push, LocalRegistry, Site, EXPECTED};
use crate::integration::wasm::attacked_grants::mkfifo;

#[test]
fn a_fifo_as_the_lock_file_or_the_docker_config_is_refused_not_waited_on() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    site.write_config(&registry, &plugin_entry(&reference, ""));
    mkfifo(&site.path("host.lock"));
    let started = Instant::now();
    site.render().fails(1, &["host.lock", "not a regular file"]);
    assert!(started.elapsed() < Duration::from_secs(20));
    std::fs::remove_file(site.path("host.lock")).unwrap();

    std::fs::create_dir_all(site.path("docker")).unwrap();
    mkfifo(&site.path("docker/config.json"));
    let started = Instant::now();
    site.render().fails(
        1,
        &[
            &format!("credentials for {}", registry.address()),
            "not a regular file",
        ],
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_content_store_others_may_write_into_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    site.write_config(&registry, &plugin_entry(&reference, ""));
    assert_eq!(site.render().ok(), EXPECTED);
    let store = site.path("cache/oci");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777)).unwrap();
    site.render().fails(
        1,
        &[
            "content store",
            "not used",
            "writable by other users (mode 0777)",
        ],
    );
}

#[test]
fn a_stored_component_changed_on_disk_is_pulled_again_or_refused_offline() {
    let mut registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    let pushed = push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    site.write_config(&registry, &plugin_entry(&reference, ""));
    site.render().ok();
    let stored = site.path(&format!(
        "cache/oci/sha256/{}",
        pushed["component"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:")
    ));
    let original = std::fs::read(&stored).unwrap();
    let mut changed = original.clone();
    changed[100] ^= 0x55;
    std::fs::write(&stored, &changed).unwrap();
    // Found changed, removed, pulled again by the locked digest.
    assert_eq!(site.render().ok(), EXPECTED);
    assert_eq!(std::fs::read(&stored).unwrap(), original);
    // Offline, the changed file is removed and nothing else can stand in for it.
    std::fs::write(&stored, &changed).unwrap();
    registry.stop();
    site.render().fails(
        1,
        &[
            &reference,
            &format!("cannot reach the registry {}", registry.address()),
        ],
    );
    assert!(!stored.exists());
}

#[test]
fn a_registry_that_never_answers_times_out_naming_it() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    // Accept and hold every connection without a byte of answer.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming() {
            held.push(stream);
        }
    });
    let site = Site::new();
    let reference = format!("oci://{address}/plugins/greeter:1.0");
    std::fs::write(
        site.path("host.toml"),
        format!(
            "[host.registry]\nplain_http = [\"{address}\"]\ntimeout_ms = 500\n\n{}",
            plugin_entry(&reference, "")
        ),
    )
    .unwrap();
    let started = Instant::now();
    site.render().fails(
        1,
        &[&format!(
            "{reference}: cannot reach the registry {address}: timed out"
        )],
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_component_larger_than_max_wasm_bytes_is_refused_before_it_is_downloaded() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    let pushed = push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    std::fs::write(
        site.path("host.toml"),
        format!(
            "[host]\nmax_wasm_bytes = 1000\n\n[host.registry]\nplain_http = [\"{}\"]\n\n{}",
            registry.address(),
            plugin_entry(&reference, "")
        ),
    )
    .unwrap();
    site.render().fails(
        1,
        &[&format!(
            "{reference}: its component has {} bytes, more than max_wasm_bytes = 1000",
            pushed["size"]
        )],
    );
    assert!(
        !site.path("cache/oci/sha256").exists()
            || std::fs::read_dir(site.path("cache/oci/sha256"))
                .unwrap()
                .count()
                == 0
    );
}

#[test]
fn an_index_under_the_tag_is_refused_naming_its_media_type() {
    use crate::integration::support::fake_registry::{
        reference, registry, Artifact, Auth, Site, REPOSITORY,
    };
    use crate::integration::support::hostile_peer::Reply;
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [],
    })
    .to_string();
    let path = format!("/v2/{REPOSITORY}/manifests/1.0");
    let peer = registry(
        Artifact::declare(None),
        Auth::Anonymous,
        Box::new(move |r| {
            (r.path() == path).then(|| {
                Reply::new(200)
                    .header("content-type", "application/vnd.oci.image.index.v1+json")
                    .body(index.clone())
                    .into()
            })
        }),
    );
    let site = Site::new(&format!("plain_http = [\"{}\"]", peer.host_port()), &[]);
    let r = reference(&peer);
    let run = site.pull(&r);
    assert_eq!(
        run.stderr,
        format!("error: {r}: its manifest has media type application/vnd.oci.image.index.v1+json (an image index, a list of manifests), not application/vnd.oci.image.manifest.v1+json\n")
    );
    assert_eq!(run.code, Some(1));
}

#[test]
fn render_ends_by_the_total_bound_when_the_component_trickles() {
    use crate::integration::support::fake_registry::{
        reference, registry, Artifact, Auth, Site, ENDED,
    };
    use crate::integration::support::hostile_peer::{run_measured, Reply};
    let artifact = Artifact::declare(None);
    let (blob, bytes) = (artifact.blob_path(), artifact.component.clone());
    let peer = registry(
        artifact,
        Auth::Anonymous,
        Box::new(move |r| {
            (r.path() == blob).then(|| {
                Reply::new(200)
                    .trickle(bytes.clone(), Duration::from_millis(200))
                    .into()
            })
        }),
    );
    let r = reference(&peer);
    let site = Site::new(
        &format!(
            "plain_http = [\"{}\"]\ntotal_timeout_ms = 3000\n\n{}",
            peer.host_port(),
            plugin_entry(&r, "")
        ),
        &[],
    );
    let run = run_measured(
        &mut site.command(&["render", "--config", "host.toml"]),
        ENDED * 2,
    );
    assert_eq!(
        run.stderr,
        format!("error: {r}: the pull did not complete within total_timeout_ms = 3000 (the whole exchange with the registry {}); stopped\n", peer.host_port())
    );
    assert_eq!(run.code, Some(1));
    assert!(!run.killed && run.elapsed < ENDED, "{run:?}");
}
