//! A session of a store that several writers share (SQLite, PostgreSQL): what [`super::Session`]
//! asks of one, whichever it is — its rows from a seq on, and an append conditional on the
//! next seq. A store this build was compiled without is refused by name, never ignored.

use std::path::PathBuf;

use super::error::OpenError;
use super::store::{Rows, SessionName};

/// A store's error, as a session's errors carry it.
pub(crate) type StoreFailure = Box<dyn std::error::Error + Send + Sync>;

/// One session of a shared store.
#[derive(Debug)]
pub(crate) enum SharedLog {
    #[cfg(feature = "sqlite")]
    Sqlite(super::sqlite::SqliteLog),
    #[cfg(feature = "postgres")]
    Postgres(super::postgres::PgLog),
}

/// What an append found instead of writing.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) enum AppendFailure {
    /// Another writer appended first: the session's next seq is `actual`.
    Conflict { actual: u64 },
    /// The store failed; nothing was written.
    Store(StoreFailure),
}

/// How `name` appears in errors: a path for a file, `sqlite:DB#ID`, or the URL without its
/// password.
pub(crate) fn shown(name: &SessionName) -> PathBuf {
    match name {
        SessionName::File(path) => path.clone(),
        other => PathBuf::from(other.to_string()),
    }
}

#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
fn store_error(name: &SessionName, e: impl Into<StoreFailure>) -> OpenError {
    OpenError::Store {
        path: shown(name),
        error: e.into(),
    }
}

fn missing(name: &SessionName) -> OpenError {
    let (store, feature) = match name {
        SessionName::Postgres { .. } => ("PostgreSQL", "postgres"),
        _ => ("SQLite", "sqlite"),
    };
    OpenError::NoStore {
        path: shown(name),
        store,
        feature,
    }
}

impl SharedLog {
    /// Open the session `name` (not a file), creating its store when missing, and read its
    /// rows.
    pub(crate) fn open(name: &SessionName) -> Result<(Self, Rows), OpenError> {
        match name {
            #[cfg(feature = "sqlite")]
            SessionName::Sqlite { db, id } => super::sqlite::SqliteLog::open(db, id)
                .map(|(log, rows)| (Self::Sqlite(log), rows))
                .map_err(|e| store_error(name, e)),
            #[cfg(feature = "postgres")]
            SessionName::Postgres { url, id } => super::postgres::PgLog::open(url, id)
                .map(|(log, rows)| (Self::Postgres(log), rows))
                .map_err(|e| store_error(name, e)),
            _ => Err(missing(name)),
        }
    }

    /// The rows of the session `name` (not a file) from an existing store: nothing is
    /// created.
    pub(crate) fn read(name: &SessionName) -> Result<Rows, OpenError> {
        match name {
            #[cfg(feature = "sqlite")]
            SessionName::Sqlite { db, id } => {
                super::sqlite::read(db, id).map_err(|e| store_error(name, e))
            }
            #[cfg(feature = "postgres")]
            SessionName::Postgres { .. } => Self::open(name).map(|(_, rows)| rows),
            _ => Err(missing(name)),
        }
    }

    /// The session's rows from seq `from` on.
    pub(crate) fn rows_from(&self, from: u64) -> Result<Rows, StoreFailure> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(log) => log.rows_from(from).map_err(Into::into),
            #[cfg(feature = "postgres")]
            Self::Postgres(log) => log.rows_from(from).map_err(Into::into),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = from;
                Ok(Vec::new())
            }
        }
    }

    /// Append `lines` (the first at `first_seq`) in one transaction, only if the session's
    /// next seq is still `first_seq`.
    pub(crate) fn append(&mut self, first_seq: u64, lines: &[&[u8]]) -> Result<(), AppendFailure> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(log) => log.append(first_seq, lines).map_err(|f| match f {
                super::sqlite::AppendFailure::Conflict { actual } => {
                    AppendFailure::Conflict { actual }
                }
                super::sqlite::AppendFailure::Store(e) => AppendFailure::Store(e.into()),
            }),
            #[cfg(feature = "postgres")]
            Self::Postgres(log) => log.append(first_seq, lines).map_err(|f| match f {
                super::postgres::AppendFailure::Conflict { actual } => {
                    AppendFailure::Conflict { actual }
                }
                super::postgres::AppendFailure::Store(e) => AppendFailure::Store(e.into()),
            }),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = (first_seq, lines);
                Ok(())
            }
        }
    }
}
