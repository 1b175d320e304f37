//! Talking to an OCI registry: resolving a tag, pulling a plugin artifact (verified), and
//! pushing one in the CNCF Wasm OCI artifact layout (config
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer).
//!
//! HTTPS always, with the platform's roots plus an optional CA file; plain HTTP only for the
//! loopback registries the operator names. Credentials come from the Docker-style config
//! (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`; `REGISTRY_AUTH_FILE` for a
//! Podman-style one) and are never part of a message.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use super::{OciError, OciReference};
use crate::wasm::sha256_hex;

/// The OCI image manifest media type (the one manifest kind a plugin artifact uses).
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config media type of a Wasm component artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a Wasm component.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The largest manifest or config accepted.
const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// How the host talks to registries (`[host.registry]` in host.toml, flags on the command
/// line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Registries (`host:port`) spoken to over plain HTTP; each must be loopback.
    pub plain_http: Vec<String>,
    /// Extra PEM root certificates trusted beside the platform's.
    pub ca_file: Option<PathBuf>,
    /// Connect and read timeout.
    pub timeout: Duration,
    /// The largest component pulled, in bytes (`[host] max_wasm_bytes`).
    pub max_bytes: u64,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        Self {
            plain_http: Vec::new(),
            ca_file: None,
            timeout: Duration::from_secs(30),
            max_bytes: crate::wasm::DEFAULT_MAX_WASM_BYTES,
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

/// A registry client with the deployment's settings.
pub struct Registry {
    client: oci_client::Client,
    settings: RegistrySettings,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    schema_version: u32,
    #[serde(default)]
    media_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: String,
    digest: String,
    size: i64,
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
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut extra_roots = Vec::new();
        if let Some(ca) = &settings.ca_file {
            let pem = crate::fsutil::read_regular(ca, 1 << 20)
                .map_err(|e| OciError::Settings(format!("ca_file: {e}")))?;
            extra_roots.push(Certificate {
                encoding: CertificateEncoding::Pem,
                data: pem,
            });
        }
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(settings.plain_http.clone()),
            extra_root_certificates: extra_roots,
            platform_resolver: None,
            connect_timeout: Some(settings.timeout),
            read_timeout: Some(settings.timeout),
            user_agent: concat!("prompt-host/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let client = oci_client::Client::try_from(config)
            .map_err(|e| OciError::Settings(format!("cannot build the registry client: {e}")))?;
        Ok(Self { client, settings })
    }

    /// The settings in use.
    pub fn settings(&self) -> &RegistrySettings {
        &self.settings
    }

    /// The manifest digest `reference`'s tag (or digest) names at the registry now.
    pub async fn resolve(&self, reference: &OciReference) -> Result<String, OciError> {
        let auth = credentials(reference)?;
        let digest = self
            .client
            .fetch_manifest_digest(&reference.client_ref(), &auth)
            .await
            .map_err(|e| registry_error(reference, e))?;
        if !super::valid_digest(&digest) {
            return Err(OciError::Artifact {
                reference: reference.to_string(),
                message: format!(
                    "the registry named the manifest by \"{digest}\", not a sha256 digest"
                ),
            });
        }
        Ok(digest)
    }

    /// Pull the component `reference` names — at manifest `at` when given (a locked digest),
    /// else as written — checking the media types, the sizes and every digest.
    pub async fn pull(
        &self,
        reference: &OciReference,
        at: Option<&str>,
    ) -> Result<Pulled, OciError> {
        let auth = credentials(reference)?;
        let target = match at.or(reference.digest()) {
            Some(digest) => reference.client_ref_at(digest),
            None => reference.client_ref(),
        };
        let (raw, digest) = self
            .client
            .pull_manifest_raw(&target, &auth, &[MANIFEST_MEDIA_TYPE])
            .await
            .map_err(|e| registry_error(reference, e))?;
        let artifact = |message: String| OciError::Artifact {
            reference: reference.to_string(),
            message,
        };
        if raw.len() > MAX_MANIFEST_BYTES {
            return Err(artifact(format!(
                "its manifest has {} bytes, more than {MAX_MANIFEST_BYTES}",
                raw.len()
            )));
        }
        let actual = format!("sha256:{}", sha256_hex(&raw));
        let expected = at.or(reference.digest()).unwrap_or(&digest);
        if actual != expected {
            return Err(OciError::Digest {
                what: format!("{reference}: manifest"),
                expected: expected.to_string(),
                actual,
            });
        }
        let layer = component_layer(&raw).map_err(artifact)?;
        if layer.size < 0 || layer.size as u64 > self.settings.max_bytes {
            return Err(artifact(format!(
                "its component has {} bytes, more than max_wasm_bytes = {}",
                layer.size, self.settings.max_bytes
            )));
        }
        let mut out = Bounded {
            bytes: Vec::with_capacity(layer.size as usize),
            limit: layer.size as usize,
        };
        let descriptor = oci_client::manifest::OciDescriptor {
            media_type: layer.media_type.clone(),
            digest: layer.digest.clone(),
            size: layer.size,
            ..Default::default()
        };
        self.client
            .pull_blob(&target, &descriptor, &mut out)
            .await
            .map_err(|e| registry_error(reference, e))?;
        let component = format!("sha256:{}", sha256_hex(&out.bytes));
        if component != layer.digest {
            return Err(OciError::Digest {
                what: format!("{reference}: component"),
                expected: layer.digest,
                actual: component,
            });
        }
        Ok(Pulled {
            manifest: actual,
            component,
            bytes: out.bytes,
            manifest_bytes: raw.to_vec(),
        })
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
        let auth = credentials(reference)?;
        let target = reference.client_ref();
        let failed = |e| registry_error(reference, e);
        let component_digest = format!("sha256:{}", sha256_hex(component));
        let config = serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [component_digest],
        });
        let config = serde_json::to_vec(&config).unwrap_or_default();
        let config_digest = format!("sha256:{}", sha256_hex(&config));
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {
                "mediaType": WASM_CONFIG_MEDIA_TYPE,
                "digest": config_digest,
                "size": config.len(),
            },
            "layers": [{
                "mediaType": WASM_LAYER_MEDIA_TYPE,
                "digest": component_digest,
                "size": component.len(),
                "annotations": { "org.opencontainers.image.title": title },
            }],
            "annotations": annotations,
        });
        let manifest = serde_json::to_vec(&manifest).unwrap_or_default();
        self.client
            .store_auth_if_needed(target.resolve_registry(), &auth)
            .await;
        self.client
            .auth(&target, &auth, oci_client::RegistryOperation::Push)
            .await
            .map_err(failed)?;
        self.client
            .push_blob(&target, component.to_vec(), &component_digest)
            .await
            .map_err(failed)?;
        self.client
            .push_blob(&target, config, &config_digest)
            .await
            .map_err(failed)?;
        self.client
            .push_manifest_raw(
                &target,
                manifest.clone(),
                http::HeaderValue::from_static(MANIFEST_MEDIA_TYPE),
            )
            .await
            .map_err(failed)?;
        Ok(Pushed {
            manifest: format!("sha256:{}", sha256_hex(&manifest)),
            component: component_digest,
            size: component.len() as u64,
        })
    }
}

/// The component digest and size a Wasm component artifact's manifest names.
pub(super) fn component_of(raw: &[u8]) -> Result<(String, u64), String> {
    component_layer(raw).map(|layer| (layer.digest, layer.size.max(0) as u64))
}

/// The one `application/wasm` layer of a Wasm component artifact's manifest, or what makes
/// the manifest something else.
fn component_layer(raw: &[u8]) -> Result<Descriptor, String> {
    let manifest: Manifest = serde_json::from_slice(raw)
        .map_err(|e| format!("its manifest is not an OCI image manifest: {e}"))?;
    if manifest.schema_version != 2 {
        return Err(format!(
            "its manifest has schemaVersion {}, not 2",
            manifest.schema_version
        ));
    }
    if let Some(media_type) = manifest.media_type.as_deref() {
        if media_type != MANIFEST_MEDIA_TYPE {
            return Err(format!(
                "its manifest has media type {media_type}, not {MANIFEST_MEDIA_TYPE}"
            ));
        }
    }
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "not a Wasm component artifact: its config has media type {}, not {WASM_CONFIG_MEDIA_TYPE}",
            manifest.config.media_type
        ));
    }
    let _ = (&manifest.config.digest, manifest.config.size);
    let mut layers = manifest.layers.into_iter();
    match (layers.next(), layers.next()) {
        (Some(layer), None) if layer.media_type == WASM_LAYER_MEDIA_TYPE => {
            if !super::valid_digest(&layer.digest) {
                return Err(format!("its layer digest \"{}\" is not a sha256 digest", layer.digest));
            }
            Ok(layer)
        }
        (Some(layer), None) => Err(format!(
            "not a Wasm component artifact: its layer has media type {}, not {WASM_LAYER_MEDIA_TYPE}",
            layer.media_type
        )),
        (None, _) => Err("not a Wasm component artifact: its manifest has no layer".into()),
        (Some(_), Some(_)) => Err("not a Wasm component artifact: its manifest has more than one layer".into()),
    }
}

/// What a registry failure means, named by the reference and without the client's types.
fn registry_error(
    reference: &OciReference,
    error: oci_client::errors::OciDistributionError,
) -> OciError {
    use oci_client::errors::{OciDistributionError as E, OciErrorCode};
    let message = match &error {
        E::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown
                )
            }) =>
        {
            match reference.tag() {
                Some(tag) if reference.digest().is_none() => {
                    format!(
                        "the registry has no tag \"{tag}\" in {}",
                        reference.repository()
                    )
                }
                _ => format!(
                    "the registry has no such manifest in {}",
                    reference.repository()
                ),
            }
        }
        E::ImageManifestNotFoundError(_) => {
            format!(
                "the registry has no such manifest in {}",
                reference.repository()
            )
        }
        E::RegistryError { envelope, .. }
            if envelope
                .errors
                .iter()
                .any(|e| matches!(e.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)) =>
        {
            format!(
                "the registry refused the credentials (or their absence) for {}",
                reference.registry()
            )
        }
        E::ServerError {
            code: 401 | 403, ..
        }
        | E::UnauthorizedError { .. }
        | E::AuthenticationFailure(_) => format!(
            "the registry refused the credentials (or their absence) for {}",
            reference.registry()
        ),
        E::DigestError(e) => format!("the registry sent bytes that do not match their digest: {e}"),
        E::RequestError(e) => format!(
            "cannot reach the registry {}: {}",
            reference.registry(),
            request_error(e)
        ),
        other => other.to_string(),
    };
    OciError::Registry {
        reference: reference.to_string(),
        message,
    }
}

/// A request error's innermost cause (reqwest's own text repeats the URL at every level).
fn request_error(error: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = error;
    while let Some(next) = source.source() {
        source = next;
    }
    if error.is_timeout() {
        "timed out".into()
    } else {
        source.to_string()
    }
}

/// The credentials for `reference`'s registry from the Docker-style config, or anonymous.
fn credentials(reference: &OciReference) -> Result<RegistryAuth, OciError> {
    let registry = reference.registry();
    let path = match std::env::var_os("REGISTRY_AUTH_FILE") {
        Some(file) => PathBuf::from(file),
        None => match std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker")))
        {
            Some(dir) => dir.join("config.json"),
            None => return Ok(RegistryAuth::Anonymous),
        },
    };
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(RegistryAuth::Anonymous);
    }
    let bytes = crate::fsutil::read_regular(&path, 1 << 20).map_err(|e| OciError::Credentials {
        registry: registry.to_string(),
        message: e.to_string(),
    })?;
    use docker_credential::{CredentialRetrievalError as C, DockerCredential};
    match docker_credential::get_credential_from_reader(bytes.as_slice(), registry) {
        Ok(DockerCredential::UsernamePassword(user, password)) => {
            Ok(RegistryAuth::Basic(user, password))
        }
        Ok(DockerCredential::IdentityToken(_)) => Err(OciError::Credentials {
            registry: registry.to_string(),
            message: format!(
                "{} holds an identity token for it; only a username and password are supported",
                path.display()
            ),
        }),
        Err(C::NoCredentialConfigured) => Ok(RegistryAuth::Anonymous),
        // Never the helper's output: it may hold the secret.
        Err(C::HelperFailure { .. })
        | Err(C::HelperCommunicationError)
        | Err(C::MalformedHelperResponse) => Err(OciError::Credentials {
            registry: registry.to_string(),
            message: format!(
                "the credential helper {} names for it failed",
                path.display()
            ),
        }),
        Err(e) => Err(OciError::Credentials {
            registry: registry.to_string(),
            message: format!("{}: {e}", path.display()),
        }),
    }
}

/// A sink that refuses more than `limit` bytes (the size the manifest declared).
struct Bounded {
    bytes: Vec<u8>,
    limit: usize,
}

impl tokio::io::AsyncWrite for &mut Bounded {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.bytes.len() + buf.len() > this.limit {
            return Poll::Ready(Err(std::io::Error::other(format!(
                "the registry sent more than the {} bytes the manifest declares",
                this.limit
            ))));
        }
        this.bytes.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(config: &str, layers: &[&str]) -> Vec<u8> {
        let d = format!("sha256:{}", "a".repeat(64));
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": config, "digest": d, "size": 2},
            "layers": layers.iter().map(|m| serde_json::json!({"mediaType": m, "digest": d, "size": 3})).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    #[test]
    fn only_a_wasm_component_artifact_is_accepted() {
        assert!(
            component_layer(&manifest(WASM_CONFIG_MEDIA_TYPE, &[WASM_LAYER_MEDIA_TYPE])).is_ok()
        );
        assert_eq!(
            component_layer(&manifest(WASM_CONFIG_MEDIA_TYPE, &["application/vnd.oci.image.layer.v1.tar+gzip"])).err().unwrap(),
            "not a Wasm component artifact: its layer has media type application/vnd.oci.image.layer.v1.tar+gzip, not application/wasm"
        );
        assert!(component_layer(&manifest(
            "application/vnd.oci.image.config.v1+json",
            &[WASM_LAYER_MEDIA_TYPE]
        ))
        .err()
        .unwrap()
        .contains("its config has media type"));
        assert!(component_layer(&manifest(WASM_CONFIG_MEDIA_TYPE, &[]))
            .err()
            .unwrap()
            .contains("no layer"));
        assert!(component_layer(&manifest(
            WASM_CONFIG_MEDIA_TYPE,
            &[WASM_LAYER_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE]
        ))
        .err()
        .unwrap()
        .contains("more than one layer"));
    }

    #[test]
    fn plain_http_is_refused_for_a_registry_that_is_not_loopback() {
        let settings = RegistrySettings {
            plain_http: vec!["registry.example:5000".into()],
            ..RegistrySettings::default()
        };
        let err = Registry::new(settings).err().unwrap().to_string();
        assert!(
            err.contains("registry.example:5000 is not a loopback registry"),
            "{err}"
        );
    }
}
