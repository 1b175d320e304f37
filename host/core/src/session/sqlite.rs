//! The SQLite store: many sessions in one database file, each event one row keyed by
//! `(session, seq)`, safe across processes on one machine.
//!
//! Durability: the database runs in WAL mode with `synchronous=FULL`, so a transaction that
//! committed is on disk and readable by every other connection. One writer per session is
//! the store's, not the process's: an append runs in a `BEGIN IMMEDIATE` transaction (the
//! database's write lock, waited for up to [`BUSY_TIMEOUT`]) that first reads the session's
//! next seq and writes only when it is the one its writer expects — else nothing is written
//! and the writer learns the seq it missed. The primary key `(session, seq)` backs this up:
//! two rows can never share a seq, whoever writes them.
//!
//! The rows hold the same JSON lines as a log file (without newlines), so exporting a session
//! is concatenating them, and opening one validates each row by the log's own rules.

use std::path::Path;
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};

use super::store::{check_rows, Rows, RowsError};

/// How long an append or an open waits for another connection's write transaction.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema version this build writes (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 1;

/// The application id a prompt-host store carries in its header (`PRAGMA application_id`,
/// "PHss"): a database without it that holds anything is someone else's.
pub(crate) const APPLICATION_ID: i64 = 0x5048_7373;

/// One session of a SQLite database, open for reads and conditional appends.
#[derive(Debug)]
pub(crate) struct SqliteLog {
    conn: Connection,
    id: String,
}

/// Why an operation on the database failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SqliteError {
    /// SQLite refused or failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// The database was written by a newer prompt-host.
    #[error(
        "the database's schema is version {found}; this prompt-host reads version {SCHEMA_VERSION}"
    )]
    NewerSchema { found: i64 },
    /// The rows are not a piece of a log.
    #[error(transparent)]
    Rows(#[from] RowsError),
    /// The database belongs to another program (it has tables, or another application id,
    /// and is not marked as a prompt-host store): it is left untouched.
    #[error("the database is not a prompt-host session store (it holds other tables or another application's id); refusing to modify it")]
    Foreign,
    /// The path is not a regular file (a FIFO, a device, a directory…): nothing was opened.
    #[error("{0}")]
    NotAFile(String),
    /// A store that is only read does not exist.
    #[error("the database does not exist")]
    Missing,
}

/// What an append found instead of writing.
#[derive(Debug)]
pub(crate) enum AppendFailure {
    /// Another writer appended first: the session's next seq is `actual`.
    Conflict { actual: u64 },
    /// The database failed; the transaction was rolled back.
    Store(SqliteError),
}

impl SqliteLog {
    /// Open (creating when missing) the database at `db`, and read session `id`'s rows in
    /// seq order.
    pub(crate) fn open(db: &Path, id: &str) -> Result<(Self, Rows), SqliteError> {
        let conn = open_db(db, true)?;
        let rows = read_rows(&conn, id, 0)?;
        Ok((
            Self {
                conn,
                id: id.to_owned(),
            },
            rows,
        ))
    }

    /// The session's rows from seq `from` on: what other writers appended since this one
    /// read up to `from`.
    pub(crate) fn rows_from(&self, from: u64) -> Result<Rows, SqliteError> {
        read_rows(&self.conn, &self.id, from)
    }

    /// Append `lines` (each an event's line without its newline, the first at `first_seq`)
    /// in one transaction, only if the session's next seq is still `first_seq`.
    pub(crate) fn append(&mut self, first_seq: u64, lines: &[&[u8]]) -> Result<(), AppendFailure> {
        let store = |e: rusqlite::Error| AppendFailure::Store(SqliteError::Sqlite(e));
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(store)?;
        let next: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE session = ?1",
                params![self.id],
                |row| row.get(0),
            )
            .map_err(store)?;
        let next = u64::try_from(next).unwrap_or(0);
        if next != first_seq {
            // Dropping the transaction rolls it back: nothing was written.
            return Err(AppendFailure::Conflict { actual: next });
        }
        {
            let mut insert = tx
                .prepare("INSERT INTO events (session, seq, line) VALUES (?1, ?2, ?3)")
                .map_err(store)?;
            for (i, line) in lines.iter().enumerate() {
                let seq = first_seq + i as u64;
                let seq = i64::try_from(seq).map_err(|_| {
                    store(rusqlite::Error::ToSqlConversionFailure(
                        format!("seq {seq} is out of range").into(),
                    ))
                })?;
                insert.execute(params![self.id, seq, line]).map_err(store)?;
            }
        }
        tx.commit().map_err(store)
    }
}

/// Bring the database's schema to [`SCHEMA_VERSION`], in one write transaction so that two
/// processes creating it at once do not both try. A database that is not a prompt-host
/// store — another application's id, or any table in a database without ours — is refused
/// before anything is written to it.
fn migrate(conn: &mut Connection) -> Result<(), SqliteError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let application: i64 = tx.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if application != APPLICATION_ID {
        let objects: i64 =
            tx.query_row("SELECT COUNT(*) FROM sqlite_schema", [], |row| row.get(0))?;
        if application != 0 || version != 0 || objects != 0 {
            return Err(SqliteError::Foreign);
        }
        // A new database. WITHOUT ROWID: the rows are stored in (session, seq) order, so a
        // session's log is one range scan.
        tx.execute_batch(&format!(
            "CREATE TABLE events (
                 session TEXT NOT NULL,
                 seq INTEGER NOT NULL CHECK (seq >= 0),
                 line BLOB NOT NULL,
                 PRIMARY KEY (session, seq)
             ) WITHOUT ROWID;
             PRAGMA application_id = {APPLICATION_ID};
             PRAGMA user_version = {SCHEMA_VERSION};"
        ))?;
    } else if version > SCHEMA_VERSION {
        return Err(SqliteError::NewerSchema { found: version });
    }
    // Versions after 1 add their steps here, each from the version before it.
    tx.commit()?;
    Ok(())
}

/// Session `id`'s rows in seq order from seq `from`, checked to be contiguous.
fn read_rows(conn: &Connection, id: &str, from: u64) -> Result<Rows, SqliteError> {
    let mut stmt =
        conn.prepare("SELECT seq, line FROM events WHERE session = ?1 AND seq >= ?2 ORDER BY seq")?;
    let from_sql = i64::try_from(from).unwrap_or(i64::MAX);
    let mut rows = stmt.query(params![id, from_sql])?;
    let mut read = Vec::new();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        // A row written as text by someone else reads as its bytes.
        let line: Vec<u8> = match row.get_ref(1)? {
            rusqlite::types::ValueRef::Blob(b) | rusqlite::types::ValueRef::Text(b) => b.to_vec(),
            other => {
                return Err(SqliteError::Sqlite(rusqlite::Error::InvalidColumnType(
                    1,
                    "line".into(),
                    other.data_type(),
                )))
            }
        };
        read.push((seq, line));
    }
    Ok(check_rows(from, read)?)
}

/// Open the database at `db` (created when missing if `create`), its schema brought up to
/// date, in WAL mode with `synchronous=FULL`.
fn open_db(db: &Path, create: bool) -> Result<Connection, SqliteError> {
    // Only a regular file (or nothing, to create) is handed to SQLite: it would open a FIFO
    // and block reading it, or write to a device. The check opens without blocking; SQLite
    // then opens the path with NOFOLLOW, so a symbolic link (one swapped in since the check
    // included) is refused.
    match crate::fsutil::open_regular(db, std::fs::OpenOptions::new().read(true)) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !create {
                return Err(SqliteError::Missing);
            }
        }
        Err(e) => return Err(SqliteError::NotAFile(e.to_string())),
    }
    // No URI parsing: the path is a file name, whatever characters it holds.
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    // And should the path change after the check, SQLite's own opens do not block.
    super::sqlite_open::install();
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let mut conn = Connection::open_with_flags(db, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Judged (and a new one created) before the journal mode changes its header.
    migrate(&mut conn)?;
    // WAL: readers never block the writer; FULL: a commit is synced before it returns.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    // A session's connection reads its rows once and then only appends: SQLite's default
    // page cache (2 MB per connection) would be most of what an idle session costs a server
    // that holds many (docs/benchmarks.md §16).
    conn.pragma_update(None, "cache_size", CACHE_KIB)?;
    Ok(conn)
}

/// Each connection's page cache, in KiB as `PRAGMA cache_size` takes it (negative).
const CACHE_KIB: i64 = -64;

/// Session `id`'s rows, read from an existing database (nothing is created).
pub(crate) fn read(db: &Path, id: &str) -> Result<Rows, SqliteError> {
    let conn = open_db(db, false)?;
    read_rows(&conn, id, 0)
}

/// Every session of the database: its id, its number of events, and the time of its last
/// event (as the event's line says; `None` when the line does not say).
pub(crate) fn list(db: &Path) -> Result<Vec<(String, u64, Option<u64>)>, SqliteError> {
    let conn = open_db(db, false)?;
    let mut stmt = conn.prepare(
        "SELECT e.session, m.n, e.line FROM events e
         JOIN (SELECT session, MAX(seq) AS last, COUNT(*) AS n FROM events GROUP BY session) m
           ON e.session = m.session AND e.seq = m.last
         ORDER BY e.session",
    )?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let n: i64 = row.get(1)?;
        let time = match row.get_ref(2)? {
            rusqlite::types::ValueRef::Blob(b) | rusqlite::types::ValueRef::Text(b) => {
                serde_json::from_slice::<serde_json::Value>(b)
                    .ok()
                    .and_then(|v| v.get("time").and_then(serde_json::Value::as_u64))
            }
            _ => None,
        };
        out.push((id, u64::try_from(n).unwrap_or(0), time));
    }
    Ok(out)
}

/// Delete session `id` whole, in one transaction; how many events it held.
pub(crate) fn delete(db: &Path, id: &str) -> Result<u64, SqliteError> {
    let mut conn = open_db(db, false)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let n = tx.execute("DELETE FROM events WHERE session = ?1", params![id])?;
    tx.commit()?;
    Ok(n as u64)
}

/// Bring the database's schema up to date; the version it is at.
pub(crate) fn migrate_db(db: &Path) -> Result<i64, SqliteError> {
    let conn = open_db(db, true)?;
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}
