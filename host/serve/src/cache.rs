//! The sessions a server keeps between requests, bounded in bytes and in count.
//!
//! A session's worker keeps its state (the open log, the events replayed, the last rendering
//! for `retry`) while it waits for the next request, so that a conversation's next step does
//! not read its log again. Kept for every session ever touched, that grows without end (each
//! one's memory, and a log file's descriptor). So what the kept sessions hold is measured
//! after every request ([`SessionState::held_bytes`]), and while the total is over
//! `--session-cache-bytes`, or a new session needs room under `--max-sessions`, the least
//! recently used session whose state lies idle on its shelf is closed: its queue is removed,
//! its worker ends and drops the state, closing the log. Its next request opens it again,
//! as after `close_session`. A session with a request running or waiting is never closed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use prompt_host::session::SessionName;

use super::methods::SessionState;
use super::{Server, SessionQueue};

/// What a SQLite session's own connection adds, in the cache's units (resident memory is
/// about six times them): measured, an idle one-step session of the reference deployment
/// costs a server about 470 KB in SQLite against 320 KB in a log file (docs/benchmarks.md
/// §16), so ~150 KB, a sixth of which is counted.
const SQLITE_CONNECTION_BYTES: usize = 24 << 10;

impl Server {
    /// After a request on the session at `path` (its queue numbered `serial`) left it
    /// holding `held` bytes: record them, then close least recently used idle sessions
    /// until the kept ones fit the cache (never `path` itself).
    pub(crate) fn keep_within_cache(&self, path: &Path, serial: u64, held: usize) {
        let mut sessions = self.lock_sessions();
        match sessions.get(path) {
            Some(queue) if queue.serial == serial => queue.held.store(held, Ordering::Relaxed),
            _ => return,
        }
        let mut total: usize = sessions
            .values()
            .map(|q| q.held.load(Ordering::Relaxed))
            .sum();
        while total > self.limits.session_cache_bytes {
            match close_least_recently_used(&mut sessions, path) {
                Some(freed) => total = total.saturating_sub(freed),
                None => break,
            }
        }
    }
}

/// Close the least recently used idle session other than `keep`: the bytes it held, or
/// `None` when every other session has a request running or waiting.
pub(crate) fn close_least_recently_used(
    sessions: &mut HashMap<PathBuf, SessionQueue>,
    keep: &Path,
) -> Option<usize> {
    let victim = sessions
        .iter()
        .filter(|(path, queue)| path.as_path() != keep && queue.shelf.is_waiting())
        .min_by_key(|(_, queue)| queue.used.load(Ordering::Relaxed))
        .map(|(path, _)| path.clone())?;
    // Removing the queue drops its sender: the worker, waiting for a job, wakes to none,
    // and ends with the state (the jobs are counted under this lock, so none was sent).
    let queue = sessions.remove(&victim)?;
    Some(queue.held.load(Ordering::Relaxed))
}

impl SessionState {
    /// What this state holds, as the cache measures it: the bytes of its log's lines
    /// ([`prompt_host::session::Session::log_bytes`]), a SQLite session's connection, and
    /// the last rendering's prompt and runtime context. Resident memory is about six times
    /// it (docs/benchmarks.md §16).
    pub(crate) fn held_bytes(&self) -> usize {
        let log = self.session().map_or(0, |s| {
            let connection = match SessionName::parse(s.path()) {
                Ok(SessionName::Sqlite { .. }) => SQLITE_CONNECTION_BYTES,
                _ => 0,
            };
            s.log_bytes() + connection
        });
        let rendering = self
            .last_rendering()
            .map_or(0, |r| r.prompt.len() + r.context.len());
        log + rendering
    }
}
