//! `prompt-host sessions`: operating session stores — list a store's sessions, export a
//! session as a JSON-lines log (the interchange format), import one, copy a session between
//! any two stores, prune sessions by age, bring a store's schema up to date.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use clap::Subcommand;

use prompt_host::session::{
    delete_session, list_sessions, migrate_store, Event, Session, StoredSession, HEADER,
};

use super::store_flag::{resolve, store_or_flag};

/// What `prompt-host sessions` does.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List the sessions of a store (`sqlite:PATH`): id, events, last activity.
    List {
        /// The store (default: `--store`'s).
        store: Option<String>,
        /// Print JSON lines `{"id", "events", "last_time"}` instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a session (a log file or `sqlite:PATH#ID`) as a JSON-lines session log.
    Export {
        /// The session.
        session: PathBuf,
    },
    /// Write a JSON-lines session log into a new session of any store.
    Import {
        /// The session log to read.
        file: PathBuf,
        /// The session to create (a log file or `sqlite:PATH#ID`); it must hold no events.
        session: PathBuf,
    },
    /// Copy a session into a new one, of the same store or another, event for event.
    Copy {
        /// The session to read.
        from: PathBuf,
        /// The session to create; it must hold no events.
        to: PathBuf,
    },
    /// Delete the sessions of a store whose last event is older than an age.
    Prune {
        /// The store (`sqlite:PATH`, `postgres://…`; default: `--store`'s).
        store: Option<String>,
        /// The age: `30d`, `12h`, `1h 30m`.
        #[arg(long = "older-than", value_name = "AGE", value_parser = parse_age)]
        older_than: Duration,
        /// Only list what would be deleted.
        #[arg(long = "dry-run")]
        dry_run: bool,
    },
    /// Bring a store's schema up to date, creating the store when missing.
    Migrate {
        /// The store (`sqlite:PATH`, `postgres://…`; default: `--store`'s).
        store: Option<String>,
    },
}

/// Run one `prompt-host sessions` command.
pub fn run(command: SessionsCommand) -> anyhow::Result<()> {
    match command {
        SessionsCommand::List { store, json } => list(store.as_deref(), json),
        SessionsCommand::Export { session } => export(&resolve(&session)?),
        // The file imported is a log file, whatever the configured store.
        SessionsCommand::Import { file, session } => copy(&file, &resolve(&session)?),
        SessionsCommand::Copy { from, to } => copy(&resolve(&from)?, &resolve(&to)?),
        SessionsCommand::Prune {
            store,
            older_than,
            dry_run,
        } => prune(store.as_deref(), older_than, dry_run),
        SessionsCommand::Migrate { store } => {
            let store = store_or_flag(store.as_deref())?;
            let version = migrate_store(&store)?;
            println!("store {store}: schema version {version}");
            Ok(())
        }
    }
}

fn list(store: Option<&str>, json: bool) -> anyhow::Result<()> {
    let store = store_or_flag(store)?;
    let sessions = list_sessions(&store)?;
    let mut out = std::io::stdout().lock();
    if json {
        for s in &sessions {
            let line =
                serde_json::json!({"id": s.id, "events": s.events, "last_time": s.last_time});
            writeln!(out, "{line}")?;
        }
    } else {
        writeln!(out, "{:<40} {:>8}  LAST EVENT", "SESSION", "EVENTS")?;
        for s in &sessions {
            // Debug-quoted: an id is any printable text, and a table row stays one line.
            let id = format!("{:?}", s.id);
            let when = s.last_time.map(utc).unwrap_or_else(|| "-".into());
            writeln!(out, "{id:<40} {:>8}  {when}", s.events)?;
        }
    }
    Ok(())
}

fn export(session: &Path) -> anyhow::Result<()> {
    let (events, report) = read(session)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    writeln!(out, "{HEADER}")?;
    for event in &events {
        out.write_all(&event.to_line()?)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    drop(out);
    warn_torn(session, report.recovered_torn_bytes);
    Ok(())
}

/// Read `from` whole and write its events into `to`, which must hold none: one write, all or
/// nothing.
fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    let (events, report) = read(from)?;
    warn_torn(from, report.recovered_torn_bytes);
    let (mut target, _) = Session::open(to).with_context(|| {
        format!(
            "cannot open session {}",
            prompt_host::session::display_name(to)
        )
    })?;
    if !target.events().is_empty() {
        bail!(
            "session {} already holds {} events; copy into a new session",
            prompt_host::session::display_name(to),
            target.events().len()
        );
    }
    let n = events.len();
    target.import_events(events).with_context(|| {
        format!(
            "cannot write session {}",
            prompt_host::session::display_name(to)
        )
    })?;
    eprintln!(
        "copied {n} events from {} to {}",
        prompt_host::session::display_name(from),
        prompt_host::session::display_name(to)
    );
    Ok(())
}

fn prune(store: Option<&str>, older_than: Duration, dry_run: bool) -> anyhow::Result<()> {
    let store = store_or_flag(store)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    let cutoff = now.saturating_sub(older_than.as_millis() as u64);
    let old: Vec<StoredSession> = list_sessions(&store)?
        .into_iter()
        .filter(|s| s.last_time.is_some_and(|t| t < cutoff))
        .collect();
    for s in &old {
        if dry_run {
            println!("would delete {:?} ({} events)", s.id, s.events);
        } else {
            let n = delete_session(&store, &s.id)?;
            println!("deleted {:?} ({n} events)", s.id);
        }
    }
    Ok(())
}

fn read(session: &Path) -> anyhow::Result<(Vec<Event>, prompt_host::session::OpenReport)> {
    Session::read(session).with_context(|| {
        format!(
            "cannot read session {}",
            prompt_host::session::display_name(session)
        )
    })
}

fn warn_torn(session: &Path, torn: usize) {
    if torn > 0 {
        super::warn(&format!(
            "session log {}: a torn last line ({torn} bytes) was left out",
            prompt_host::session::display_name(session)
        ));
    }
}

/// An age as humantime reads it: `30d`, `12h`, `1h 30m`.
fn parse_age(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("{text:?}: {e} (an age is like 30d or 12h)"))
}

/// Epoch milliseconds as RFC 3339, UTC, to the second.
fn utc(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_dates() {
        assert_eq!(parse_age("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_age("90m"), Ok(Duration::from_secs(5400)));
        assert!(parse_age("30x").is_err());
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
    }
}
