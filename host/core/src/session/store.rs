//! Where a session lives: a log file (a plain path, as ever), or a session of a store that
//! holds many, named by an id within it.
//!
//! A session is named by one string everywhere a path was taken — the command line's
//! `--session`, `serve`'s `session` params, the clients — so every entry point reaches every
//! store the same way:
//!
//! - `sqlite:PATH#ID`: the session `ID` of the SQLite database at `PATH` (created when
//!   missing; `PATH` may not contain `#`, the id may hold any text);
//! - `postgres://USER@HOST:PORT/DB#ID` (or `postgresql://`): the session `ID` of a
//!   PostgreSQL database, for sessions that replicas share; the password comes from the URL
//!   or `PGPASSWORD` and is never shown (names in errors and listings drop it);
//! - anything else: the path of a JSON-lines log file. A file whose name starts with
//!   `sqlite:` is named `./sqlite:…`.
//!
//! Ids are checked here, before any store sees them: not empty, at most [`MAX_SESSION_ID`]
//! bytes, no NUL or other control character (they appear in errors and listings, where a
//! newline or an escape sequence would forge a line). Anything else — quotes, SQL, any
//! Unicode — is stored and read back exactly, as a bound parameter, never as SQL text.

use std::fmt;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// The prefix of a SQLite session name.
pub const SQLITE_SCHEME: &str = "sqlite:";

/// The prefixes of a PostgreSQL session name (libpq's connection URLs).
pub const POSTGRES_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

/// A session's rows in a store: each event's seq and line, in seq order.
pub(crate) type Rows = Vec<(u64, Vec<u8>)>;

/// Why rows a store returned are not a piece of a log.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum RowsError {
    /// A row's seq is not the next one: rows were removed or written by someone else.
    #[error(
        "its rows are not contiguous: seq {expected} is missing (the next row is seq {found})"
    )]
    Gap { expected: u64, found: u64 },
    /// A row's line holds a newline, which no event line does.
    #[error("the row at seq {seq} holds a raw newline")]
    RawNewline { seq: u64 },
}

/// `rows` (seq, line), read from seq `from` on: checked to continue from `from` without a
/// gap, each line one line.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn check_rows(
    from: u64,
    rows: impl IntoIterator<Item = (i64, Vec<u8>)>,
) -> Result<Rows, RowsError> {
    let mut out = Vec::new();
    for (seq, line) in rows {
        let expected = from + out.len() as u64;
        let seq = u64::try_from(seq).unwrap_or(u64::MAX);
        if seq != expected {
            return Err(RowsError::Gap {
                expected,
                found: seq,
            });
        }
        if line.contains(&b'\n') {
            return Err(RowsError::RawNewline { seq });
        }
        out.push((seq, line));
    }
    Ok(out)
}

/// The longest session id a store accepts, in bytes.
pub const MAX_SESSION_ID: usize = 512;

/// A parsed session name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionName {
    /// A JSON-lines log file.
    File(PathBuf),
    /// A session of the SQLite database at `db`.
    Sqlite {
        /// The database file.
        db: PathBuf,
        /// The session's id within it.
        id: String,
    },
    /// A session of a PostgreSQL database.
    Postgres {
        /// The connection URL, as given (it may hold a password: never shown).
        url: String,
        /// The session's id within the database.
        id: String,
    },
}

/// Why a session name was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NameError {
    /// `sqlite:` without `#ID`, or with an empty database path.
    #[error("session {name:?}: a SQLite session is named sqlite:PATH#ID (the database file, then the session's id)")]
    SqliteShape {
        /// The name given.
        name: String,
    },
    /// `postgres://` without `#ID`.
    #[error("session {name}: a PostgreSQL session is named postgres://USER@HOST/DB#ID (the database, then the session's id)")]
    PostgresShape {
        /// The name given, without its password.
        name: String,
    },
    /// The name is not UTF-8 (only a file path may be).
    #[error("session name {name:?} is not valid UTF-8")]
    NotUtf8 {
        /// The name, lossily decoded.
        name: String,
    },
    /// The id is empty, too long, or holds a control character.
    #[error("session id {shown}: {reason}")]
    BadId {
        /// The id, shortened and escaped for display.
        shown: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl SessionName {
    /// Parse the name of a session: `sqlite:PATH#ID`, else a file path.
    pub fn parse(name: impl AsRef<Path>) -> Result<Self, NameError> {
        let path = name.as_ref();
        let Some(text) = path.to_str() else {
            // A file path may be any bytes; a store's name is text.
            if path
                .as_os_str()
                .as_encoded_bytes()
                .starts_with(SQLITE_SCHEME.as_bytes())
            {
                return Err(NameError::NotUtf8 {
                    name: path.to_string_lossy().into_owned(),
                });
            }
            return Ok(Self::File(path.to_path_buf()));
        };
        if POSTGRES_SCHEMES
            .iter()
            .any(|scheme| text.starts_with(scheme))
        {
            let Some((url, id)) = text.split_once('#') else {
                return Err(NameError::PostgresShape { name: redact(text) });
            };
            check_id(id)?;
            return Ok(Self::Postgres {
                url: url.to_owned(),
                id: id.to_owned(),
            });
        }
        let Some(rest) = text.strip_prefix(SQLITE_SCHEME) else {
            return Ok(Self::File(path.to_path_buf()));
        };
        let Some((db, id)) = rest.split_once('#') else {
            return Err(NameError::SqliteShape {
                name: text.to_owned(),
            });
        };
        if db.is_empty() {
            return Err(NameError::SqliteShape {
                name: text.to_owned(),
            });
        }
        check_id(id)?;
        Ok(Self::Sqlite {
            db: PathBuf::from(db),
            id: id.to_owned(),
        })
    }

    /// The session's id within its store (a file's is its path).
    pub fn id(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Sqlite { id, .. } | Self::Postgres { id, .. } => id.clone(),
        }
    }
}

impl fmt::Display for SessionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Sqlite { db, id } => write!(f, "{SQLITE_SCHEME}{}#{id}", db.display()),
            Self::Postgres { url, id } => write!(f, "{}#{id}", redact(url)),
        }
    }
}

/// How the session `name` is shown in messages: a file's path, or a store's name without
/// the password its URL may hold (also when the name is malformed).
pub fn display_name(name: &Path) -> String {
    match SessionName::parse(name) {
        Ok(SessionName::File(path)) => path.display().to_string(),
        Ok(other) => other.to_string(),
        Err(_) => redact(&name.to_string_lossy()),
    }
}

/// A connection URL without its password: the userinfo's `:password` and any `password=`
/// parameter are dropped.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some(split) => split,
        None => return url.to_owned(),
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{user}@{host}")
        }
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|p| !p.to_ascii_lowercase().starts_with("password="))
                .collect();
            if kept.is_empty() {
                path.to_owned()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// Refuse an id no store should hold: empty, longer than [`MAX_SESSION_ID`] bytes, or with
/// a control character.
pub fn check_id(id: &str) -> Result<(), NameError> {
    let bad = |reason: String| NameError::BadId {
        shown: shown(id),
        reason,
    };
    if id.is_empty() {
        return Err(bad("is empty".into()));
    }
    if id.len() > MAX_SESSION_ID {
        return Err(bad(format!(
            "is {} bytes long; at most {MAX_SESSION_ID} are allowed",
            id.len()
        )));
    }
    if let Some(c) = id.chars().find(|c| c.is_control()) {
        return Err(bad(format!(
            "holds the control character U+{:04X}; ids are printable text",
            c as u32
        )));
    }
    Ok(())
}

/// An id as errors show it: escaped, and cut after 64 characters.
fn shown(id: &str) -> String {
    const SHOWN: usize = 64;
    let mut cut: String = id.chars().take(SHOWN).collect();
    if cut.len() < id.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_path_is_a_file_and_sqlite_names_a_database_and_an_id() {
        assert_eq!(
            SessionName::parse("logs/a.jsonl").unwrap(),
            SessionName::File("logs/a.jsonl".into())
        );
        assert_eq!(
            SessionName::parse("./sqlite:x#y").unwrap(),
            SessionName::File("./sqlite:x#y".into())
        );
        let name = SessionName::parse("sqlite:/var/s.db#agent 7's #1").unwrap();
        assert_eq!(
            name,
            SessionName::Sqlite {
                db: "/var/s.db".into(),
                id: "agent 7's #1".into()
            }
        );
        assert_eq!(name.to_string(), "sqlite:/var/s.db#agent 7's #1");
    }

    #[test]
    fn malformed_names_and_ids_are_refused_with_their_reason() {
        for name in ["sqlite:s.db", "sqlite:#id"] {
            assert_eq!(
                SessionName::parse(name).unwrap_err().to_string(),
                format!("session {name:?}: a SQLite session is named sqlite:PATH#ID (the database file, then the session's id)")
            );
        }
        assert_eq!(
            SessionName::parse("sqlite:s.db#").unwrap_err().to_string(),
            "session id \"\": is empty"
        );
        assert_eq!(
            SessionName::parse("sqlite:s.db#a\0b")
                .unwrap_err()
                .to_string(),
            "session id \"a\\0b\": holds the control character U+0000; ids are printable text"
        );
        let long = "x".repeat(MAX_SESSION_ID + 1);
        let err = check_id(&long).unwrap_err().to_string();
        assert!(
            err.ends_with("is 513 bytes long; at most 512 are allowed"),
            "{err}"
        );
        assert!(err.contains('…'), "{err}");
        check_id("'; DROP TABLE events; --").unwrap();
    }

    #[test]
    fn a_postgres_name_keeps_its_url_and_never_shows_the_password() {
        let name = SessionName::parse(
            "postgres://app:s3cret@db.internal:5433/agents?sslmode=require&password=x#a 7",
        )
        .unwrap();
        assert_eq!(
            name,
            SessionName::Postgres {
                url: "postgres://app:s3cret@db.internal:5433/agents?sslmode=require&password=x"
                    .into(),
                id: "a 7".into()
            }
        );
        assert_eq!(
            name.to_string(),
            "postgres://app@db.internal:5433/agents?sslmode=require#a 7"
        );
        let err = SessionName::parse("postgresql://app:s3cret@h/db")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "session postgresql://app@h/db: a PostgreSQL session is named postgres://USER@HOST/DB#ID (the database, then the session's id)");
        assert_eq!(redact("postgres://h/db?password=p"), "postgres://h/db");
        assert_eq!(redact("postgres://u@h"), "postgres://u@h");
    }

    #[cfg(unix)]
    #[test]
    fn a_sqlite_name_that_is_not_utf8_is_refused_and_a_file_path_may_be_any_bytes() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let err = SessionName::parse(OsStr::from_bytes(b"sqlite:s.db#\xff")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "session name \"sqlite:s.db#\u{fffd}\" is not valid UTF-8"
        );
        let file = OsStr::from_bytes(b"logs/\xff.jsonl");
        assert_eq!(
            SessionName::parse(file).unwrap(),
            SessionName::File(file.into())
        );
    }
}
