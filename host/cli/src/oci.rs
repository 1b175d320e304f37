//! `prompt-host pull`, `push` and `lock`: plugins published to OCI registries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use prompt_host::config::HostConfig;
use prompt_host::oci::{self, LockMode, OciReference, Registry, RegistrySettings, Resolution};

/// Where registry settings come from: a host.toml, or the command line alone.
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryArgs {
    /// Take the registry settings and the cache directory from this host.toml.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Speak plain HTTP to this loopback registry (`host:port`; repeatable).
    #[arg(long = "plain-http", value_name = "REGISTRY")]
    pub plain_http: Vec<String>,
}

impl RegistryArgs {
    fn settings(&self) -> anyhow::Result<(RegistrySettings, PathBuf)> {
        let (mut settings, cache) = match &self.config {
            Some(path) => {
                let config = HostConfig::load(path)?;
                (config.registry_settings(), cache_dir(&config))
            }
            None => (
                RegistrySettings::default(),
                env_cache_dir().unwrap_or_else(prompt_host::wasm::default_cache_dir),
            ),
        };
        settings.plain_http.extend(self.plain_http.iter().cloned());
        Ok((settings, cache))
    }
}

/// `PROMPT_HOST_CACHE_DIR`, the command line's compile cache override.
fn env_cache_dir() -> Option<PathBuf> {
    std::env::var_os("PROMPT_HOST_CACHE_DIR").map(PathBuf::from)
}

/// The compile cache (and content store) a command-line host built from `config` uses.
fn cache_dir(config: &HostConfig) -> PathBuf {
    config.oci_cache_dir(env_cache_dir().as_deref())
}

fn parse_reference(text: &str) -> anyhow::Result<OciReference> {
    OciReference::parse(text).map_err(|e| anyhow::anyhow!("{text}: {e}"))
}

/// A loopback registry that answered in plain HTTP, told in `push`'s and `pull`'s words:
/// their `--plain-http` flag is the fix (the library's message names host.toml's
/// `plain_http`, which these commands read only with `--config`).
fn with_the_flag(error: oci::OciError) -> anyhow::Error {
    match flag_message(&error) {
        Some(message) => anyhow::Error::msg(message),
        None => error.into(),
    }
}

fn flag_message(error: &oci::OciError) -> Option<String> {
    let oci::OciError::Registry { reference, error } = error else {
        return None;
    };
    let oci::RegistryError::PlainHttp { registry } = &**error else {
        return None;
    };
    oci::is_loopback_registry(registry).then(|| {
        format!(
            "{reference}: cannot reach the registry {registry} over HTTPS: it answered in plain HTTP; to speak plain HTTP to this loopback registry, pass --plain-http {registry}"
        )
    })
}

/// `prompt-host pull REF`: the component into the content store, verified; its digests on
/// stdout.
pub async fn pull(reference: &str, args: &RegistryArgs) -> anyhow::Result<()> {
    let reference = parse_reference(reference)?;
    let (settings, cache) = args.settings()?;
    let store = oci::ContentStore::open(&cache)?;
    let registry = Registry::new(settings)?;
    let pulled = registry
        .pull(&reference, None)
        .await
        .map_err(with_the_flag)?;
    let path = store.put(&pulled.component, &pulled.bytes)?;
    println!(
        "{}",
        serde_json::json!({
            "reference": reference.to_string(),
            "manifest": pulled.manifest,
            "component": pulled.component,
            "size": pulled.bytes.len(),
            "path": path,
        })
    );
    Ok(())
}

/// `prompt-host push FILE REF`: a component published as a Wasm OCI artifact.
pub async fn push(
    file: &Path,
    reference: &str,
    args: &RegistryArgs,
    project: Option<&Path>,
    extra: &[String],
) -> anyhow::Result<()> {
    let reference = parse_reference(reference)?;
    if reference.tag().is_none() || reference.digest().is_some() {
        anyhow::bail!("{reference}: push to a tag (…:1.0); the registry gives the digest");
    }
    let (settings, _) = args.settings()?;
    let bytes = prompt_host::fsutil::read_regular(file, settings.max_bytes)
        .with_context(|| format!("cannot read the component {}", file.display()))?;
    if !wasmparser_is_component(&bytes) {
        anyhow::bail!(
            "{} is not a WebAssembly component (a plugin is a component: cargo build --target wasm32-wasip2, jco componentize or componentize-py)",
            file.display()
        );
    }
    let mut annotations = project_annotations(
        project
            .map(Path::to_path_buf)
            .or_else(|| find_project(file)),
    );
    for pair in extra {
        let (key, value) = pair
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| anyhow::anyhow!("--annotation: expected KEY=VALUE, got \"{pair}\""))?;
        annotations.insert(key.to_string(), value.to_string());
    }
    let title = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plugin.wasm".into());
    let registry = Registry::new(settings)?;
    let pushed = registry
        .push(&reference, &bytes, &title, &annotations)
        .await
        .map_err(with_the_flag)?;
    println!(
        "{}",
        serde_json::json!({
            "reference": reference.to_string(),
            "manifest": pushed.manifest,
            "component": pushed.component,
            "size": pushed.size,
            "pinned": format!("oci://{}/{}@{}", reference.registry(), reference.repository(), pushed.manifest),
            "annotations": annotations,
        })
    );
    Ok(())
}

/// `prompt-host lock`: check (or with `update`, rewrite) the lock of host.toml.
pub async fn lock(config_path: &Path, update: bool) -> anyhow::Result<()> {
    let mut config = HostConfig::load(config_path)?;
    let lock_path = oci::lock_path_for(config_path);
    if update {
        let cache = cache_dir(&config);
        let resolutions = config.prepare_oci(LockMode::Update, &cache).await?;
        for r in &resolutions {
            let what = match (&r.was, r.added) {
                (_, true) => "added".to_string(),
                (Some(was), _) => format!("moved from {was}"),
                (None, false) => "unchanged".to_string(),
            };
            println!("{}  {}  {what}", r.reference, r.manifest);
        }
        println!(
            "{}: {} reference(s) locked",
            lock_path.display(),
            resolutions.len()
        );
        return Ok(());
    }
    let resolutions: Vec<Resolution> = config.check_oci_lock().await?;
    let mut stale = 0;
    for r in &resolutions {
        let what = match (&r.was, r.added) {
            (_, true) => {
                stale += 1;
                "not locked yet".to_string()
            }
            (Some(was), _) => {
                stale += 1;
                format!("MOVED: the lock has {was}")
            }
            (None, false) => "locked".to_string(),
        };
        println!("{}  {}  {what}", r.reference, r.manifest);
    }
    if stale > 0 {
        anyhow::bail!(
            "{}: {stale} reference(s) differ from the registry; the deployment keeps running the locked bytes until `prompt-host lock --update --config {}`",
            lock_path.display(),
            config_path.display()
        );
    }
    Ok(())
}

/// Fetch what the `oci://` plugins of `config` need into the content store under `cache`
/// (the lock beside it read and, for a new reference, written), on a thread of its own so
/// it runs inside or outside a runtime.
pub fn prepare_blocking(config: &mut HostConfig, cache: &Path) -> anyhow::Result<()> {
    if config.plugins.iter().all(|p| p.oci.is_none()) {
        return Ok(());
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("cannot start the runtime that fetches oci:// plugins")?;
                runtime
                    .block_on(config.prepare_oci(LockMode::Use, cache))
                    .map(|_| ())
                    .map_err(anyhow::Error::from)
            })
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("fetching the oci:// plugins panicked")))
    })
}

fn wasmparser_is_component(bytes: &[u8]) -> bool {
    // The component-model preamble: magic, then version 0x0d and layer 1.
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[4..8] == [0x0d, 0x00, 0x01, 0x00]
}

/// The nearest Cargo.toml (with a `[package]`) or package.json above `file`.
fn find_project(file: &Path) -> Option<PathBuf> {
    let absolute = std::fs::canonicalize(file).ok()?;
    let mut dir = absolute.parent();
    for _ in 0..8 {
        let here = dir?;
        for manifest in ["Cargo.toml", "package.json"] {
            let path = here.join(manifest);
            if path.is_file() && !project_fields(&path).is_empty() {
                return Some(path);
            }
        }
        dir = here.parent();
    }
    None
}

/// The OCI annotations of a plugin's project manifest (`--project`, else found above the
/// file): title, version, description and source.
fn project_annotations(manifest: Option<PathBuf>) -> BTreeMap<String, String> {
    let Some(mut path) = manifest else {
        return BTreeMap::new();
    };
    if path.is_dir() {
        path = ["Cargo.toml", "package.json"]
            .iter()
            .map(|m| path.join(m))
            .find(|p| p.is_file())
            .unwrap_or(path);
    }
    project_fields(&path)
        .into_iter()
        .map(|(k, v)| (format!("org.opencontainers.image.{k}"), v))
        .collect()
}

fn project_fields(path: &Path) -> BTreeMap<&'static str, String> {
    let mut fields = BTreeMap::new();
    let Ok(text) = prompt_host::fsutil::read_regular_to_string(path, 1 << 20) else {
        return fields;
    };
    let get = |value: Option<&str>| value.filter(|v| !v.is_empty()).map(str::to_string);
    let found: [(&'static str, Option<String>); 4] =
        if path.extension().is_some_and(|e| e == "json") {
            let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
                return fields;
            };
            let repository = json
                .get("repository")
                .and_then(|r| r.as_str().or_else(|| r.get("url")?.as_str()));
            [
                ("title", get(json.get("name").and_then(|v| v.as_str()))),
                ("version", get(json.get("version").and_then(|v| v.as_str()))),
                (
                    "description",
                    get(json.get("description").and_then(|v| v.as_str())),
                ),
                ("source", get(repository)),
            ]
        } else {
            let Ok(toml) = text.parse::<toml::Table>() else {
                return fields;
            };
            let Some(package) = toml.get("package").and_then(|p| p.as_table()) else {
                return fields;
            };
            let field = |k: &str| get(package.get(k).and_then(|v| v.as_str()));
            [
                ("title", field("name")),
                ("version", field("version")),
                ("description", field("description")),
                ("source", field("repository")),
            ]
        };
    for (key, value) in found {
        if let Some(value) = value {
            fields.insert(key, value);
        }
    }
    fields
}
