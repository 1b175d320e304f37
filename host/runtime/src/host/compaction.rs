//! Compacting a session: the [`Host`]'s door to [`crate::session::compact`], with its errors
//! in the host's terms (a refusal names the log; a failed write is the log's own error).

use super::*;
use crate::session::{Compacted, CompactionOrAppend, CompactionRange};

impl Host {
    /// Replace the surface nodes `range` covers by `summary` (text the caller's model
    /// wrote): `compaction/start`, the summary `user/message` citing every replaced node,
    /// `compaction/end`, in one durable write. Refused, with nothing written, when the range
    /// is not on the surface, is reversed, starts at the system prompt, holds system prompt
    /// nodes only, separates a tool call from its result or covers an open call, or when the
    /// summary is empty or larger than [`crate::session::MAX_SUMMARY_BYTES`]. The next step
    /// projects as after any replacement, and [`Host::replay`] rebuilds every step before
    /// and after it.
    pub fn compact(
        &self,
        session: &mut Session,
        range: &CompactionRange,
        summary: &str,
    ) -> Result<Compacted, HostError> {
        let path = session.path().display().to_string();
        crate::session::compact(session, range, summary).map_err(|e| match e {
            CompactionOrAppend::Refused(error) => HostError::Compaction { path, error },
            CompactionOrAppend::Append(error) => HostError::Session { path, error },
        })
    }
}
