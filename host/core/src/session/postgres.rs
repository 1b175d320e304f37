//! The PostgreSQL store: the sessions of many replicas in one database, each event one row
//! of `prompt_host_events` keyed by `(session, seq)`.
//!
//! The sessions of one database share a pool of connections, driven by a runtime of the
//! store's own (one thread), so that a session is used the same way from plain threads and
//! from inside any tokio runtime: the caller waits for the answer as it waits for a file's
//! `fsync`. Every operation is bounded by [`OPERATION_TIMEOUT`] (30 s;
//! `PROMPT_HOST_STORE_TIMEOUT_MS` sets another), connecting included: a server that stalls
//! fails the step, it never hangs it.
//!
//! One writer per session: an append takes the session's transaction-scoped advisory lock,
//! reads the session's next seq and writes only when it is the one its writer last saw; the
//! primary key backs it up. The schema is versioned (`prompt_host_schema`) and brought up to
//! date when a database is first used, under a session-scoped advisory lock so that replicas
//! starting together migrate once. A database whose schema is newer is refused.
//!
//! Credentials: the URL's password, else `PGPASSWORD`; a name is shown without either.

use std::collections::HashMap;
use std::future::Future;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use deadpool_postgres::{Manager, Pool, Runtime};
use tokio_postgres::types::ToSql;

use super::store::{check_rows, Rows, RowsError};

/// The longest an operation on the database may take, connecting included, unless
/// `PROMPT_HOST_STORE_TIMEOUT_MS` says otherwise.
pub(crate) const OPERATION_TIMEOUT: Duration = Duration::from_secs(30);

/// [`OPERATION_TIMEOUT`], or `PROMPT_HOST_STORE_TIMEOUT_MS` when it is a positive number.
fn operation_timeout() -> Duration {
    static TIMEOUT: OnceLock<Duration> = OnceLock::new();
    *TIMEOUT.get_or_init(|| {
        std::env::var("PROMPT_HOST_STORE_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map_or(OPERATION_TIMEOUT, Duration::from_millis)
    })
}

/// The connections one process keeps to one database.
const POOL_SIZE: usize = 8;

/// The schema version this build writes.
pub(crate) const SCHEMA_VERSION: i32 = 1;

/// The advisory lock key replicas take while migrating ("PHss").
const MIGRATION_LOCK: i64 = 0x5048_7373;

/// Why an operation on the database failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PgError {
    /// The URL is not one tokio-postgres reads (its text is not repeated: it may hold a
    /// password).
    #[error("the connection URL is invalid")]
    Url,
    /// PostgreSQL refused or failed, or the connection did.
    #[error("{0}")]
    Db(String),
    /// The operation took longer than [`operation_timeout`].
    #[error("the database did not answer within {} ms", operation_timeout().as_millis())]
    Timeout,
    /// The database was written by a newer prompt-host.
    #[error(
        "the database's schema is version {found}; this prompt-host reads version {SCHEMA_VERSION}"
    )]
    NewerSchema { found: i32 },
    /// The rows are not a piece of a log.
    #[error(transparent)]
    Rows(#[from] RowsError),
}

impl From<tokio_postgres::Error> for PgError {
    fn from(e: tokio_postgres::Error) -> Self {
        // The database's own message when it sent one; tokio-postgres's text otherwise.
        // Neither carries the password.
        match e.as_db_error() {
            Some(db) => Self::Db(format!("{}: {}", db.severity(), db.message())),
            None => Self::Db(e.to_string()),
        }
    }
}

/// What an append found instead of writing.
#[derive(Debug)]
pub(crate) enum AppendFailure {
    /// Another writer appended first: the session's next seq is `actual`.
    Conflict { actual: u64 },
    /// The database failed; the transaction was rolled back.
    Store(PgError),
}

/// One database: its pool, and the runtime that drives it.
struct PgStore {
    pool: Pool,
}

/// The runtime every store's connections run on: one thread, started on first use.
fn runtime() -> Result<&'static tokio::runtime::Runtime, PgError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("prompt-host-postgres")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| PgError::Db(format!("cannot start the store's runtime: {e}")))
}

/// Run `work` on the store's runtime, bounded by [`OPERATION_TIMEOUT`], and wait for it here
/// (from a plain thread or from inside another runtime alike).
fn run<T: Send + 'static>(
    work: impl Future<Output = Result<T, PgError>> + Send + 'static,
) -> Result<T, PgError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let outcome = match tokio::time::timeout(operation_timeout(), work).await {
            Ok(outcome) => outcome,
            Err(_) => Err(PgError::Timeout),
        };
        let _ = tx.send(outcome);
    });
    rx.recv()
        .unwrap_or_else(|_| Err(PgError::Db("the store's runtime stopped".into())))
}

/// The store of the database at `url`, created (and its schema migrated) on first use.
fn store(url: &str) -> Result<Arc<PgStore>, PgError> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<PgStore>>>> = OnceLock::new();
    let stores = STORES.get_or_init(Mutex::default);
    if let Some(found) = stores.lock().map_err(|_| poisoned())?.get(url) {
        return Ok(Arc::clone(found));
    }
    let mut config = tokio_postgres::Config::from_str(url).map_err(|_| PgError::Url)?;
    if config.get_password().is_none() {
        if let Ok(password) = std::env::var("PGPASSWORD") {
            config.password(password);
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(operation_timeout());
    }
    config.application_name("prompt-host");
    let tls = tokio_postgres_rustls::MakeRustlsConnect::new(tls_config()?);
    let manager = Manager::new(config, tls);
    // The pool's timers run on the store's runtime, where it is used.
    let pool = {
        let _entered = runtime()?.enter();
        Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(operation_timeout()))
            .create_timeout(Some(operation_timeout()))
            .recycle_timeout(Some(operation_timeout()))
            .build()
            .map_err(|e| PgError::Db(e.to_string()))?
    };
    let store = Arc::new(PgStore { pool });
    migrate(&store)?;
    let mut stores = stores.lock().map_err(|_| poisoned())?;
    Ok(Arc::clone(stores.entry(url.to_owned()).or_insert(store)))
}

fn poisoned() -> PgError {
    PgError::Db("the store table is poisoned".into())
}

fn tls_config() -> Result<rustls::ClientConfig, PgError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_platform_verifier())
        .map(|b| b.with_no_client_auth())
        .map_err(|e| PgError::Db(format!("TLS: {e}")))
}

/// Bring the schema to [`SCHEMA_VERSION`] under the migration lock.
fn migrate(store: &PgStore) -> Result<i32, PgError> {
    let pool = store.pool.clone();
    run(async move {
        let client = pool.get().await.map_err(pool_error)?;
        client
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        let migrated = migrate_locked(&client).await;
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .await?;
        migrated
    })
}

async fn migrate_locked(client: &tokio_postgres::Client) -> Result<i32, PgError> {
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS prompt_host_schema (version integer NOT NULL)")
        .await?;
    let found: Option<i32> = match client
        .query_opt("SELECT max(version) FROM prompt_host_schema", &[])
        .await?
    {
        // try_get: a table someone else altered is an error, not a panic.
        Some(row) => row.try_get(0)?,
        None => None,
    };
    match found {
        Some(v) if v > SCHEMA_VERSION => Err(PgError::NewerSchema { found: v }),
        Some(v) => Ok(v),
        None => {
            client
                .batch_execute(
                    "CREATE TABLE IF NOT EXISTS prompt_host_events (
                         session text NOT NULL,
                         seq bigint NOT NULL CHECK (seq >= 0),
                         line bytea NOT NULL,
                         PRIMARY KEY (session, seq)
                     );
                     INSERT INTO prompt_host_schema (version) VALUES (1);",
                )
                .await?;
            // Versions after 1 add their steps here, each from the version before it.
            Ok(SCHEMA_VERSION)
        }
    }
}

fn pool_error(e: deadpool_postgres::PoolError) -> PgError {
    match e {
        deadpool_postgres::PoolError::Backend(e) => e.into(),
        deadpool_postgres::PoolError::Timeout(_) => PgError::Timeout,
        other => PgError::Db(other.to_string()),
    }
}

/// One session of a PostgreSQL database.
pub(crate) struct PgLog {
    store: Arc<PgStore>,
    id: String,
}

impl std::fmt::Debug for PgLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLog").field("id", &self.id).finish()
    }
}

impl PgLog {
    /// Open session `id` of the database at `url` and read its rows.
    pub(crate) fn open(url: &str, id: &str) -> Result<(Self, Rows), PgError> {
        let log = Self {
            store: store(url)?,
            id: id.to_owned(),
        };
        let rows = log.rows_from(0)?;
        Ok((log, rows))
    }

    /// The session's rows from seq `from` on, checked to be contiguous.
    pub(crate) fn rows_from(&self, from: u64) -> Result<Rows, PgError> {
        let (pool, id) = (self.store.pool.clone(), self.id.clone());
        let start = i64::try_from(from).unwrap_or(i64::MAX);
        let rows = run(async move {
            let client = pool.get().await.map_err(pool_error)?;
            let rows = client
                .query(
                    "SELECT seq, line FROM prompt_host_events WHERE session = $1 AND seq >= $2 ORDER BY seq",
                    &[&id, &start],
                )
                .await?;
            // try_get: a column of another type (a table altered by someone else) is an
            // error, not a panic.
            rows.iter()
                .map(|row| Ok((row.try_get::<_, i64>(0)?, row.try_get::<_, Vec<u8>>(1)?)))
                .collect::<Result<Vec<_>, PgError>>()
        })?;
        Ok(check_rows(from, rows)?)
    }

    /// Append `lines` (the first at `first_seq`) in one transaction, only if the session's
    /// next seq is still `first_seq`.
    pub(crate) fn append(&self, first_seq: u64, lines: &[&[u8]]) -> Result<(), AppendFailure> {
        let (pool, id) = (self.store.pool.clone(), self.id.clone());
        let lines: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
        let first = i64::try_from(first_seq)
            .map_err(|_| AppendFailure::Store(PgError::Db("seq out of range".into())))?;
        let outcome = run(async move {
            let mut client = pool.get().await.map_err(pool_error)?;
            let tx = client.transaction().await?;
            // Writers of one session queue here; other sessions are not held up.
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                &[&id],
            )
            .await?;
            let next: i64 = tx
                .query_one(
                    "SELECT COALESCE(max(seq) + 1, 0) FROM prompt_host_events WHERE session = $1",
                    &[&id],
                )
                .await?
                .try_get(0)?;
            if next != first {
                return Ok(Some(next));
            }
            let seqs: Vec<i64> = (0..lines.len() as i64).map(|i| first + i).collect();
            let params: [&(dyn ToSql + Sync); 3] = [&id, &seqs, &lines];
            tx.execute(
                "INSERT INTO prompt_host_events (session, seq, line)
                 SELECT $1, s, l FROM unnest($2::bigint[], $3::bytea[]) AS t(s, l)",
                &params,
            )
            .await?;
            tx.commit().await?;
            Ok(None)
        });
        match outcome {
            Ok(None) => Ok(()),
            Ok(Some(next)) => Err(AppendFailure::Conflict {
                actual: u64::try_from(next).unwrap_or(0),
            }),
            Err(e) => Err(AppendFailure::Store(e)),
        }
    }
}

/// Every session of the database: its id, its number of events, the time of its last
/// event.
pub(crate) fn list(url: &str) -> Result<Vec<(String, u64, Option<u64>)>, PgError> {
    let pool = store(url)?.pool.clone();
    let rows = run(async move {
        let client = pool.get().await.map_err(pool_error)?;
        client
            .query(
                "SELECT e.session, m.n, e.line FROM prompt_host_events e
                 JOIN (SELECT session, max(seq) AS last, count(*) AS n
                       FROM prompt_host_events GROUP BY session) m
                   ON e.session = m.session AND e.seq = m.last
                 ORDER BY e.session",
                &[],
            )
            .await?
            .iter()
            .map(|row| {
                Ok((
                    row.try_get::<_, String>(0)?,
                    row.try_get::<_, i64>(1)?,
                    row.try_get::<_, Vec<u8>>(2)?,
                ))
            })
            .collect::<Result<Vec<_>, PgError>>()
    })?;
    Ok(rows
        .into_iter()
        .map(|(id, n, line)| {
            let time = serde_json::from_slice::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| v.get("time").and_then(serde_json::Value::as_u64));
            (id, u64::try_from(n).unwrap_or(0), time)
        })
        .collect())
}

/// Delete session `id` whole; how many events it held.
pub(crate) fn delete(url: &str, id: &str) -> Result<u64, PgError> {
    let pool = store(url)?.pool.clone();
    let id = id.to_owned();
    run(async move {
        let client = pool.get().await.map_err(pool_error)?;
        Ok(client
            .execute("DELETE FROM prompt_host_events WHERE session = $1", &[&id])
            .await?)
    })
}

/// Bring the database's schema up to date; the version it is at.
pub(crate) fn migrate_db(url: &str) -> Result<i64, PgError> {
    let store = store(url)?;
    migrate(&store).map(i64::from)
}
