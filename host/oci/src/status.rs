//! What a registry's answer means when it is not the success asked for: a missing tag,
//! manifest or blob (by status or by the OCI error codes of its body), credentials refused,
//! or any other status with what the body said, shown escaped and capped. And where an
//! accepted upload goes next.

use reqwest::header::LOCATION;
use reqwest::{Response, StatusCode};

use super::body::read_error;
use super::transport::Session;
use super::{OciError, OciReference, RegistryError};

/// `response` when it is a success; else the error its status (and its body's OCI error
/// codes) says: the tag or manifest or blob missing, the credentials refused, or the status
/// and the body shown. `blob` names the blob a download asked for.
pub(super) async fn expect_ok(
    session: &Session,
    reference: &OciReference,
    response: Response,
    what: &'static str,
    blob: Option<&str>,
) -> Result<Response, OciError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let registry = session.registry().to_owned();
    let error = read_error(response, session.error_wait()).await;
    let has = |codes: &[&str]| error.codes.iter().any(|c| codes.contains(&c.as_str()));
    let repository = reference.repository().to_owned();
    let failure = if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
        || has(&["UNAUTHORIZED", "DENIED"])
    {
        RegistryError::Refused { registry }
    } else if status == StatusCode::NOT_FOUND
        || has(&["MANIFEST_UNKNOWN", "NAME_UNKNOWN", "BLOB_UNKNOWN"])
    {
        match (blob, reference.tag(), reference.digest()) {
            (Some(digest), _, _) => RegistryError::NoBlob {
                digest: digest.to_owned(),
                repository,
            },
            (None, Some(tag), None) => RegistryError::NoTag {
                tag: tag.to_owned(),
                repository,
            },
            _ => RegistryError::NoManifest { repository },
        }
    } else {
        RegistryError::Status {
            registry,
            what,
            status: status.as_u16(),
            detail: error.detail,
        }
    };
    Err(OciError::registry(reference, failure))
}

/// The `Location` of an accepted upload, checked like a redirect.
pub(super) fn upload_location(
    session: &Session,
    from: &reqwest::Url,
    response: &Response,
) -> Result<reqwest::Url, RegistryError> {
    match response.headers().get(LOCATION) {
        Some(location) => session.named_url(from, location, "names the upload location"),
        None => Err(RegistryError::NoLocation {
            registry: session.registry().to_owned(),
            what: "the upload",
            status: response.status().as_u16(),
        }),
    }
}
