//! Operating a store of many sessions (`prompt-host sessions`): listing its sessions,
//! deleting one, bringing its schema up to date. Copying, exporting and importing go through
//! [`super::Session`] itself ([`super::Session::import_events`]), so that every event is
//! validated on the way in.

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

use super::store::{redact, POSTGRES_SCHEMES, SQLITE_SCHEME};

/// A store of many sessions, as `prompt-host sessions` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreName {
    /// The SQLite database at this path: `sqlite:PATH`.
    Sqlite(PathBuf),
    /// The PostgreSQL database at this connection URL: `postgres://USER@HOST/DB`.
    Postgres(String),
}

impl StoreName {
    /// Parse `sqlite:PATH` or `postgres://…`.
    pub fn parse(name: &str) -> Result<Self, StoreError> {
        if POSTGRES_SCHEMES.iter().any(|s| name.starts_with(s)) && !name.contains('#') {
            return Ok(Self::Postgres(name.to_owned()));
        }
        match name.strip_prefix(SQLITE_SCHEME) {
            Some(path) if !path.is_empty() && !path.contains('#') => {
                Ok(Self::Sqlite(PathBuf::from(path)))
            }
            _ => Err(StoreError::NotAStore {
                store: redact(name),
            }),
        }
    }
}

impl fmt::Display for StoreName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => write!(f, "{SQLITE_SCHEME}{}", path.display()),
            Self::Postgres(url) => write!(f, "{}", redact(url)),
        }
    }
}

/// One session of a store's listing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredSession {
    /// The session's id within the store.
    pub id: String,
    /// How many events it holds.
    pub events: u64,
    /// When its last event was appended (epoch milliseconds), when that event says.
    pub last_time: Option<u64>,
}

/// Why an operation on a store failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The name is not one of a store of many sessions.
    #[error("{store:?} is not a store of sessions; a store is named sqlite:PATH or postgres://USER@HOST/DB (a log file holds one session: name it alone)")]
    NotAStore {
        /// The name given.
        store: String,
    },
    /// The store is of a kind this build was compiled without.
    #[error("store {store}: this build of prompt-host has no {kind} store (it was built without the `{feature}` feature)")]
    NoStore {
        /// The store.
        store: String,
        /// Its kind.
        kind: &'static str,
        /// The cargo feature that brings it.
        feature: &'static str,
    },
    /// The store failed.
    #[error("store {store}: {error}")]
    Failed {
        /// The store.
        store: String,
        /// What failed.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Every session of `store`, by id.
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    allow(unreachable_code, unused_variables)
)]
pub fn list_sessions(store: &StoreName) -> Result<Vec<StoredSession>, StoreError> {
    let listed: Vec<(String, u64, Option<u64>)> = match store {
        #[cfg(feature = "sqlite")]
        StoreName::Sqlite(db) => super::sqlite::list(db).map_err(|e| failed(store, e))?,
        #[cfg(feature = "postgres")]
        StoreName::Postgres(url) => super::postgres::list(url).map_err(|e| failed(store, e))?,
        #[allow(unreachable_patterns)]
        _ => return Err(missing(store)),
    };
    Ok(listed
        .into_iter()
        .map(|(id, events, last_time)| StoredSession {
            id,
            events,
            last_time,
        })
        .collect())
}

/// Delete session `id` of `store` whole; how many events it held (0: there was none).
pub fn delete_session(store: &StoreName, id: &str) -> Result<u64, StoreError> {
    match store {
        #[cfg(feature = "sqlite")]
        StoreName::Sqlite(db) => super::sqlite::delete(db, id).map_err(|e| failed(store, e)),
        #[cfg(feature = "postgres")]
        StoreName::Postgres(url) => super::postgres::delete(url, id).map_err(|e| failed(store, e)),
        #[allow(unreachable_patterns)]
        _ => {
            let _ = id;
            Err(missing(store))
        }
    }
}

/// Bring `store`'s schema up to date (creating the store when missing); its version.
pub fn migrate_store(store: &StoreName) -> Result<i64, StoreError> {
    match store {
        #[cfg(feature = "sqlite")]
        StoreName::Sqlite(db) => super::sqlite::migrate_db(db).map_err(|e| failed(store, e)),
        #[cfg(feature = "postgres")]
        StoreName::Postgres(url) => super::postgres::migrate_db(url).map_err(|e| failed(store, e)),
        #[allow(unreachable_patterns)]
        _ => Err(missing(store)),
    }
}

#[allow(dead_code)]
fn failed(store: &StoreName, e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Failed {
        store: store.to_string(),
        error: Box::new(e),
    }
}

#[allow(dead_code)]
fn missing(store: &StoreName) -> StoreError {
    let (kind, feature) = match store {
        StoreName::Sqlite(_) => ("SQLite", "sqlite"),
        StoreName::Postgres(_) => ("PostgreSQL", "postgres"),
    };
    StoreError::NoStore {
        store: store.to_string(),
        kind,
        feature,
    }
}
