//! Publishing an artifact: each blob the registry does not have yet is uploaded in one
//! piece (`POST …/blobs/uploads/`, then `PUT` to the location it names with the digest),
//! then the manifest is put under the tag.
//!
//! The upload location is the registry's to name, and it is checked like a redirect: HTTPS
//! or a listed plain-HTTP origin, and the registry's credentials only when it is the
//! registry's own origin.

use reqwest::{Method, StatusCode};

use super::manifest::MANIFEST_MEDIA_TYPE;
use super::status::{expect_ok, upload_location};
use super::transport::{Ask, Session};
use super::{OciError, OciReference};

/// Push `blobs` (digest, bytes) that the registry lacks, then `manifest` under
/// `reference`'s tag.
pub(super) async fn push(
    mut session: Session,
    reference: OciReference,
    blobs: Vec<(String, Vec<u8>)>,
    manifest: Vec<u8>,
) -> Result<(), OciError> {
    let failed = |error| OciError::registry(&reference, error);
    for (digest, bytes) in &blobs {
        if has_blob(&mut session, &reference, digest).await? {
            continue;
        }
        let start = Ask {
            method: Method::POST,
            url: session.url("blobs/uploads/").map_err(failed)?,
            accept: None,
            content_type: None,
            body: Some(&[]),
            follow: false,
            what: "the upload",
        };
        let response = session.send(&start).await.map_err(failed)?;
        let response = expect_ok(&session, &reference, response, start.what, None).await?;
        let mut location = upload_location(&session, &start.url, &response).map_err(failed)?;
        drop(response);
        location.query_pairs_mut().append_pair("digest", digest);
        let put = Ask {
            method: Method::PUT,
            url: location,
            accept: None,
            content_type: Some("application/octet-stream"),
            body: Some(bytes),
            follow: false,
            what: "the blob upload",
        };
        let response = session.send(&put).await.map_err(failed)?;
        expect_ok(&session, &reference, response, put.what, None).await?;
    }
    let tag = reference.tag().unwrap_or_default();
    let put = Ask {
        method: Method::PUT,
        url: session.url(&format!("manifests/{tag}")).map_err(failed)?,
        accept: None,
        content_type: Some(MANIFEST_MEDIA_TYPE),
        body: Some(&manifest),
        follow: false,
        what: "the manifest upload",
    };
    let response = session.send(&put).await.map_err(failed)?;
    expect_ok(&session, &reference, response, put.what, None).await?;
    Ok(())
}

/// Whether the repository already holds blob `digest` (so it is not sent again).
async fn has_blob(
    session: &mut Session,
    reference: &OciReference,
    digest: &str,
) -> Result<bool, OciError> {
    let failed = |error| OciError::registry(reference, error);
    let ask = Ask {
        method: Method::HEAD,
        url: session.url(&format!("blobs/{digest}")).map_err(failed)?,
        accept: None,
        content_type: None,
        body: None,
        follow: true,
        what: "the blob check",
    };
    let response = session.send(&ask).await.map_err(failed)?;
    if response.status() == StatusCode::NOT_FOUND {
        return Ok(false);
    }
    expect_ok(session, reference, response, ask.what, Some(digest)).await?;
    Ok(true)
}
