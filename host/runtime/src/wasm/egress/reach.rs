//! What one loaded plugin may reach over HTTP, as the host holds it: the grants with their
//! secrets read, each grant's TLS configuration, and the bounds of a response. Made once
//! when the plugin is loaded (`sandbox/grants.rs`); read by the exchange of every request.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use prompt_host_peer::egress::{self, EgressError, HttpGrant, Origin};
use wasmtime_wasi_http::WasiBody;

/// What bounds one plugin request (besides the call's deadline).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EgressLimits {
    /// The most body bytes a response may carry; past it, reading fails.
    pub(crate) max_body_bytes: u64,
    /// The most bytes of a response's head (status line and headers).
    pub(crate) max_head_bytes: usize,
    /// The most headers a response may have.
    pub(crate) max_headers: usize,
    /// The longest one request may take, connecting to the last body byte, when the call
    /// has longer.
    pub(crate) max_time: Duration,
}

impl Default for EgressLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 << 20,
            max_head_bytes: 64 << 10,
            max_headers: 100,
            max_time: Duration::from_secs(30),
        }
    }
}

/// What one loaded plugin may reach: its grants (secrets read at load), each with its TLS
/// client configuration (the platform's roots, and the grant's `ca_file`), and the limits.
pub(crate) struct Egress {
    grants: Vec<(HttpGrant, Arc<rustls::ClientConfig>)>,
    pub(crate) limits: EgressLimits,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let grants: Vec<&HttpGrant> = self.grants.iter().map(|(g, _)| g).collect();
        f.debug_struct("Egress")
            .field("grants", &grants)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Egress {
    /// The egress of `grants`, each trusting the platform's roots and the certificates of its
    /// `ca_file` (PEM). The error names the file.
    pub(crate) fn new(grants: Vec<(HttpGrant, Option<PathBuf>)>) -> Result<Egress, String> {
        let mut platform_only = None;
        let mut opened = Vec::with_capacity(grants.len());
        for (grant, ca_file) in grants {
            let tls = match ca_file {
                Some(path) => tls_config(Some(&path))?,
                None => match &platform_only {
                    Some(tls) => Arc::clone(tls),
                    None => {
                        let tls = tls_config(None)?;
                        platform_only = Some(Arc::clone(&tls));
                        tls
                    }
                },
            };
            opened.push((grant, tls));
        }
        Ok(Egress {
            grants: opened,
            limits: EgressLimits::default(),
        })
    }

    /// The grant that permits a request to `origin`, with its TLS configuration.
    pub(crate) fn granted(
        &self,
        origin: &Origin,
    ) -> Result<(&HttpGrant, &Arc<rustls::ClientConfig>), EgressError> {
        egress::granted(&self.grants, |(grant, _)| grant, origin).map(|(grant, tls)| (grant, tls))
    }
}

/// A TLS client configuration: ring, safe protocol versions, the platform's verifier with
/// the certificates of `ca_file` added to its roots.
fn tls_config(ca_file: Option<&std::path::Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    let mut extra = Vec::new();
    if let Some(path) = ca_file {
        let pem = crate::fsutil::read_regular(path, 1 << 20)
            .map_err(|e| format!("ca_file {}: {e}", path.display()))?;
        extra = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("ca_file {}: not PEM certificates: {e}", path.display()))?;
        if extra.is_empty() {
            return Err(format!("ca_file {}: no certificate in it", path.display()));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())
            .map_err(|e| format!("cannot build the TLS verifier: {e}"))?;
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(tls))
}

/// What sending a request gives `wasmtime-wasi-http`: the response, and a future it drives for
/// the connection (the host drives its own; this one is done at once).
pub(crate) type Sent = wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn std::future::Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
)>;
