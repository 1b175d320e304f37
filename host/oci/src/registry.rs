//! Talking to an OCI registry: resolving a tag, pulling a plugin artifact (verified), and
//! pushing one in the CNCF Wasm OCI artifact layout (see [`super::manifest`]).
//!
//! HTTPS always, with the platform's roots plus an optional CA file; plain HTTP only for the
//! loopback registries the operator names. Every body is bounded before it is held (the
//! manifest at 4 MiB, the component at the size its manifest declares and
//! `max_wasm_bytes`, a token answer at 256 KiB, an error body at 64 KiB of which 512 bytes
//! are shown), each read and connect by `timeout`, and each operation as a whole by
//! `total_timeout` ([`super::bounded`]). Where credentials may go is
//! [`super::destination`]'s; how they are asked for is [`super::auth`]'s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use reqwest::Method;

use super::body::download_blob;
use super::bounded::{self, Exchange};
use super::manifest::{self, MANIFEST_ACCEPT, MAX_MANIFEST_BYTES};
use super::status::expect_ok;
use super::transport::{Ask, Session, Transport};
use super::{OciError, OciReference, RegistryError};
use prompt_host_core::digest::sha256_hex;
use prompt_host_peer::{read_bounded, shown_bytes, BodyError};

/// The default of `timeout_ms`: each connect and each read.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default of `total_timeout_ms`: one pull, tag resolution or push, whole.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(300);
/// The default of `max_bytes`: the largest component pulled, the same as the runtime's
/// default largest component (`max_wasm_bytes`, 128 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 128 << 20;

/// How the host talks to registries (`[host.registry]` in host.toml, flags on the command
/// line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Registries (`host:port`) spoken to over plain HTTP; each must be loopback.
    pub plain_http: Vec<String>,
    /// Extra PEM root certificates trusted beside the platform's.
    pub ca_file: Option<PathBuf>,
    /// Connect timeout, and the longest wait for any one read.
    pub timeout: Duration,
    /// The longest one operation (a pull, a tag resolved, a push) may take in all, token,
    /// redirects and bodies included, however the registry paces them.
    pub total_timeout: Duration,
    /// The largest component pulled, in bytes (`[host] max_wasm_bytes`).
    pub max_bytes: u64,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        Self {
            plain_http: Vec::new(),
            ca_file: None,
            timeout: DEFAULT_TIMEOUT,
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// A component pulled and verified.
#[derive(Debug)]
pub struct Pulled {
    /// The manifest's digest.
    pub manifest: String,
    /// The component's digest.
    pub component: String,
    /// The component.
    pub bytes: Vec<u8>,
    /// The manifest as the registry sent it (kept in the content store, so a digest
    /// reference resolves offline).
    pub manifest_bytes: Vec<u8>,
}

/// What a push produced.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The manifest's digest (`…@sha256:…` references this exact artifact).
    pub manifest: String,
    /// The component's digest.
    pub component: String,
    /// The component's size.
    pub size: u64,
}

/// A registry client with the deployment's settings. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Registry {
    transport: Arc<Transport>,
    settings: Arc<RegistrySettings>,
}

impl Registry {
    /// A client for `settings`; refuses a plain-HTTP registry that is not loopback.
    pub fn new(settings: RegistrySettings) -> Result<Self, OciError> {
        for registry in &settings.plain_http {
            if !super::is_loopback_registry(registry) {
                return Err(OciError::Settings(format!(
                    "plain_http: {registry} is not a loopback registry; plain HTTP is allowed only for localhost, 127.0.0.0/8 and [::1]"
                )));
            }
        }
        Ok(Self {
            transport: Arc::new(Transport::new(&settings)?),
            settings: Arc::new(settings),
        })
    }

    /// The settings in use.
    pub fn settings(&self) -> &RegistrySettings {
        &self.settings
    }

    /// The manifest digest `reference`'s tag (or digest) names at the registry now.
    pub async fn resolve(&self, reference: &OciReference) -> Result<String, OciError> {
        let mut session = self.session(reference, "pull")?;
        let reference = reference.clone();
        let text = reference.to_string();
        let work = async move {
            let failed = |error| OciError::registry(&reference, error);
            let target = reference.digest().or(reference.tag()).unwrap_or_default();
            let url = session
                .url(&format!("manifests/{target}"))
                .map_err(failed)?;
            let head = Ask {
                method: Method::HEAD,
                url: url.clone(),
                accept: Some(MANIFEST_ACCEPT),
                content_type: None,
                body: None,
                follow: true,
                what: "the manifest request",
            };
            let response = session.send(&head).await.map_err(failed)?;
            let response = expect_ok(&session, &reference, response, head.what, None).await?;
            if let Some(named) = response.headers().get("docker-content-digest") {
                let named = named.to_str().unwrap_or_default();
                if super::valid_digest(named) {
                    return Ok(named.to_owned());
                }
                return Err(OciError::Artifact {
                    reference: reference.to_string(),
                    message: format!(
                        "the registry named the manifest by \"{}\", not a sha256 digest",
                        shown_bytes(named.as_bytes())
                    ),
                });
            }
            // No digest in the answer: the manifest itself, hashed.
            let (raw, _, _) = fetch_manifest(&mut session, &reference, target).await?;
            Ok(format!("sha256:{}", sha256_hex(&raw)))
        };
        self.bounded("resolving the tag", &text, work).await
    }

    /// Pull the component `reference` names — at manifest `at` when given (a locked digest),
    /// else as written — checking the media types, the sizes and every digest.
    pub async fn pull(
        &self,
        reference: &OciReference,
        at: Option<&str>,
    ) -> Result<Pulled, OciError> {
        let mut session = self.session(reference, "pull")?;
        let reference = reference.clone();
        let text = reference.to_string();
        let at = at.map(str::to_owned);
        let max_bytes = self.settings.max_bytes;
        let work = async move {
            let artifact = |message: String| OciError::Artifact {
                reference: reference.to_string(),
                message,
            };
            let target = at
                .as_deref()
                .or(reference.digest())
                .or(reference.tag())
                .unwrap_or_default()
                .to_owned();
            let (raw, named, content_type) =
                fetch_manifest(&mut session, &reference, &target).await?;
            let actual = format!("sha256:{}", sha256_hex(&raw));
            // Asked by digest: that digest. By tag: the digest the registry named it by, if
            // it named one (a registry may name another algorithm's; only sha256 is checked).
            let expected = at
                .as_deref()
                .or(reference.digest())
                .map(str::to_owned)
                .or(named.filter(|n| n.starts_with("sha256:")))
                .unwrap_or_else(|| actual.clone());
            if actual != expected {
                return Err(OciError::Digest {
                    what: format!("{reference}: manifest"),
                    expected: shown_bytes(expected.as_bytes()),
                    actual,
                });
            }
            let layer =
                manifest::component_layer(&raw, content_type.as_deref()).map_err(artifact)?;
            let size = u64::try_from(layer.size)
                .ok()
                .filter(|size| *size <= max_bytes)
                .ok_or_else(|| {
                    artifact(format!(
                        "its component has {} bytes, more than max_wasm_bytes = {max_bytes}",
                        layer.size
                    ))
                })?;
            let failed = |error| OciError::registry(&reference, error);
            let url = session
                .url(&format!("blobs/{}", layer.digest))
                .map_err(failed)?;
            let ask = Ask {
                method: Method::GET,
                url,
                accept: None,
                content_type: None,
                body: None,
                follow: true,
                what: "the component download",
            };
            let response = session.send(&ask).await.map_err(failed)?;
            let response = expect_ok(
                &session,
                &reference,
                response,
                ask.what,
                Some(&layer.digest),
            )
            .await?;
            let bytes = download_blob(response, size, &layer.digest)
                .await
                .map_err(failed)?;
            Ok(Pulled {
                manifest: actual,
                component: layer.digest,
                bytes,
                manifest_bytes: raw,
            })
        };
        self.bounded("the pull", &text, work).await
    }

    /// Push `component` to `reference` (a tag) as a Wasm OCI artifact with `annotations` on
    /// its manifest.
    pub async fn push(
        &self,
        reference: &OciReference,
        component: &[u8],
        title: &str,
        annotations: &BTreeMap<String, String>,
    ) -> Result<Pushed, OciError> {
        let session = self.session(reference, "pull,push")?;
        let component_digest = format!("sha256:{}", sha256_hex(component));
        let (config, manifest) =
            manifest::artifact(&component_digest, component.len(), title, annotations).map_err(
                |e| OciError::Artifact {
                    reference: reference.to_string(),
                    message: format!("cannot write its manifest: {e}"),
                },
            )?;
        let pushed = Pushed {
            manifest: format!("sha256:{}", sha256_hex(&manifest)),
            component: component_digest.clone(),
            size: u64::try_from(component.len()).unwrap_or(u64::MAX),
        };
        let config_digest = format!("sha256:{}", sha256_hex(&config));
        let blobs = vec![
            (component_digest, component.to_vec()),
            (config_digest, config),
        ];
        let text = reference.to_string();
        let work = super::push::push(session, reference.clone(), blobs, manifest);
        self.bounded(
            "the push",
            &text,
            async move { work.await.map(|()| pushed) },
        )
        .await
    }

    fn session(&self, reference: &OciReference, access: &str) -> Result<Session, OciError> {
        let credentials = super::credentials::credentials(reference)?;
        Session::new(
            self.transport.clone(),
            reference.registry(),
            reference.repository(),
            access,
            credentials,
        )
        .map_err(|error| OciError::registry(reference, error))
    }

    async fn bounded<T: Send + 'static>(
        &self,
        operation: &'static str,
        reference: &str,
        work: impl std::future::Future<Output = Result<T, OciError>> + Send + 'static,
    ) -> Result<T, OciError> {
        let registry = reference
            .strip_prefix(super::SCHEME)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or(reference);
        let exchange = Exchange {
            operation,
            reference,
            registry,
            limit: self.settings.total_timeout,
        };
        bounded::run(exchange, work).await
    }
}

/// The manifest `target` (a tag or a digest) names, read within [`MAX_MANIFEST_BYTES`],
/// the digest the registry named it by (`Docker-Content-Digest`) and the media type it was
/// sent as, if any.
async fn fetch_manifest(
    session: &mut Session,
    reference: &OciReference,
    target: &str,
) -> Result<(Vec<u8>, Option<String>, Option<String>), OciError> {
    let failed = |error| OciError::registry(reference, error);
    let url = session
        .url(&format!("manifests/{target}"))
        .map_err(failed)?;
    let ask = Ask {
        method: Method::GET,
        url,
        accept: Some(MANIFEST_ACCEPT),
        content_type: None,
        body: None,
        follow: true,
        what: "the manifest request",
    };
    let response = session.send(&ask).await.map_err(failed)?;
    let response = expect_ok(session, reference, response, ask.what, None).await?;
    let named = response
        .headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let raw = read_bounded(response, MAX_MANIFEST_BYTES, "its manifest")
        .await
        .map_err(|e| match e {
            BodyError::TooLarge { .. } => OciError::Artifact {
                reference: reference.to_string(),
                message: e.to_string(),
            },
            BodyError::Read { .. } => failed(RegistryError::Body(e)),
        })?;
    Ok((raw, named, content_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_refused_for_a_registry_that_is_not_loopback() {
        let settings = RegistrySettings {
            plain_http: vec!["registry.example:5000".into()],
            ..RegistrySettings::default()
        };
        let err = Registry::new(settings).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("registry settings: plain_http: registry.example:5000 is not a loopback registry; plain HTTP is allowed only for localhost, 127.0.0.0/8 and [::1]")
        );
    }
}
