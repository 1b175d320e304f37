//! Plugins from an OCI registry, end to end against a real one: CNCF distribution (Debian's
//! `docker-registry`, installed by `.ci/run`) started on loopback by each test, driven
//! through the `prompt-host` binary (`push`, `pull`, `lock`, `render`) and the library
//! (`HostConfig::prepare_oci` in a multi-thread runtime, `oci::prepare` and
//! `HostConfig::pin` in a current-thread one).
//!
//! They show a pushed plugin rendered by tag and by digest and recorded in host.lock; a tag
//! moved to other bytes refused under the lock and taken after `lock --update`; a blob
//! tampered with in the registry's storage refused before anything is compiled; a locked
//! deployment rendering with the registry stopped; a missing tag, a wrong media type and a
//! pin that disagrees named with the reference; credentials from a Docker config file never
//! printed; and a lock file the host did not write never overwritten.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::integration::support::cli::{bin, Run, QUIET_PROGRESS};

const WAIT: Duration = Duration::from_secs(30);
/// The default identity section, then the plugin's.
pub(crate) const EXPECTED: &str =
    "You are an AI agent powered by the DeepSeek Harness SDK.\n\nHello from the registry.";
const PASSWORD: &str = "s3cret-registry-password-7f41";

/// A distribution registry on loopback, killed when dropped.
pub(crate) struct LocalRegistry {
    child: Option<Child>,
    port: u16,
    root: tempfile::TempDir,
    config: PathBuf,
}

fn registry_binary() -> PathBuf {
    for candidate in ["/usr/bin/docker-registry", "/usr/local/bin/docker-registry"] {
        if Path::new(candidate).is_file() {
            return candidate.into();
        }
    }
    panic!(
        "the registry tests need CNCF distribution: Debian's docker-registry package \
         (apt-get install docker-registry; .ci/run installs it)"
    );
}

impl LocalRegistry {
    /// A registry; with `user`, it asks for that user and [`PASSWORD`] (htpasswd, bcrypt).
    pub(crate) fn start(user: Option<&str>) -> Self {
        let root = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut yaml = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: prompt-host-tests\n",
            root.path().join("data").display()
        );
        if let Some(user) = user {
            let htpasswd = root.path().join("htpasswd");
            let hash = Command::new("python3")
                .args([
                    "-c",
                    "import sys, bcrypt; print(bcrypt.hashpw(sys.argv[1].encode(), bcrypt.gensalt(rounds=4)).decode())",
                    PASSWORD,
                ])
                .output()
                .unwrap();
            assert!(
                hash.status.success(),
                "the credential test writes bcrypt hashes with the Python bcrypt package (pip install -r tests/fixtures/oci/requirements.txt): {}",
                String::from_utf8_lossy(&hash.stderr)
            );
            std::fs::write(
                &htpasswd,
                format!("{user}:{}", String::from_utf8_lossy(&hash.stdout).trim()),
            )
            .unwrap();
            yaml.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: prompt-host-tests\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let config = root.path().join("config.yml");
        std::fs::write(&config, yaml).unwrap();
        let mut registry = LocalRegistry {
            child: None,
            port,
            root,
            config,
        };
        registry.run();
        registry
    }

    fn run(&mut self) {
        let child = Command::new(registry_binary())
            .arg("serve")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry");
        self.child = Some(child);
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "the registry did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn reference(&self, rest: &str) -> String {
        format!("oci://{}/{rest}", self.address())
    }

    /// The file distribution keeps blob `digest` in.
    fn blob_data(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.root
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A deployment directory with its own compile cache, HOME and Docker config directory.
pub(crate) struct Site {
    pub(crate) dir: tempfile::TempDir,
}

impl Site {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Site { dir }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn write_config(&self, registry: &LocalRegistry, plugins: &str) {
        std::fs::write(
            self.path("host.toml"),
            format!(
                "[host.registry]\nplain_http = [\"{}\"]\n\n{plugins}",
                registry.address()
            ),
        )
        .unwrap();
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        let output = Command::new(bin())
            .args(args)
            .current_dir(self.dir.path())
            .env("PROMPT_HOST_CACHE_DIR", self.path("cache"))
            .env("HOME", self.path("home"))
            .env("DOCKER_CONFIG", self.path("docker"))
            .env_remove("REGISTRY_AUTH_FILE")
            .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub(crate) fn render(&self) -> Run {
        self.run(&["render", "--config", "host.toml"])
    }

    fn lock_text(&self) -> String {
        std::fs::read_to_string(self.path("host.lock")).unwrap_or_default()
    }
}

const DECLARE_CONFIG: &str =
    "config = { sections = [{ name = \"greeting\", order = 10, text = \"Hello from the registry.\" }] }";

pub(crate) fn plugin_entry(wasm: &str, extra: &str) -> String {
    format!("[[plugin]]\nname = \"greeter\"\nwasm = \"{wasm}\"\n{DECLARE_CONFIG}\n{extra}")
}

/// The declare guest with a custom section appended: the same behaviour, other bytes (a
/// tag moved to a rebuilt plugin).
fn rebuilt_declare(dir: &Path) -> PathBuf {
    let mut bytes = std::fs::read(env!("GUEST_DECLARE")).unwrap();
    let name = b"rebuilt";
    let payload: Vec<u8> = [&[name.len() as u8][..], name, b"2"].concat();
    bytes.push(0);
    bytes.push(payload.len() as u8);
    bytes.extend_from_slice(&payload);
    let path = dir.join("declare-rebuilt.wasm");
    std::fs::write(&path, bytes).unwrap();
    path
}

pub(crate) fn push(
    site: &Site,
    registry: &LocalRegistry,
    file: &str,
    reference: &str,
) -> serde_json::Value {
    site.run(&["push", file, reference, "--plain-http", &registry.address()])
        .json()
}

fn sha256_file(path: &Path) -> String {
    format!(
        "sha256:{}",
        prompt_host::wasm::sha256_hex(&std::fs::read(path).unwrap())
    )
}

#[test]
fn a_pushed_plugin_renders_by_tag_and_by_digest_and_its_tag_is_locked() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    let pushed = push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    let manifest = pushed["manifest"].as_str().unwrap().to_string();
    assert_eq!(
        pushed["component"],
        sha256_file(Path::new(env!("GUEST_DECLARE")))
    );
    assert_eq!(
        pushed["pinned"],
        registry.reference(&format!("plugins/greeter@{manifest}"))
    );

    site.write_config(&registry, &plugin_entry(&reference, ""));
    assert_eq!(site.render().ok(), EXPECTED);
    let lock = site.lock_text();
    assert!(lock.starts_with(prompt_host::oci::LOCK_HEADER), "{lock}");
    assert!(
        lock.contains(&format!("reference = \"{reference}\"")),
        "{lock}"
    );
    assert!(
        lock.contains(&format!("manifest = \"{manifest}\"")),
        "{lock}"
    );

    // By digest: no tag to resolve, the same bytes.
    let by_digest = Site::new();
    by_digest.write_config(
        &registry,
        &plugin_entry(
            &registry.reference(&format!("plugins/greeter@{manifest}")),
            "",
        ),
    );
    assert_eq!(by_digest.render().ok(), EXPECTED);

    // `pull` puts the verified component in the content store and says where.
    let pulled = site
        .run(&["pull", &reference, "--plain-http", &registry.address()])
        .json();
    assert_eq!(pulled["manifest"], manifest.as_str());
    assert_eq!(
        sha256_file(Path::new(pulled["path"].as_str().unwrap())),
        pulled["component"].as_str().unwrap()
    );
    // `lock` agrees with the registry.
    let checked = site.run(&["lock", "--config", "host.toml"]);
    assert!(
        checked
            .ok()
            .contains(&format!("{reference}  {manifest}  locked")),
        "{}",
        checked.stdout
    );
}

#[test]
fn a_moved_tag_is_refused_under_the_lock_until_lock_update() {
    let mut registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:stable");
    let first = push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    site.write_config(&registry, &plugin_entry(&reference, ""));
    site.render().ok();
    let locked = site.lock_text();

    let rebuilt = rebuilt_declare(site.dir.path());
    let second = push(&site, &registry, rebuilt.to_str().unwrap(), &reference);
    assert_ne!(first["manifest"], second["manifest"]);

    // The deployment keeps its locked bytes: the lock is unchanged, the new component is
    // never fetched, and with the store emptied the locked manifest is pulled by digest.
    assert_eq!(site.render().ok(), EXPECTED);
    assert_eq!(site.lock_text(), locked);
    let store = site.path("cache/oci/sha256");
    let new_component = second["component"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    let old_component = first["component"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    assert!(!store.join(new_component).exists());
    std::fs::remove_dir_all(&store).unwrap();
    site.render().ok();
    assert!(store.join(old_component).exists());
    assert!(!store.join(new_component).exists());

    // `lock` reports the move and fails; `lock --update` takes it.
    let checked = site.run(&["lock", "--config", "host.toml"]);
    checked.fails(1, &[
        "host.lock: 1 reference(s) differ from the registry; the deployment keeps running the locked bytes until `prompt-host lock --update --config host.toml`",
    ]);
    assert!(
        checked.stdout.contains(&format!(
            "{reference}  {}  MOVED: the lock has {}",
            second["manifest"].as_str().unwrap(),
            first["manifest"].as_str().unwrap()
        )),
        "{}",
        checked.stdout
    );
    let updated = site.run(&["lock", "--config", "host.toml", "--update"]);
    assert!(
        updated.ok().contains(&format!(
            "{reference}  {}  moved from {}",
            second["manifest"].as_str().unwrap(),
            first["manifest"].as_str().unwrap()
        )),
        "{}",
        updated.stdout
    );
    assert!(site
        .lock_text()
        .contains(second["manifest"].as_str().unwrap()));
    assert!(store.join(new_component).exists());
    assert_eq!(site.render().ok(), EXPECTED);

    // With the registry stopped, the locked deployment still renders from the store.
    registry.stop();
    assert_eq!(site.render().ok(), EXPECTED);
    // Without the store it cannot, and says which reference and registry.
    std::fs::remove_dir_all(&store).unwrap();
    site.render().fails(
        1,
        &[
            &reference,
            &format!("cannot reach the registry {}", registry.address()),
        ],
    );
}

#[test]
fn a_blob_tampered_with_in_the_registry_is_refused_before_compiling() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    let pushed = push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    let data = registry.blob_data(pushed["component"].as_str().unwrap());
    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&data, bytes).unwrap();

    site.write_config(&registry, &plugin_entry(&reference, ""));
    let ran = site.render();
    ran.fails(1, &[&reference, "do not match their digest"]);
    // Nothing reached the store or the compile cache, and nothing was locked.
    let stored = std::fs::read_dir(site.path("cache/oci/sha256")).map_or(0, |d| d.count());
    assert_eq!(stored, 0);
    assert!(!site.path("host.lock").exists());
    let compiled = std::fs::read_dir(site.path("cache"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "cwasm")
        })
        .count();
    assert_eq!(compiled, 0);
}

#[test]
fn a_missing_tag_a_wrong_media_type_and_a_disagreeing_pin_are_named() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let missing = registry.reference("plugins/greeter:nope");
    push(
        &site,
        &registry,
        env!("GUEST_DECLARE"),
        &registry.reference("plugins/greeter:1.0"),
    );
    site.write_config(&registry, &plugin_entry(&missing, ""));
    site.render().fails(
        1,
        &[&format!(
            "{missing}: the registry has no tag \"nope\" in plugins/greeter"
        )],
    );

    // A container image layer, pushed by another client.
    let pushed = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/oci/push_raw.py"))
        .args([
            &registry.address(),
            "plugins/image",
            "1.0",
            "application/vnd.oci.image.config.v1+json",
            "application/vnd.oci.image.layer.v1.tar+gzip",
            env!("GUEST_DECLARE"),
        ])
        .output()
        .unwrap();
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let image = registry.reference("plugins/image:1.0");
    site.write_config(&registry, &plugin_entry(&image, ""));
    site.render().fails(1, &[&format!(
        "{image}: not a Wasm component artifact: its config has media type application/vnd.oci.image.config.v1+json, not application/vnd.wasm.config.v0+json"
    )]);

    // A pin that is not the component the registry has.
    let good = registry.reference("plugins/greeter:1.0");
    let pin = "0".repeat(64);
    site.write_config(
        &registry,
        &plugin_entry(&good, &format!("sha256 = \"{pin}\"")),
    );
    let ran = site.render();
    ran.fails(
        1,
        &[&format!(
            "plugin \"greeter\": {good} resolves to component sha256:"
        )],
    );
    assert!(
        ran.stderr
            .contains(&format!("but its sha256 pins {pin}; refused")),
        "{}",
        ran.stderr
    );

    // Plain HTTP to a registry that is not loopback is refused when host.toml is read.
    std::fs::write(
        site.path("host.toml"),
        format!(
            "[host.registry]\nplain_http = [\"registry.example:5000\"]\n\n{}",
            plugin_entry(&good, "")
        ),
    )
    .unwrap();
    site.render().fails(1, &[
        "host.registry.plain_http[0]: registry.example:5000 is not a loopback registry; plain HTTP is allowed only for localhost, 127.0.0.0/8 and [::1]",
    ]);
}

#[test]
fn credentials_come_from_the_docker_config_and_are_never_printed() {
    let registry = LocalRegistry::start(Some("publisher"));
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    // No credentials: refused, naming the registry.
    let refused = site.run(&[
        "push",
        env!("GUEST_DECLARE"),
        &reference,
        "--plain-http",
        &registry.address(),
    ]);
    refused.fails(1, &[&reference, "refused the credentials"]);

    std::fs::create_dir_all(site.path("docker")).unwrap();
    let auth = base64_encode(format!("publisher:{PASSWORD}").as_bytes());
    std::fs::write(
        site.path("docker/config.json"),
        format!(
            "{{\"auths\": {{\"{}\": {{\"auth\": \"{auth}\"}}}}}}",
            registry.address()
        ),
    )
    .unwrap();
    let mut outputs = Vec::new();
    let pushed = site.run(&[
        "push",
        env!("GUEST_DECLARE"),
        &reference,
        "--plain-http",
        &registry.address(),
    ]);
    pushed.ok();
    site.write_config(&registry, &plugin_entry(&reference, ""));
    let rendered = site.render();
    assert_eq!(rendered.ok(), EXPECTED);
    std::fs::remove_dir_all(site.path("cache")).unwrap();
    let checked = site.run(&["lock", "--config", "host.toml"]);
    checked.ok();
    let updated = site.run(&["lock", "--config", "host.toml", "--update"]);
    updated.ok();
    // A wrong password is refused and not printed either.
    std::fs::write(
        site.path("docker/config.json"),
        format!(
            "{{\"auths\": {{\"{}\": {{\"auth\": \"{}\"}}}}}}",
            registry.address(),
            base64_encode(b"publisher:wrong-password-9c2e")
        ),
    )
    .unwrap();
    let wrong = site.run(&["pull", &reference, "--plain-http", &registry.address()]);
    wrong.fails(1, &["refused the credentials"]);
    assert!(!wrong.stderr.contains("wrong-password-9c2e"));
    for ran in [&refused, &pushed, &rendered, &checked, &updated, &wrong] {
        outputs.push(ran.stdout.clone());
        outputs.push(ran.stderr.clone());
    }
    outputs.push(site.lock_text());
    outputs.push(std::fs::read_to_string(site.path("host.toml")).unwrap());
    for text in outputs {
        assert!(!text.contains(PASSWORD), "the password leaked:\n{text}");
        assert!(
            !text.contains(&auth),
            "the encoded credentials leaked:\n{text}"
        );
    }
}

#[test]
fn a_lock_file_the_host_did_not_write_is_never_overwritten() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    site.write_config(&registry, &plugin_entry(&reference, ""));
    let foreign = "# my notes\nversion = 1\n";
    std::fs::write(site.path("host.lock"), foreign).unwrap();
    site.render().fails(1, &[
        "host.lock: not a lock file written by prompt-host (its first line is not the header); it is left as it is: move it away to let the host write one",
    ]);
    site.run(&["lock", "--config", "host.toml", "--update"])
        .fails(1, &["not a lock file written by prompt-host"]);
    assert_eq!(
        std::fs::read_to_string(site.path("host.lock")).unwrap(),
        foreign
    );
}

#[test]
fn the_library_prepares_oci_plugins_in_either_runtime_and_refuses_unprepared_ones() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let reference = registry.reference("plugins/greeter:1.0");
    push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    site.write_config(&registry, &plugin_entry(&reference, ""));
    let cache = site.path("cache");
    let runtime = || {
        let mut runtime = prompt_host::RuntimeConfig::default();
        runtime.cache_dir = Some(cache.clone());
        runtime
    };

    let config = prompt_host::HostConfig::load(&site.path("host.toml")).unwrap();
    let err = prompt_host::Host::from_config(&config, runtime())
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        format!("plugin \"greeter\": {reference} is not fetched yet: call prompt_host::oci::prepare on the configuration first (the command line does)")
    );

    for multi_thread in [true, false] {
        let rt = if multi_thread {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .unwrap();
        rt.block_on(async {
            let mut config = prompt_host::HostConfig::load(&site.path("host.toml")).unwrap();
            let dir = config.oci_cache_dir(Some(&cache));
            let resolved = if multi_thread {
                config
                    .prepare_oci(prompt_host::oci::LockMode::Use, &dir)
                    .await
                    .unwrap()
            } else {
                // The plain-input entry point, applied by hand.
                let resolved = prompt_host::oci::prepare(
                    &config.oci_plugins(),
                    config.oci_lock_path().as_deref(),
                    &config.registry_settings(),
                    prompt_host::oci::LockMode::Use,
                    &dir,
                )
                .await
                .unwrap();
                config.pin(&resolved).unwrap();
                resolved
            };
            assert_eq!(resolved.len(), 1);
            let host = prompt_host::Host::from_config(&config, runtime()).unwrap();
            let rendered = host
                .render(None, prompt_host::Facts::default())
                .await
                .unwrap();
            assert_eq!(rendered.prompt, EXPECTED);
        });
    }
}

pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn push_annotates_the_manifest_from_the_plugins_project_and_is_reproducible() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let project = site.path("greeter");
    let built = project.join("target/wasm32-wasip2/release");
    std::fs::create_dir_all(&built).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"greeter\"\nversion = \"0.3.1\"\ndescription = \"Greets.\"\nrepository = \"https://example.org/greeter\"\n",
    )
    .unwrap();
    let file = built.join("greeter.wasm");
    std::fs::copy(env!("GUEST_DECLARE"), &file).unwrap();
    let reference = registry.reference("plugins/greeter:0.3.1");
    let args = [
        "push",
        file.to_str().unwrap(),
        &reference,
        "--plain-http",
        &registry.address(),
        "--annotation",
        "org.opencontainers.image.licenses=Apache-2.0",
    ];
    let pushed = site.run(&args).json();
    // What the registry holds, read with another client.
    let manifest = Command::new("python3")
        .args([
            "-c",
            "import sys, urllib.request; r = urllib.request.Request(sys.argv[1], headers={'Accept': 'application/vnd.oci.image.manifest.v1+json'}); print(urllib.request.urlopen(r).read().decode())",
            &format!("http://{}/v2/plugins/greeter/manifests/0.3.1", registry.address()),
        ])
        .output()
        .unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(&manifest.stdout).unwrap();
    assert_eq!(
        manifest["annotations"],
        serde_json::json!({
            "org.opencontainers.image.title": "greeter",
            "org.opencontainers.image.version": "0.3.1",
            "org.opencontainers.image.description": "Greets.",
            "org.opencontainers.image.source": "https://example.org/greeter",
            "org.opencontainers.image.licenses": "Apache-2.0",
        })
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    assert_eq!(manifest["layers"][0]["digest"], pushed["component"]);
    assert_eq!(
        manifest["layers"][0]["annotations"]["org.opencontainers.image.title"],
        "greeter.wasm"
    );
    // The same file and annotations give the same manifest.
    assert_eq!(site.run(&args).json()["manifest"], pushed["manifest"]);
    // A file that is not a component is refused before anything is sent.
    std::fs::write(site.path("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    site.run(&[
        "push",
        "core.wasm",
        &reference,
        "--plain-http",
        &registry.address(),
    ])
    .fails(1, &["core.wasm is not a WebAssembly component"]);
}

/// A plain-HTTP registry on loopback (as `docker-registry` and `registry:2` serve by default)
/// reached without `--plain-http` or `plain_http`: `push`, `pull` and `render` each name the
/// fix where they are used — the flag, or host.toml's line — instead of the TLS library's
/// "received corrupt message of type InvalidContentType".
#[test]
fn a_plain_http_registry_reached_over_https_names_the_fix() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    let address = registry.address();
    let reference = registry.reference("plugins/greeter:1.0");
    let flag = format!(
        "error: {reference}: cannot reach the registry {address} over HTTPS: it answered in plain HTTP; to speak plain HTTP to this loopback registry, pass --plain-http {address}\n"
    );
    for args in [
        &["push", env!("GUEST_DECLARE"), &reference][..],
        &["pull", &reference][..],
    ] {
        let run = site.run(args);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (1, "", flag.as_str()),
            "{args:?}"
        );
    }
    // With the flag, the same registry takes the push.
    let pushed = push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    assert!(pushed["manifest"].as_str().is_some(), "{pushed}");

    // A deployment whose host.toml does not list it: host.toml's line.
    std::fs::write(site.path("host.toml"), plugin_entry(&reference, "")).unwrap();
    let render = site.render();
    assert_eq!(
        (render.code, render.stdout.as_str(), render.stderr.as_str()),
        (
            1,
            "",
            format!(
                "error: {reference}: cannot reach the registry {address} over HTTPS: it answered in plain HTTP; to speak plain HTTP to this loopback registry, list it under [host.registry] in host.toml: plain_http = [\"{address}\"]\n"
            )
            .as_str()
        )
    );
    // Listed as the message says, it renders.
    site.write_config(&registry, &plugin_entry(&reference, ""));
    assert_eq!(site.render().ok(), EXPECTED);
}

/// `dev` runs no build for a plugin from a registry: its file is in the content store, and
/// neither the directories above it (the cache, here inside the deployment's directory) nor
/// the directory `dev` runs in are its project. A `Cargo.toml` in both places would
/// otherwise make `dev` run `cargo build` for it.
#[test]
fn dev_builds_nothing_for_a_plugin_from_a_registry() {
    let registry = LocalRegistry::start(None);
    let site = Site::new();
    std::fs::write(site.path("Cargo.toml"), "this is not a manifest\n").unwrap();
    let reference = registry.reference("plugins/greeter:1.0");
    push(&site, &registry, env!("GUEST_DECLARE"), &reference);
    site.write_config(&registry, &plugin_entry(&reference, ""));
    let dev = site.run(&["dev", "--config", "host.toml", "--max-rounds", "0"]);
    let first = dev.ok().lines().next().unwrap_or_default().to_string();
    let store = site.path("cache").join("oci");
    assert!(
        first.starts_with(&format!(
            "== watching plugin \"greeter\": {}",
            store.display()
        )) && first.ends_with(" (no build command)"),
        "{first}"
    );
}
