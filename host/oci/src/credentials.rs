//! Credentials for a registry, from the Docker-style config: `$REGISTRY_AUTH_FILE`
//! (Podman's `auth.json`), else `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json` —
//! its `auths` entries or the credential helper it names. They are never part of a message:
//! the password is a [`Secret`], and a helper's output is never shown.

use std::path::PathBuf;

use super::{OciError, OciReference};
use prompt_host_peer::Secret;

/// What the host may authenticate to a registry with.
#[derive(Debug, Clone)]
pub(super) enum Credentials {
    /// No entry for the registry: anonymous.
    Anonymous,
    /// A user name and password.
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: Secret,
    },
}

/// The credentials for `reference`'s registry from the Docker-style config, or anonymous.
pub(super) fn credentials(reference: &OciReference) -> Result<Credentials, OciError> {
    let registry = reference.registry();
    let path = match std::env::var_os("REGISTRY_AUTH_FILE") {
        Some(file) => PathBuf::from(file),
        None => match std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker")))
        {
            Some(dir) => dir.join("config.json"),
            None => return Ok(Credentials::Anonymous),
        },
    };
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(Credentials::Anonymous);
    }
    let failed = |message: String| OciError::Credentials {
        registry: registry.to_string(),
        message,
    };
    let bytes = prompt_host_core::fsutil::read_regular(&path, 1 << 20)
        .map_err(|e| failed(e.to_string()))?;
    use docker_credential::{CredentialRetrievalError as C, DockerCredential};
    match docker_credential::get_credential_from_reader(bytes.as_slice(), registry) {
        Ok(DockerCredential::UsernamePassword(user, password)) => Ok(Credentials::Basic {
            user,
            password: Secret::new(password),
        }),
        Ok(DockerCredential::IdentityToken(_)) => Err(failed(format!(
            "{} holds an identity token for it; only a username and password are supported",
            path.display()
        ))),
        Err(C::NoCredentialConfigured) => Ok(Credentials::Anonymous),
        // Never the helper's output: it may hold the secret.
        Err(C::HelperFailure { .. })
        | Err(C::HelperCommunicationError)
        | Err(C::MalformedHelperResponse) => Err(failed(format!(
            "the credential helper {} names for it failed",
            path.display()
        ))),
        Err(e) => Err(failed(format!("{}: {e}", path.display()))),
    }
}
