//! Operating a store of many sessions (`prompt-host sessions`): listing its sessions,
//! deleting one, bringing its schema up to date. Copying, exporting and importing go through
//! [`super::Session`] itself ([`super::Session::import_events`]), so that every event is
//! validated on the way in.

use std::fmt;
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::store::{check_id, redact, NameError, SessionName, POSTGRES_SCHEMES, SQLITE_SCHEME};

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

/// The prefix that names a log file explicitly where a store is configured.
pub const FILE_SCHEME: &str = "file:";

impl StoreName {
    /// The full name of the session `id` in this store (`sqlite:PATH#ID`,
    /// `postgres://…#ID`), password included: a name to open, not to show.
    pub fn session(&self, id: &str) -> PathBuf {
        match self {
            Self::Sqlite(db) => {
                let mut name = std::ffi::OsString::from(SQLITE_SCHEME);
                name.push(db.as_os_str());
                name.push("#");
                name.push(id);
                PathBuf::from(name)
            }
            Self::Postgres(url) => PathBuf::from(format!("{url}#{id}")),
        }
    }
}

/// The session `name` means where `store` is the configured store (host.toml's
/// `[sessions] store`, `--store`, `PROMPT_HOST_STORE`). Without one, a name is what it always
/// was: `sqlite:PATH#ID`, `postgres://…#ID`, else a log file's path. With one, a full store
/// name still names itself, `file:PATH` names a log file, and anything else is an id within
/// the configured store, checked like every id ([`check_id`]).
pub fn resolve_session(store: Option<&StoreName>, name: &Path) -> Result<PathBuf, NameError> {
    let Some(store) = store else {
        return Ok(name.to_path_buf());
    };
    match SessionName::parse(name)? {
        SessionName::File(_) => {}
        _ => return Ok(name.to_path_buf()),
    }
    let Some(text) = name.to_str() else {
        return Err(NameError::NotUtf8 {
            name: name.to_string_lossy().into_owned(),
        });
    };
    if let Some(path) = text.strip_prefix(FILE_SCHEME) {
        return Ok(PathBuf::from(path));
    }
    check_id(text)?;
    Ok(store.session(text))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_store_turns_a_bare_name_into_an_id_within_it() {
        let sqlite = StoreName::parse("sqlite:/srv/s.db").unwrap();
        let pg = StoreName::parse("postgres://app:secret@db/agents").unwrap();
        let resolve = |store: Option<&StoreName>, name: &str| {
            resolve_session(store, Path::new(name)).map(|p| p.display().to_string())
        };
        // Without a store, nothing changes: a plain name is a file.
        assert_eq!(resolve(None, "chat-1").unwrap(), "chat-1");
        assert_eq!(resolve(None, "file:x").unwrap(), "file:x");
        // With one, a bare name is an id in it; quotes and SQL are just text.
        assert_eq!(
            resolve(Some(&sqlite), "agent 7's '; DROP TABLE events; --").unwrap(),
            "sqlite:/srv/s.db#agent 7's '; DROP TABLE events; --"
        );
        assert_eq!(
            resolve(Some(&pg), "chat-1").unwrap(),
            "postgres://app:secret@db/agents#chat-1"
        );
        // A full name still names itself, and file: names a log file.
        assert_eq!(
            resolve(Some(&pg), "sqlite:/tmp/o.db#x").unwrap(),
            "sqlite:/tmp/o.db#x"
        );
        assert_eq!(
            resolve(Some(&pg), "file:logs/a.jsonl").unwrap(),
            "logs/a.jsonl"
        );
        // Ids are checked as every store checks them.
        assert_eq!(
            resolve(Some(&sqlite), "a\u{0}b").unwrap_err().to_string(),
            "session id \"a\\0b\": holds the control character U+0000; ids are printable text"
        );
        let long = "x".repeat(MAX_ID_FOR_TEST);
        assert_eq!(
            resolve(Some(&sqlite), &long).unwrap_err().to_string(),
            format!(
                "session id \"{}…\": is {MAX_ID_FOR_TEST} bytes long; at most 512 are allowed",
                "x".repeat(64)
            )
        );
    }

    const MAX_ID_FOR_TEST: usize = 1 << 20;

    #[cfg(unix)]
    #[test]
    fn a_name_that_is_not_utf8_is_refused_where_a_store_is_configured() {
        use std::os::unix::ffi::OsStrExt;
        let store = StoreName::parse("sqlite:/srv/s.db").unwrap();
        let name = Path::new(std::ffi::OsStr::from_bytes(b"a\xffb"));
        assert_eq!(
            resolve_session(Some(&store), name).unwrap_err().to_string(),
            "session name \"a\u{FFFD}b\" is not valid UTF-8"
        );
        assert_eq!(resolve_session(None, name).unwrap(), name);
    }
}
