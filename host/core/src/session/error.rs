//! Errors of the session log. The `EventError` texts are the session's contract: tests and
//! other implementations match them byte for byte.

use std::path::PathBuf;

use thiserror::Error;

use crate::fsutil::FileKind;

/// Why one event is refused (at append time, or while replaying a log).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EventError {
    /// An unknown event type without the `ignorable` marker: skipping it could rebuild a
    /// wrong session, so it is refused.
    #[error(
        "session event \"{kind}\" has an unknown type; only an event marked ignorable may use one"
    )]
    UnknownType {
        /// The event type.
        kind: String,
    },
    /// The seq does not continue the log.
    #[error("session event seq {seq} is not contiguous; expected {expected}")]
    NotContiguous {
        /// The seq found.
        seq: u64,
        /// The seq the log expects.
        expected: u64,
    },
    /// A log-only event carries surface metadata.
    #[error("session event \"{kind}\" is not surface-eligible and cannot carry {field}")]
    NotSurfaceEligible {
        /// The event type.
        kind: String,
        /// `surfaceOp` or `sourceEventSeqs`.
        field: &'static str,
    },
    /// A surface-eligible event without a `surfaceOp`.
    #[error("session event \"{kind}\" is surface-eligible and requires a surfaceOp marker")]
    SurfaceOpRequired {
        /// The event type.
        kind: String,
    },
    /// A `surfaceOp` that is neither `"append"` nor an object.
    #[error("session event \"{kind}\" carries an invalid surfaceOp")]
    InvalidSurfaceOp {
        /// The event type.
        kind: String,
    },
    /// A replace object that is not exactly `{op:"replace", startSeq, endSeq}`.
    #[error("session event \"{kind}\" carries an invalid replace surfaceOp")]
    InvalidReplaceOp {
        /// The event type.
        kind: String,
    },
    /// A replace range citing the event itself or a later one.
    #[error("surface replace at seq {seq}: startSeq and endSeq must reference earlier events")]
    ReplaceNotEarlier {
        /// The event's seq.
        seq: u64,
    },
    /// `assistant/message` never cites sources.
    #[error("assistant/message embeds its source stream and cannot carry sourceEventSeqs")]
    AssistantSources,
    /// `sourceEventSeqs` is not an array.
    #[error("sourceEventSeqs on event at seq {seq} must be an array when present")]
    SourcesNotArray {
        /// The event's seq.
        seq: u64,
    },
    /// `sourceEventSeqs: []`.
    #[error("sourceEventSeqs must not be empty")]
    SourcesEmpty,
    /// A source that is not a non-negative safe integer.
    #[error(
        "session event \"{kind}\" sourceEventSeqs must densely contain non-negative safe integers"
    )]
    SourcesNotSeqs {
        /// The event type.
        kind: String,
    },
    /// A source cited twice.
    #[error("sourceEventSeqs must not contain duplicates")]
    SourcesDuplicate,
    /// A source at or after the event itself.
    #[error("sourceEventSeqs must reference earlier events: {source_seq} >= current seq {seq}")]
    SourceNotEarlier {
        /// The offending source.
        source_seq: u64,
        /// The event's seq.
        seq: u64,
    },
    /// A replacement that shadows nodes it does not cite.
    #[error("surface replace: sourceEventSeqs must include every shadowed surface node; missing {}", join(.missing))]
    MissingShadowed {
        /// The shadowed seqs not cited, in surface order.
        missing: Vec<u64>,
    },
    /// The range start is not on the surface.
    #[error("surface replace: start seq {seq} not found in surface")]
    StartNotFound {
        /// The start seq.
        seq: u64,
    },
    /// The range end is not on the surface.
    #[error("surface replace: end seq {seq} not found in surface")]
    EndNotFound {
        /// The end seq.
        seq: u64,
    },
    /// The range is reversed.
    #[error("surface replace: start seq {start} (index {start_index}) is after end seq {end} (index {end_index})")]
    StartAfterEnd {
        /// The start seq.
        start: u64,
        /// Its surface index.
        start_index: usize,
        /// The end seq.
        end: u64,
        /// Its surface index.
        end_index: usize,
    },
    /// A tool-result replacement over several nodes.
    #[error("tool/result surface replacement must rewrite exactly one current node")]
    ToolResultCount,
    /// A tool-result replacement over a node that is not a tool result.
    #[error("tool/result surface replacement must target a current tool/result")]
    ToolResultTarget,
    /// A tool-result replacement that changes more than the result content.
    #[error("tool/result surface replacement may change only content")]
    ToolResultContentOnly,
    /// The system head may be rewritten only by a system message over exactly that node.
    #[error("surface replace: node 0 holds the system prompt and may be rewritten only by a system/message over exactly that node")]
    SystemHead,
    /// The data does not have the shape the event type requires.
    #[error("session event \"{kind}\" has invalid data: {reason}")]
    InvalidData {
        /// The event type.
        kind: String,
        /// What is wrong.
        reason: String,
    },
    /// The event would nest deeper than a log line can be read back (see `depth`).
    #[error("session event \"{kind}\" nests more than {limit} levels deep at {at}, deeper than a session log can be read back")]
    TooDeep {
        /// The event type.
        kind: String,
        /// A JSON pointer into the event's line, to the first level past the limit.
        at: String,
        /// The deepest nesting a log line may have.
        limit: usize,
    },
    /// The line the event would be written as does not read back (a check that no
    /// acknowledged event can make the log unopenable).
    #[error("session event \"{kind}\" would not read back from its log line: {reason}")]
    Unreadable {
        /// The event type.
        kind: String,
        /// The reader's complaint.
        reason: String,
    },
    /// The envelope itself is malformed (not an object, a missing or mistyped field).
    #[error("malformed session event: {reason}")]
    Malformed {
        /// What is wrong.
        reason: String,
    },
}

fn join(seqs: &[u64]) -> String {
    seqs.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a session log could not be opened.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Reading, creating or truncating the file failed.
    #[error("session log {path}: {error}")]
    Io {
        /// The log path.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The path is a FIFO, a device, a directory…: nothing was read from it or written.
    #[error("session log {path} is {kind}, not a regular file")]
    NotRegular {
        /// The log path.
        path: PathBuf,
        /// What the path is instead.
        kind: FileKind,
    },
    /// A non-empty file whose first line is neither the session-log header nor an event
    /// (someone else's file); it is left untouched.
    #[error("{path} is not a prompt-host session log (its first line is neither the session-log header nor a session event); refusing to modify it")]
    NotALog {
        /// The path.
        path: PathBuf,
    },
    /// The header names a format version this build does not read; the file is left
    /// untouched.
    #[error(
        "session log {path} is format version {version}; this prompt-host reads version {}",
        super::FORMAT_VERSION
    )]
    UnsupportedVersion {
        /// The log path.
        path: PathBuf,
        /// The version in the header.
        version: u64,
    },
    /// The header line is ours but names no valid version; the file is left untouched.
    #[error("session log {path}, line 1: invalid session-log header: {reason}")]
    InvalidHeader {
        /// The log path.
        path: PathBuf,
        /// What is wrong.
        reason: &'static str,
    },
    /// Another process (or another handle in this one) holds the log.
    #[error("session log {path} is locked by another process")]
    Locked {
        /// The log path.
        path: PathBuf,
    },
    /// The session's name is malformed (see [`super::SessionName`]).
    #[error(transparent)]
    Name(#[from] super::store::NameError),
    /// The name is of a store this build was compiled without.
    #[error("session {path}: this build of prompt-host has no {store} store (it was built without the `{feature}` feature)")]
    NoStore {
        /// The session's name.
        path: PathBuf,
        /// The store named.
        store: &'static str,
        /// The cargo feature that brings it.
        feature: &'static str,
    },
    /// The store failed to open or read (the database could not be opened, its schema is
    /// newer than this build's, its rows are not contiguous).
    #[error("session {path}: {error}")]
    Store {
        /// The session's name.
        path: PathBuf,
        /// What failed.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A row of a store is not a valid event (someone else wrote it); the session is not
    /// opened, and the store's other sessions are not affected.
    #[error("session {path}, seq {seq}: {error}")]
    Row {
        /// The session's name.
        path: PathBuf,
        /// The row's seq.
        seq: u64,
        /// Why the row is refused.
        error: EventError,
    },
    /// A complete line is not a valid event.
    #[error("session log {path}, line {line}: {error}")]
    Line {
        /// The log path.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Why the line is refused.
        error: EventError,
    },
}

/// Why an append was refused. A refused append changes neither the file nor the session.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The candidate event is invalid against the current log and surface.
    #[error("session log {path}: event at seq {seq} refused: {error}")]
    Invalid {
        /// The log path.
        path: PathBuf,
        /// The seq the event would have had.
        seq: u64,
        /// Why it was refused.
        error: EventError,
    },
    /// Writing or syncing failed; the partial write was rolled back.
    #[error("session log {path}: writing event at seq {seq} failed: {error}")]
    Io {
        /// The log path.
        path: PathBuf,
        /// The seq the event would have had.
        seq: u64,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The log did not exist when this session opened it, and another process created a
    /// file at its path before the first append (it holds it, or wrote to it): that file is
    /// not this session's to extend, so nothing was written.
    #[error("session log {path}: another process created the log after this session opened it; nothing was written (open the log again)")]
    CreatedMeanwhile {
        /// The log path.
        path: PathBuf,
    },
    /// Another writer appended to the session since this one read it: the store refused
    /// this append, and nothing was written. Open the session again to continue from what
    /// the other writer wrote.
    #[error("session {path}: another writer appended first (this writer expected seq {expected}, the session is at seq {actual}); nothing was written (open the session again to continue)")]
    Conflict {
        /// The session's name.
        path: PathBuf,
        /// The seq this writer would have written.
        expected: u64,
        /// The session's next seq in the store.
        actual: u64,
    },
    /// The store failed; its transaction was rolled back and nothing was written.
    #[error("session {path}: writing event at seq {seq} failed: {error}")]
    Store {
        /// The session's name.
        path: PathBuf,
        /// The seq the first event would have had.
        seq: u64,
        /// What failed.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An earlier failed write could not be rolled back; the session refuses further appends
    /// until it is reopened (which recovers the torn tail).
    #[error("session log {path} is unusable after a failed write; reopen it to recover")]
    Poisoned {
        /// The log path.
        path: PathBuf,
    },
}

impl AppendError {
    /// The validation error, when the event itself was refused.
    pub fn event_error(&self) -> Option<&EventError> {
        match self {
            Self::Invalid { error: source, .. } => Some(source),
            _ => None,
        }
    }
}
