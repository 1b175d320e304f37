//! A registry made of the hostile-peer kit: it serves one plugin artifact (the declare
//! guest) the way CNCF distribution does — `GET`/`HEAD …/manifests/1.0` and
//! `…/blobs/<digest>`, anonymously or behind `Basic` or `Bearer` — unless a test's twist
//! answers a request first. And the deployment directory a command runs in: its host.toml's
//! `[host.registry]`, its Docker config, its cache and HOME.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::integration::oci::registry::base64_encode;
use crate::integration::support::cli::{bin, QUIET_PROGRESS};
use crate::integration::support::hostile_peer::{
    run_measured, Answer, Measured, Peer, Reply, Request,
};

/// The repository and tag every fake registry serves.
pub(crate) const REPOSITORY: &str = "plugins/greeter";
/// The user and password of the Docker config a site writes.
pub(crate) const USER: &str = "publisher";
pub(crate) const PASSWORD: &str = "hostile-registry-pw-3d91";
/// The token the honest token service hands out.
pub(crate) const TOKEN: &str = "registry-token-8b2f";
/// The longest a command may take before the test fails: every exchange here is bounded
/// by a `total_timeout_ms` of a few seconds; the rest is a busy machine.
pub(crate) const ENDED: Duration = Duration::from_secs(60);

/// `Basic base64(USER:PASSWORD)`.
pub(crate) fn basic() -> String {
    format!(
        "Basic {}",
        base64_encode(format!("{USER}:{PASSWORD}").as_bytes())
    )
}

/// The artifact a fake registry serves.
pub(crate) struct Artifact {
    pub(crate) component: Vec<u8>,
    pub(crate) component_digest: String,
    pub(crate) manifest: Vec<u8>,
    pub(crate) manifest_digest: String,
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", prompt_host::wasm::sha256_hex(bytes))
}

impl Artifact {
    /// The declare guest, its layer's size as the manifest states it (`None`: the truth).
    pub(crate) fn declare(layer_size: Option<&str>) -> Arc<Artifact> {
        let component = std::fs::read(env!("GUEST_DECLARE")).unwrap();
        let component_digest = sha256(&component);
        let config = br#"{"architecture":"wasm","os":"wasip2"}"#;
        let size = layer_size.map_or(component.len().to_string(), str::to_owned);
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.wasm.config.v0+json","digest":"{}","size":{}}},"layers":[{{"mediaType":"application/wasm","digest":"{component_digest}","size":{size}}}]}}"#,
            sha256(config),
            config.len()
        )
        .into_bytes();
        Arc::new(Artifact {
            manifest_digest: sha256(&manifest),
            component,
            component_digest,
            manifest,
        })
    }

    /// The path of the component blob.
    pub(crate) fn blob_path(&self) -> String {
        format!("/v2/{REPOSITORY}/blobs/{}", self.component_digest)
    }
}

/// How the fake registry asks for credentials.
#[derive(Clone)]
pub(crate) enum Auth {
    Anonymous,
    /// `Basic`: the site's user and password.
    Basic,
    /// `Bearer` with this realm; [`TOKEN`] is accepted.
    Bearer(String),
}

/// A twist: answers a request before the honest registry does.
pub(crate) type Twist = Box<dyn Fn(&Request) -> Option<Answer> + Send + Sync>;

/// No twist.
pub(crate) fn honest() -> Twist {
    Box::new(|_| None)
}

/// A registry for `artifact` asking `auth`, `twist` answering first.
pub(crate) fn registry(artifact: Arc<Artifact>, auth: Auth, twist: Twist) -> Peer {
    Peer::http(move |request| {
        if let Some(answer) = twist(request) {
            return answer;
        }
        let authorization = request.header("authorization");
        let challenge = match &auth {
            Auth::Anonymous => None,
            Auth::Basic if authorization == Some(basic().as_str()) => None,
            Auth::Basic => Some(r#"Basic realm="fake""#.to_owned()),
            Auth::Bearer(_) if authorization == Some(format!("Bearer {TOKEN}").as_str()) => None,
            Auth::Bearer(realm) => Some(format!(r#"Bearer realm="{realm}",service="fake""#)),
        };
        if let Some(challenge) = challenge {
            return Reply::new(401)
                .header("www-authenticate", &challenge)
                .json(&serde_json::json!({"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}))
                .into();
        }
        let manifests = format!("/v2/{REPOSITORY}/manifests/");
        if let Some(target) = request.path().strip_prefix(&manifests) {
            if target == "1.0" || target == artifact.manifest_digest {
                let reply = Reply::new(200)
                    .header("content-type", "application/vnd.oci.image.manifest.v1+json")
                    .header("docker-content-digest", &artifact.manifest_digest);
                return if request.method == "HEAD" {
                    reply.into()
                } else {
                    reply.body(artifact.manifest.clone()).into()
                };
            }
        }
        if request.path() == artifact.blob_path() {
            return Reply::new(200)
                .header("content-type", "application/octet-stream")
                .body(artifact.component.clone())
                .into();
        }
        Reply::new(404)
            .json(&serde_json::json!({"errors": [{"code": "MANIFEST_UNKNOWN", "message": "unknown"}]}))
            .into()
    })
}

/// A token service handing out [`TOKEN`] to the site's credentials (`with_credentials`) or
/// to anyone, `twist` answering first.
pub(crate) fn token_service(with_credentials: bool, twist: Twist) -> Peer {
    Peer::http(move |request| token_answer(request, with_credentials, &twist))
}

/// [`token_service`] over HTTPS.
pub(crate) fn token_service_https(with_credentials: bool, twist: Twist) -> Peer {
    Peer::https(move |request| token_answer(request, with_credentials, &twist))
}

fn token_answer(request: &Request, with_credentials: bool, twist: &Twist) -> Answer {
    if let Some(answer) = twist(request) {
        return answer;
    }
    if with_credentials && request.header("authorization") != Some(basic().as_str()) {
        return Reply::new(401).text("who are you").into();
    }
    Reply::new(200)
        .json(&serde_json::json!({"token": TOKEN, "expires_in": 300}))
        .into()
}

/// Whether any request `peer` received carried the site's password or a token, in any
/// header.
pub(crate) fn saw_a_secret(peer: &Peer) -> bool {
    let secrets = [basic(), PASSWORD.to_owned(), TOKEN.to_owned()];
    peer.requests().iter().any(|r| {
        r.headers.iter().any(|(_, v)| {
            secrets
                .iter()
                .any(|s| v.contains(s.trim_start_matches("Basic ")))
        })
    })
}

/// A deployment directory: host.toml with `[host.registry]`, a Docker config holding the
/// site's credentials for the registries it names, a cache and a HOME.
pub(crate) struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    /// A site whose host.toml's `[host.registry]` is `registry_table` (its lines), and
    /// whose Docker config holds the credentials for `credentials_for` (`host:port`s).
    pub(crate) fn new(registry_table: &str, credentials_for: &[&str]) -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("docker")).unwrap();
        std::fs::write(
            dir.path().join("host.toml"),
            format!("[host.registry]\n{registry_table}\n"),
        )
        .unwrap();
        let auth = base64_encode(format!("{USER}:{PASSWORD}").as_bytes());
        let auths: serde_json::Map<String, serde_json::Value> = credentials_for
            .iter()
            .map(|r| ((*r).to_owned(), serde_json::json!({ "auth": auth })))
            .collect();
        std::fs::write(
            dir.path().join("docker/config.json"),
            serde_json::json!({ "auths": auths }).to_string(),
        )
        .unwrap();
        Site { dir }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `prompt-host ARGS` in the site, its environment set.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(bin());
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("PROMPT_HOST_CACHE_DIR", self.path("cache"))
            .env("HOME", self.path("home"))
            .env("DOCKER_CONFIG", self.path("docker"))
            .env_remove("REGISTRY_AUTH_FILE")
            .env(QUIET_PROGRESS.0, QUIET_PROGRESS.1);
        command
    }

    /// `prompt-host pull REFERENCE --config host.toml`, measured.
    pub(crate) fn pull(&self, reference: &str) -> Measured {
        run_measured(
            &mut self.command(&["pull", reference, "--config", "host.toml"]),
            ENDED * 2,
        )
    }
}

/// `oci://REGISTRY/plugins/greeter:1.0` for `peer`.
pub(crate) fn reference(peer: &Peer) -> String {
    format!("oci://{}/{REPOSITORY}:1.0", peer.host_port())
}
