//! `--store` / `PROMPT_HOST_STORE`: the store a bare session name is an id in, for every
//! command of this process. It overrides host.toml's `[sessions] store` where a command
//! loads one, and is the only store of the commands that load none (`assistant`,
//! `tool-result`, `replay`, `sessions`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Context;
use prompt_host::session::{resolve_session, StoreName};

static STORE: OnceLock<Option<StoreName>> = OnceLock::new();

/// Record the process's `--store` (checked: `sqlite:PATH` or `postgres://USER@HOST/DB`).
pub fn set(store: Option<&str>) -> anyhow::Result<()> {
    let parsed = match store {
        None => None,
        Some(text) => Some(StoreName::parse(text).context("--store (or PROMPT_HOST_STORE)")?),
    };
    // Set once, at start; a second call (tests driving `run` twice) keeps the first.
    let _ = STORE.set(parsed);
    Ok(())
}

/// Record `PROMPT_HOST_STORE` when no `--store` was (an embedder that builds a server
/// without the command line, such as the in-process Python host).
pub fn set_from_env() -> anyhow::Result<()> {
    if STORE.get().is_some() {
        return Ok(());
    }
    set(std::env::var("PROMPT_HOST_STORE").ok().as_deref())
}

/// The store `--store` names, if any.
pub fn flag() -> Option<&'static StoreName> {
    STORE.get().and_then(Option::as_ref)
}

/// The full name of the session `name` for a command that loads no host.toml: an id within
/// `--store`'s store, or without one, the name itself.
pub fn resolve(name: &Path) -> anyhow::Result<PathBuf> {
    Ok(resolve_session(flag(), name)?)
}

/// The store a `sessions` command operates: the one named, else `--store`'s.
pub fn store_or_flag(named: Option<&str>) -> anyhow::Result<StoreName> {
    match (named, flag()) {
        (Some(text), _) => Ok(StoreName::parse(text)?),
        (None, Some(store)) => Ok(store.clone()),
        (None, None) => Err(super::Usage(
            "name the store (sqlite:PATH or postgres://USER@HOST/DB), or set --store or PROMPT_HOST_STORE".into(),
        )
        .into()),
    }
}
