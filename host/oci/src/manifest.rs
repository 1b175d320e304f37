//! The CNCF Wasm OCI artifact layout: an image manifest whose config is
//! `application/vnd.wasm.config.v0+json` and whose one layer is the component
//! (`application/wasm`). Checking what a registry sent is that layout, and building the
//! manifest a push sends.
//!
//! A manifest is a peer's text: every media type, digest or parse error quoted from it is
//! shown escaped and capped.

use std::collections::BTreeMap;

use serde::Deserialize;

use prompt_host_peer::shown;

/// The OCI image manifest media type (the one manifest kind a plugin artifact uses).
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config media type of a Wasm component artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a Wasm component.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The OCI image index media type (a list of manifests, e.g. one per platform).
pub(super) const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// What a manifest request accepts: the manifest first; the rest so that a tag naming an
/// index or a Docker image is answered and refused naming its media type, not as missing.
pub(super) const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json;q=0.5, application/vnd.docker.distribution.manifest.v2+json;q=0.5, application/vnd.docker.distribution.manifest.list.v2+json;q=0.5";
/// The largest manifest read.
pub(super) const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// A descriptor of the manifest: what a layer is.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Descriptor {
    media_type: String,
    pub(super) digest: String,
    /// Its size: a registry's number, checked before anything is sized by it.
    pub(super) size: i64,
}

/// Just enough of any manifest to tell what it is.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kind {
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    schema_version: u32,
    config: Descriptor,
    layers: Vec<Descriptor>,
}

/// The one `application/wasm` layer of a Wasm component artifact's manifest `raw`, or what
/// makes it something else. `content_type` is the media type the registry sent it as.
pub(super) fn component_layer(
    raw: &[u8],
    content_type: Option<&str>,
) -> Result<Descriptor, String> {
    let not_a_manifest = |e: serde_json::Error| {
        format!(
            "its manifest is not an OCI image manifest: {}",
            shown(&e.to_string())
        )
    };
    let kind: Kind = serde_json::from_slice(raw).map_err(not_a_manifest)?;
    // The body's own media type, else the one it was sent as; an index without either
    // still lists manifests.
    let media_type = kind
        .media_type
        .or_else(|| content_type.map(|t| t.split(';').next().unwrap_or("").trim().to_owned()))
        .filter(|t| !t.is_empty() && t != "application/json");
    match media_type.as_deref() {
        Some(MANIFEST_MEDIA_TYPE) => {}
        Some(INDEX_MEDIA_TYPE) => {
            return Err(format!(
                "its manifest has media type {INDEX_MEDIA_TYPE} (an image index, a list of manifests), not {MANIFEST_MEDIA_TYPE}"
            ))
        }
        Some(other) => {
            return Err(format!(
                "its manifest has media type {}, not {MANIFEST_MEDIA_TYPE}",
                shown(other)
            ))
        }
        None if kind.manifests.is_some() => {
            return Err(format!(
                "its manifest is an image index (it lists manifests), not {MANIFEST_MEDIA_TYPE}"
            ))
        }
        None => {}
    }
    let manifest: Manifest = serde_json::from_slice(raw).map_err(not_a_manifest)?;
    if manifest.schema_version != 2 {
        return Err(format!(
            "its manifest has schemaVersion {}, not 2",
            manifest.schema_version
        ));
    }
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "not a Wasm component artifact: its config has media type {}, not {WASM_CONFIG_MEDIA_TYPE}",
            shown(&manifest.config.media_type)
        ));
    }
    let mut layers = manifest.layers.into_iter();
    match (layers.next(), layers.next()) {
        (Some(layer), None) if layer.media_type == WASM_LAYER_MEDIA_TYPE => {
            if !super::valid_digest(&layer.digest) {
                return Err(format!(
                    "its layer digest \"{}\" is not a sha256 digest",
                    shown(&layer.digest)
                ));
            }
            Ok(layer)
        }
        (Some(layer), None) => Err(format!(
            "not a Wasm component artifact: its layer has media type {}, not {WASM_LAYER_MEDIA_TYPE}",
            shown(&layer.media_type)
        )),
        (None, _) => Err("not a Wasm component artifact: its manifest has no layer".into()),
        (Some(_), Some(_)) => {
            Err("not a Wasm component artifact: its manifest has more than one layer".into())
        }
    }
}

/// The component digest and size a Wasm component artifact's manifest names.
pub(super) fn component_of(raw: &[u8]) -> Result<(String, u64), String> {
    let layer = component_layer(raw, None)?;
    let size = u64::try_from(layer.size)
        .map_err(|_| format!("its component has {} bytes, a negative size", layer.size))?;
    Ok((layer.digest, size))
}

/// The config blob and the manifest a push of a component with `component_digest` and
/// `component_size` sends: no timestamp, so the same file and annotations give the same
/// manifest digest.
pub(super) fn artifact(
    component_digest: &str,
    component_size: usize,
    title: &str,
    annotations: &BTreeMap<String, String>,
) -> Result<(Vec<u8>, Vec<u8>), serde_json::Error> {
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [component_digest],
    }))?;
    let config_digest = format!("sha256:{}", prompt_host_core::digest::sha256_hex(&config));
    let manifest = serde_json::to_vec(&serde_json::json!({
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
            "size": component_size,
            "annotations": { "org.opencontainers.image.title": title },
        }],
        "annotations": annotations,
    }))?;
    Ok((config, manifest))
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
        .unwrap_or_default()
    }

    fn refusal(raw: &[u8], content_type: Option<&str>) -> String {
        component_layer(raw, content_type).err().unwrap_or_default()
    }

    #[test]
    fn only_a_wasm_component_artifact_is_accepted() {
        assert!(component_layer(
            &manifest(WASM_CONFIG_MEDIA_TYPE, &[WASM_LAYER_MEDIA_TYPE]),
            None
        )
        .is_ok());
        assert_eq!(
            refusal(&manifest(WASM_CONFIG_MEDIA_TYPE, &["application/vnd.oci.image.layer.v1.tar+gzip"]), None),
            "not a Wasm component artifact: its layer has media type application/vnd.oci.image.layer.v1.tar+gzip, not application/wasm"
        );
        assert_eq!(
            refusal(&manifest("application/vnd.oci.image.config.v1+json", &[WASM_LAYER_MEDIA_TYPE]), None),
            "not a Wasm component artifact: its config has media type application/vnd.oci.image.config.v1+json, not application/vnd.wasm.config.v0+json"
        );
        assert_eq!(
            refusal(&manifest(WASM_CONFIG_MEDIA_TYPE, &[]), None),
            "not a Wasm component artifact: its manifest has no layer"
        );
        assert_eq!(
            refusal(
                &manifest(
                    WASM_CONFIG_MEDIA_TYPE,
                    &[WASM_LAYER_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE]
                ),
                None
            ),
            "not a Wasm component artifact: its manifest has more than one layer"
        );
    }

    #[test]
    fn an_index_is_refused_naming_its_media_type() {
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": INDEX_MEDIA_TYPE,
            "manifests": [{"mediaType": MANIFEST_MEDIA_TYPE, "digest": format!("sha256:{}", "b".repeat(64)), "size": 10}],
        });
        let raw = serde_json::to_vec(&index).unwrap_or_default();
        assert_eq!(
            refusal(&raw, Some(INDEX_MEDIA_TYPE)),
            "its manifest has media type application/vnd.oci.image.index.v1+json (an image index, a list of manifests), not application/vnd.oci.image.manifest.v1+json"
        );
        // Without a mediaType field, by the type it was sent as, or by its manifests.
        let bare = br#"{"schemaVersion":2,"manifests":[]}"#;
        assert_eq!(
            refusal(bare, Some("application/vnd.oci.image.index.v1+json; charset=utf-8")),
            "its manifest has media type application/vnd.oci.image.index.v1+json (an image index, a list of manifests), not application/vnd.oci.image.manifest.v1+json"
        );
        assert_eq!(
            refusal(bare, Some("application/json")),
            "its manifest is an image index (it lists manifests), not application/vnd.oci.image.manifest.v1+json"
        );
        assert_eq!(
            refusal(br#"{"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json\u001b[2J"}"#, None),
            "its manifest has media type application/vnd.docker.distribution.manifest.list.v2+json\\u{1b}[2J, not application/vnd.oci.image.manifest.v1+json"
        );
    }

    #[test]
    fn a_registrys_numbers_and_text_are_checked_not_trusted() {
        let d = format!("sha256:{}", "a".repeat(64));
        let with_size = |size: &str| {
            format!(
                r#"{{"schemaVersion":2,"config":{{"mediaType":"{WASM_CONFIG_MEDIA_TYPE}","digest":"{d}","size":1}},"layers":[{{"mediaType":"{WASM_LAYER_MEDIA_TYPE}","digest":"{d}","size":{size}}}]}}"#
            )
        };
        assert_eq!(component_of(with_size("3").as_bytes()), Ok((d.clone(), 3)));
        assert_eq!(
            component_of(with_size("-1").as_bytes()),
            Err("its component has -1 bytes, a negative size".into())
        );
        let huge = refusal(with_size("18446744073709551615").as_bytes(), None);
        assert!(huge.starts_with("its manifest is not an OCI image manifest: invalid value: integer `18446744073709551615`"), "{huge}");
        // Nested 100,000 deep: skipped without recursion, then refused, not a stack overflow.
        let deep = format!("{}1{}", r#"{"a":"#.repeat(100_000), "}".repeat(100_000));
        assert_eq!(
            refusal(deep.as_bytes(), None),
            "its manifest is not an OCI image manifest: missing field `schemaVersion` at line 1 column 600001"
        );
        let forged = format!(r#"{{"schemaVersion":"{}"}}"#, "\\u001b[2J\\nerror: forged");
        let text = refusal(forged.as_bytes(), None);
        assert!(!text.contains('\u{1b}') && !text.contains('\n'), "{text}");
    }
}
