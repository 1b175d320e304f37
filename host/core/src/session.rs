//! The session log: append-only JSON lines — a format header
//! (`{"prompt-host":"session-log","version":1}`), then one event per line, `seq` contiguous
//! from 0 — and the surface of model-visible nodes folded from it.
//!
//! Every event is validated against the log and the surface before it is written, so a
//! refused append changes nothing, in memory or on disk. An accepted append is written whole
//! and synced before it counts. Opening replays the file through the same rules; a torn last
//! line is cut off and reported, anything else invalid is an error naming its line, and a
//! file that is not a session log (or not a regular file) is refused untouched.
//!
//! Loaded events are not published to anybody: consumers such as the runtime-context
//! projection restore their state from the log, then follow the events appended after.

pub(crate) mod admin;
pub(crate) mod compaction;
pub(crate) mod conversation;
pub(crate) mod depth;
pub(crate) mod derive;
pub(crate) mod error;
pub(crate) mod event;
pub(crate) mod format;
pub(crate) mod message;
pub(crate) mod op;
pub(crate) mod replay;
pub mod route;
pub(crate) mod store;
pub(crate) mod surface;

mod file;
#[cfg(feature = "postgres")]
mod postgres;
mod shared;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_open;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub use admin::{
    delete_session, list_sessions, migrate_store, resolve_session, StoreError, StoreName,
    StoredSession, FILE_SCHEME,
};
pub use compaction::{
    compact, oldest_compactable, plan_compaction, Compacted, CompactionError, CompactionOrAppend,
    CompactionRange, PlannedCompaction, COMPACTION_END, COMPACTION_SOURCE, COMPACTION_START,
    MAX_SUMMARY_BYTES,
};
pub use conversation::{
    assistant_event, open_calls, tool_calls, tool_result_event, AssistantReply, ConversationError,
    ProviderReply, ToolCall, ToolResult, Usage,
};
pub use depth::{too_deep, MAX_TOOL_PARAMETERS_DEPTH};
pub use derive::ModelRequest;
pub use error::{AppendError, EventError, OpenError};
pub use event::{
    is_known_type, is_surface_type, Event, EventData, NewEvent, ASSISTANT_MESSAGE, KNOWN_TYPES,
    REQUEST_CONTEXT, REQUEST_HEADER, STEP_END, STEP_START, SURFACE_TYPES, SYSTEM_MESSAGE,
    TOOL_RESULT, USER_MESSAGE,
};
pub use format::{FORMAT_VERSION, HEADER};
pub use message::{new_message_id, text_content, ContentBlock, Message, MessageData, Source};
pub use op::{SurfaceIntent, SurfaceOp, MAX_SAFE_SEQ};
pub use replay::{context_in_force, last_step, request_at, ReplayError};
pub use store::{
    check_id, display_name, redact, NameError, SessionName, MAX_SESSION_ID, POSTGRES_SCHEMES,
    SQLITE_SCHEME,
};
pub use surface::Surface;

use file::LogFile;
use format::Repair;

/// Identifies one open session within the process, so observers bound to one log can ignore
/// the events of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionId(u64);

impl SessionId {
    fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What opening a log found, and what it repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenReport {
    /// Events replayed.
    pub events: usize,
    /// Bytes of a torn last line (not complete JSON: an append cut short) that were cut
    /// off; 0 when there was none.
    pub recovered_torn_bytes: usize,
    /// Whether the last event was complete but lacked its newline; it was kept and the
    /// newline appended.
    pub completed_last_event: bool,
    /// Bytes appended to complete a header line cut short when the log was created; 0 when
    /// there was none.
    pub completed_header_bytes: usize,
    /// The log has no header: it was written by a release before the format version
    /// existed. It is read as version 1 and never rewritten.
    pub legacy: bool,
}

impl OpenReport {
    /// One line per repair opening made to the log at `path`, for a human (the command
    /// line prints them on stderr); empty when the log was clean.
    pub fn notices(&self, path: &Path) -> Vec<String> {
        let path = path.display();
        let mut notices = Vec::new();
        if self.recovered_torn_bytes > 0 {
            notices.push(format!(
                "session log {path}: recovered from a torn last line ({} bytes cut off)",
                self.recovered_torn_bytes
            ));
        }
        if self.completed_last_event {
            notices.push(format!(
                "session log {path}: the last event (seq {}) lacked its final newline; kept it and added the newline",
                self.events.saturating_sub(1)
            ));
        }
        if self.completed_header_bytes > 0 {
            notices.push(format!(
                "session log {path}: completed a header line cut short when the log was created ({} {} added)",
                self.completed_header_bytes,
                if self.completed_header_bytes == 1 { "byte" } else { "bytes" }
            ));
        }
        notices
    }
}

/// Where an open session's events are written.
#[derive(Debug)]
enum Log {
    /// A JSON-lines file, locked until the session is dropped.
    File(LogFile),
    /// A session of a store several writers share: appends conditional on the next seq.
    Shared(shared::SharedLog),
}

/// An open session log: a log file (locked until dropped), or a session of a store whose
/// appends are conditional on the seq this session last saw (see [`SessionName`]).
#[derive(Debug)]
pub struct Session {
    id: SessionId,
    log: Log,
    /// The session's name as errors show it: the file's path, `sqlite:DB#ID`, or a
    /// PostgreSQL URL without its password and `#ID`.
    name: PathBuf,
    events: Vec<Event>,
    surface: Surface,
    poisoned: bool,
    /// Events the log held when this session opened it (the rest were appended since).
    loaded: usize,
    /// A new log (missing or empty at open): its header goes out with the first event, so
    /// that a log nothing was appended to stays as it was (missing, or empty).
    header_pending: bool,
    /// Durable writes made (see [`Session::durable_writes`]).
    syncs: u64,
    /// Events validated and committed in memory but not written yet: a step's batches,
    /// written as one ([`Session::stage`]).
    staged: Option<Staged>,
    /// The bytes of the lines of the events held ([`Session::log_bytes`]).
    line_bytes: usize,
}

/// What [`Session::stage`] holds back until [`Session::commit_staged`].
#[derive(Debug)]
struct Staged {
    /// The first staged event's index.
    first: usize,
    /// The surface before the first staged event.
    surface: Surface,
    /// The staged events' lines.
    lines: Vec<u8>,
}

impl Session {
    /// Open the log at `path`, replay it and rebuild the surface.
    ///
    /// Only a regular file is opened. An empty file, or a missing one in an existing
    /// directory, becomes a new log; nothing is written (nor a missing file created) until
    /// the first [`Session::append`], which writes the header with the first event and
    /// syncs both, with the directory. Until then a missing log is not locked, and that
    /// append is refused ([`AppendError::CreatedMeanwhile`]) if another process created
    /// a file at the path in between. A non-empty
    /// file is judged whole before anything is written (by the rules of the log format, [`FORMAT_VERSION`]): a
    /// file that is not a session log, a newer format or an invalid line is refused and
    /// left byte for byte as it was; a torn last line is cut off, a complete last event
    /// that only lacks its newline gets it, and a header cut short gets its rest — each
    /// durably, and each reported in the [`OpenReport`].
    ///
    /// A name `sqlite:PATH#ID` or `postgres://…#ID` opens a session of a shared store
    /// instead ([`SessionName`]; [`Session::open_sqlite`]).
    pub fn open(path: impl AsRef<Path>) -> Result<(Self, OpenReport), OpenError> {
        match SessionName::parse(path.as_ref())? {
            SessionName::File(path) => Self::open_file(&path),
            other => Self::open_shared(&other),
        }
    }

    /// Open session `id` of the SQLite database at `db` (created when missing), replaying
    /// its rows by the log's rules. Appends through it are written only when no other
    /// writer appended since it read the session ([`AppendError::Conflict`]). Without the
    /// `sqlite` feature, refused naming it.
    pub fn open_sqlite(db: impl AsRef<Path>, id: &str) -> Result<(Self, OpenReport), OpenError> {
        check_id(id)?;
        Self::open_shared(&SessionName::Sqlite {
            db: db.as_ref().to_path_buf(),
            id: id.to_owned(),
        })
    }

    /// Open a session of a shared store and replay its rows.
    fn open_shared(name: &SessionName) -> Result<(Self, OpenReport), OpenError> {
        let shown = shared::shown(name);
        let (log, rows) = shared::SharedLog::open(name)?;
        let (events, surface, line_bytes) = replay_rows(&shown, rows)?;
        let report = OpenReport {
            events: events.len(),
            ..OpenReport::default()
        };
        let loaded = events.len();
        let session = Self {
            id: SessionId::fresh(),
            log: Log::Shared(log),
            name: shown,
            events,
            surface,
            poisoned: false,
            loaded,
            header_pending: false,
            syncs: 0,
            staged: None,
            line_bytes,
        };
        Ok((session, report))
    }

    /// The events of the session `name` (a log file or a shared store's), read and validated
    /// without opening it for appends: nothing is locked, created, repaired or written. A
    /// log file's torn last line is left out (and counted in the report), as opening would
    /// cut it. What `prompt-host sessions export` and `copy` read.
    pub fn read(name: impl AsRef<Path>) -> Result<(Vec<Event>, OpenReport), OpenError> {
        match SessionName::parse(name.as_ref())? {
            SessionName::File(path) => {
                let io_err = |error| OpenError::Io {
                    path: path.clone(),
                    error,
                };
                let (mut file, meta) =
                    crate::fsutil::open_regular(&path, std::fs::OpenOptions::new().read(true))
                        .map_err(|e| match crate::fsutil::not_regular(&e) {
                            Some(not) => OpenError::NotRegular {
                                path: path.clone(),
                                kind: not.kind,
                            },
                            None => io_err(e),
                        })?;
                let bytes =
                    crate::fsutil::read_exact_size(&mut file, meta.len()).map_err(io_err)?;
                let replay = format::replay(&path, &bytes)?;
                let mut report = OpenReport {
                    events: replay.events.len(),
                    legacy: replay.legacy,
                    ..OpenReport::default()
                };
                if let Repair::Cut { keep } = replay.repair {
                    report.recovered_torn_bytes = bytes.len() - keep;
                }
                Ok((replay.events, report))
            }
            other => {
                let rows = shared::SharedLog::read(&other)?;
                let (events, _, _) = replay_rows(&shared::shown(&other), rows)?;
                let report = OpenReport {
                    events: events.len(),
                    ..OpenReport::default()
                };
                Ok((events, report))
            }
        }
    }

    /// Open a log file (what [`Session::open`] does with a plain path).
    fn open_file(path: &Path) -> Result<(Self, OpenReport), OpenError> {
        let (mut file, bytes) = LogFile::open(path)?;
        let replay = format::replay(path, &bytes)?;
        let io_err = |source| OpenError::Io {
            path: path.to_path_buf(),
            error: source,
        };
        let mut report = OpenReport {
            events: replay.events.len(),
            legacy: replay.legacy,
            ..OpenReport::default()
        };
        match replay.repair {
            Repair::None => {}
            // Written with the first event (see `append`).
            Repair::WriteHeader => {}
            Repair::CompleteHeader(rest) => {
                file.append(rest).map_err(|(e, _)| io_err(e))?;
                file.sync_parent_dir().map_err(io_err)?;
                report.completed_header_bytes = rest.len();
            }
            Repair::AddNewline { event } => {
                file.append(b"\n").map_err(|(e, _)| io_err(e))?;
                if event {
                    report.completed_last_event = true;
                } else {
                    report.completed_header_bytes = 1;
                }
            }
            Repair::Cut { keep } => {
                file.truncate(keep as u64).map_err(io_err)?;
                report.recovered_torn_bytes = bytes.len() - keep;
            }
        }
        let loaded = replay.events.len();
        let header_pending = replay.repair == Repair::WriteHeader;
        let session = Self {
            id: SessionId::fresh(),
            log: Log::File(file),
            name: path.to_path_buf(),
            events: replay.events,
            surface: replay.surface,
            poisoned: false,
            loaded,
            header_pending,
            syncs: 0,
            staged: None,
            line_bytes: bytes.len(),
        };
        Ok((session, report))
    }

    /// Validate `candidate` as the next event, write it durably, then commit it in memory.
    pub fn append(&mut self, candidate: NewEvent) -> Result<&Event, AppendError> {
        let seq = self.events.len() as u64;
        self.append_events(std::iter::once(candidate.into_event(seq, now_ms())))?;
        let last = self.events.len() - 1;
        Ok(&self.events[last])
    }

    /// Validate `candidates` in order, each as the next event after the ones before it,
    /// write them with one write and one sync, then commit them in memory; their seqs. All
    /// or nothing: a refused event, or a failed write, leaves the log and the session as
    /// they were.
    pub fn append_all(
        &mut self,
        candidates: impl IntoIterator<Item = NewEvent>,
    ) -> Result<std::ops::Range<u64>, AppendError> {
        let first = self.events.len() as u64;
        let now = now_ms();
        self.append_events(
            candidates
                .into_iter()
                .enumerate()
                .map(|(i, candidate)| candidate.into_event(first + i as u64, now)),
        )
    }

    /// Append events read from another log as they are (their seqs, times and data): the
    /// first must continue this log, and each is validated as [`Session::append_all`]
    /// validates new ones, all or nothing. What `prompt-host sessions copy` and `import`
    /// write, so that a copy replays byte for byte.
    pub fn import_events(
        &mut self,
        events: impl IntoIterator<Item = Event>,
    ) -> Result<std::ops::Range<u64>, AppendError> {
        self.append_events(events.into_iter())
    }

    fn append_events(
        &mut self,
        events: impl Iterator<Item = Event>,
    ) -> Result<std::ops::Range<u64>, AppendError> {
        let first = self.events.len();
        let path = self.name.clone();
        if self.poisoned {
            return Err(AppendError::Poisoned { path });
        }
        // Each event is checked against the surface the earlier ones of the batch make; the
        // session's own surface changes only once all of them are written.
        let mut surface = self.surface.clone();
        let mut lines = Vec::new();
        for event in events {
            let seq = self.events.len() as u64;
            let checked = surface
                .plan(&event, &self.events)
                .and_then(|plan| Ok((plan, line_of(&event)?)));
            match checked {
                Ok((plan, line)) => {
                    surface.apply(plan);
                    lines.extend_from_slice(&line);
                    self.events.push(event);
                }
                Err(source) => {
                    self.events.truncate(first);
                    return Err(AppendError::Invalid {
                        path,
                        seq,
                        error: source,
                    });
                }
            }
        }
        let end = self.events.len() as u64;
        let added = lines.len();
        if let Some(staged) = &mut self.staged {
            staged.lines.extend_from_slice(&lines);
            self.surface = surface;
            self.line_bytes += added;
            return Ok(first as u64..end);
        }
        if lines.is_empty() {
            return Ok(end..end);
        }
        if let Err(e) = self.write(lines, first as u64) {
            self.events.truncate(first);
            return Err(e);
        }
        self.surface = surface;
        self.line_bytes += added;
        Ok(first as u64..end)
    }

    /// Hold back the writes of the appends that follow, until [`Session::commit_staged`]
    /// writes them as one (a step's events: visible together or not at all, whatever the
    /// store) or [`Session::abort_staged`] drops them. They are validated and committed in
    /// memory as they are appended, so each sees the ones before it.
    pub(crate) fn stage(&mut self) {
        self.staged = Some(Staged {
            first: self.events.len(),
            surface: self.surface.clone(),
            lines: Vec::new(),
        });
    }

    /// Write what was staged as one durable write; on failure the session is as it was
    /// before [`Session::stage`].
    pub(crate) fn commit_staged(&mut self) -> Result<(), AppendError> {
        let Some(staged) = self.staged.take() else {
            return Ok(());
        };
        if staged.lines.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.write(staged.lines, staged.first as u64) {
            self.events.truncate(staged.first);
            self.surface = staged.surface;
            return Err(e);
        }
        Ok(())
    }

    /// Drop what was staged: the session is as it was before [`Session::stage`].
    pub(crate) fn abort_staged(&mut self) {
        if let Some(staged) = self.staged.take() {
            self.events.truncate(staged.first);
            self.surface = staged.surface;
        }
    }

    /// Write `lines` (whole lines, the first at `seq`) durably, with the header first when
    /// the log is new.
    fn write(&mut self, lines: Vec<u8>, seq: u64) -> Result<(), AppendError> {
        match &mut self.log {
            Log::File(file) => write_file(
                file,
                &self.name,
                &mut self.header_pending,
                &mut self.poisoned,
                lines,
                seq,
            )?,
            Log::Shared(log) => {
                let rows: Vec<&[u8]> = lines
                    .split_inclusive(|&b| b == b'\n')
                    .map(|line| &line[..line.len() - 1])
                    .collect();
                log.append(seq, &rows).map_err(|failure| match failure {
                    shared::AppendFailure::Conflict { actual } => AppendError::Conflict {
                        path: self.name.clone(),
                        expected: seq,
                        actual,
                    },
                    shared::AppendFailure::Store(error) => AppendError::Store {
                        path: self.name.clone(),
                        seq,
                        error,
                    },
                })?;
            }
        }
        self.syncs += 1;
        Ok(())
    }

    /// How many durable writes (each one write and one sync) this session made: a batch of
    /// events is one.
    pub fn durable_writes(&self) -> u64 {
        self.syncs
    }

    /// The events the log held when it was opened; later ones were appended through this
    /// session (this "loop instance").
    pub fn loaded_events(&self) -> &[Event] {
        &self.events[..self.loaded]
    }

    /// The events appended through this session since it opened the log.
    pub fn appended_events(&self) -> &[Event] {
        &self.events[self.loaded..]
    }

    /// This open session's identity.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// The log path; for a session of a store, its name (`sqlite:DB#ID`).
    pub fn path(&self) -> &Path {
        &self.name
    }

    /// The log path, owned.
    pub fn path_buf(&self) -> PathBuf {
        self.name.clone()
    }

    /// Catch up with the events other writers appended to a shared store since this session
    /// read it, validated by the log's rules; how many there were. A log file, which this
    /// process holds alone, has none. Calling it before each use turns the next append's
    /// [`AppendError::Conflict`] into a true race between writers, not a stale reader.
    pub fn refresh(&mut self) -> Result<usize, OpenError> {
        match &self.log {
            Log::File(_) => Ok(0),
            Log::Shared(log) => {
                let from = self.events.len();
                let rows = log.rows_from(from as u64).map_err(|e| OpenError::Store {
                    path: self.name.clone(),
                    error: e,
                })?;
                if rows.is_empty() {
                    return Ok(0);
                }
                let mut surface = self.surface.clone();
                for (seq, line) in rows {
                    let checked = Event::from_line(&line)
                        .and_then(|event| Ok((surface.plan(&event, &self.events)?, event)));
                    match checked {
                        Ok((plan, event)) => {
                            surface.apply(plan);
                            self.events.push(event);
                            self.line_bytes += line.len() + 1;
                        }
                        Err(error) => {
                            self.events.truncate(from);
                            return Err(OpenError::Row {
                                path: self.name.clone(),
                                seq,
                                error,
                            });
                        }
                    }
                }
                self.surface = surface;
                Ok(self.events.len() - from)
            }
        }
    }

    /// The bytes of the lines of the events this session holds (read at open, appended or
    /// caught up with since): the measure of what it keeps in memory, which is a small
    /// multiple of it (`serve`'s session cache is bounded by it).
    pub fn log_bytes(&self) -> usize {
        self.line_bytes
    }

    /// Whether the session lives in a store shared by several writers (whose appends may
    /// be refused with [`AppendError::Conflict`]) rather than in a locked log file.
    pub fn is_shared(&self) -> bool {
        !matches!(self.log, Log::File(_))
    }

    /// Every committed event, in seq order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The event at `seq`.
    pub fn event(&self, seq: u64) -> Option<&Event> {
        usize::try_from(seq).ok().and_then(|i| self.events.get(i))
    }

    /// The current surface.
    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// The surface events, in model-visible order.
    pub fn surface_events(&self) -> impl Iterator<Item = &Event> + '_ {
        self.surface.iter().filter_map(|seq| self.event(seq))
    }

    /// The model messages derived from the surface, in the `chat-completions` shape.
    pub fn derive_messages(&self) -> Vec<serde_json::Value> {
        ModelRequest::derive(self, &[], &route::RouteContext::default())
            .messages()
            .to_vec()
    }
}

/// A store's rows replayed by the log's rules: the events and the surface they make; a row
/// that is not a valid next event refuses the session, naming its seq.
fn replay_rows(name: &Path, rows: store::Rows) -> Result<(Vec<Event>, Surface, usize), OpenError> {
    let mut events: Vec<Event> = Vec::with_capacity(rows.len());
    let mut surface = Surface::default();
    let mut bytes = 0;
    for (seq, line) in rows {
        bytes += line.len() + 1;
        let checked =
            Event::from_line(&line).and_then(|event| Ok((surface.plan(&event, &events)?, event)));
        let (plan, event) = checked.map_err(|error| OpenError::Row {
            path: name.to_path_buf(),
            seq,
            error,
        })?;
        surface.apply(plan);
        events.push(event);
    }
    Ok((events, surface, bytes))
}

/// Write `lines` (the first at `seq`) to the log file durably, creating it with its header
/// when it is new. A write that could not be rolled back poisons the session.
fn write_file(
    file: &mut LogFile,
    path: &Path,
    header_pending: &mut bool,
    poisoned: &mut bool,
    mut lines: Vec<u8>,
    seq: u64,
) -> Result<(), AppendError> {
    let path = path.to_path_buf();
    if *header_pending {
        let io = |source| AppendError::Io {
            path: path.clone(),
            seq,
            error: source,
        };
        file.create().map_err(|e| match e {
            file::CreateError::Taken => AppendError::CreatedMeanwhile { path: path.clone() },
            file::CreateError::Io(source) => io(source),
        })?;
        // A crash must not lose the new file's directory entry; made durable before the
        // event, so that a failure here has written nothing.
        file.sync_parent_dir().map_err(io)?;
        // One write: a crash leaves a header cut short, or a header and a torn event, both
        // of which opening repairs.
        lines.splice(0..0, format::header_line().iter().copied());
    }
    if let Err((source, rolled_back)) = file.append(&lines) {
        *poisoned = !rolled_back;
        return Err(AppendError::Io {
            path,
            seq,
            error: source,
        });
    }
    *header_pending = false;
    Ok(())
}

/// The line `event` is written as, newline included: refused when it would nest deeper than
/// a log line is read back, or when it would not read back at all (what opening the log
/// would find), so that nothing acknowledged can make the log unopenable.
fn line_of(event: &Event) -> Result<Vec<u8>, EventError> {
    depth::check(event)?;
    let mut line = event.to_line()?;
    if let Err(e) = Event::from_line(&line) {
        return Err(EventError::Unreadable {
            kind: event.kind.clone(),
            reason: e.to_string(),
        });
    }
    line.push(b'\n');
    Ok(line)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
