//! The `[sessions]` table: where the deployment's sessions live, so that every entry point
//! (the command line, `serve`, the clients) names a session by its id alone.

use std::path::Path;

use crate::session::{redact, StoreName};
use serde::Deserialize;

/// The `[sessions]` table, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawSessions {
    store: Option<String>,
    max_request_tokens: Option<usize>,
}

/// The `[sessions]` table, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionsConfig {
    /// The store a bare session name is an id in: `sqlite:PATH` (relative to the file) or
    /// `postgres://USER@HOST/DB`. `None`: a bare name is a log file's path.
    pub store: Option<StoreName>,
    /// The most tokens a step's request may count, as its route sends it (system prompt,
    /// tools, messages), with `[prompt] tokenizer`; a step over it fails with kind
    /// `token-budget` and writes nothing, naming the oldest range a compaction could replace.
    pub max_request_tokens: Option<usize>,
}

impl SessionsConfig {
    /// With `store` as the configured store (what `--store` and `PROMPT_HOST_STORE` set over
    /// host.toml's).
    pub fn with_store(mut self, store: Option<StoreName>) -> Self {
        self.store = store;
        self
    }
}

impl RawSessions {
    /// Check the store's name; a SQLite database's path is resolved against `base` (the
    /// file's directory), as every path in host.toml is.
    pub(super) fn check(self, base: &Path) -> Result<SessionsConfig, (String, String)> {
        if self.max_request_tokens == Some(0) {
            return Err((
                "sessions.max_request_tokens".to_string(),
                "must be at least 1".to_string(),
            ));
        }
        let Some(text) = self.store else {
            return Ok(SessionsConfig {
                store: None,
                max_request_tokens: self.max_request_tokens,
            });
        };
        let store = StoreName::parse(&text).map_err(|_| {
            (
                "sessions.store".to_string(),
                format!(
                    "expected sqlite:PATH or postgres://USER@HOST/DB (a store of many sessions, without #ID), got {:?}",
                    redact(&text)
                ),
            )
        })?;
        Ok(SessionsConfig {
            store: Some(match store {
                StoreName::Sqlite(db) => StoreName::Sqlite(base.join(db)),
                other => other,
            }),
            max_request_tokens: self.max_request_tokens,
        })
    }
}
