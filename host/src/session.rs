//! The session log: append-only JSON lines, one event per line, `seq` contiguous from 0, and
//! the surface of model-visible nodes folded from it (SPEC §7).
//!
//! Every event is validated against the log and the surface before it is written, so a
//! refused append changes nothing, in memory or on disk. An accepted append is written whole
//! and synced before it counts. Opening replays the file through the same rules; a torn last
//! line is cut off and reported, anything else invalid is an error naming its line.
//!
//! Loaded events are not published to anybody: consumers such as the runtime-context
//! projection restore their state from the log, then follow the events appended after.

pub mod conversation;
pub mod derive;
pub mod error;
pub mod event;
pub mod message;
pub mod op;
pub mod replay;
pub mod surface;

mod file;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub use conversation::{AssistantReply, ConversationError, ToolCall, ToolResult};
pub use derive::{
    derive_messages, ModelRequest, WireContent, WireFunctionCall, WireMessage, WireTool,
    WireToolCall,
};
pub use error::{AppendError, EventError, OpenError};
pub use event::{Event, EventData, NewEvent};
pub use message::{ContentBlock, Message, MessageData, Source};
pub use op::{SurfaceIntent, SurfaceOp};
pub use replay::{request_at, ReplayError};
pub use surface::Surface;

use file::LogFile;

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

/// What opening a log found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenReport {
    /// Events replayed.
    pub events: usize,
    /// Bytes of an incomplete last line that were cut off (0 when the log was clean).
    pub recovered_torn_bytes: usize,
}

/// An open session log. Holds an exclusive lock on the file until dropped.
#[derive(Debug)]
pub struct Session {
    id: SessionId,
    file: LogFile,
    events: Vec<Event>,
    surface: Surface,
    poisoned: bool,
}

impl Session {
    /// Open (or create) the log at `path`, replay it and rebuild the surface.
    pub fn open(path: impl AsRef<Path>) -> Result<(Self, OpenReport), OpenError> {
        let path = path.as_ref();
        let (mut file, bytes) = LogFile::open(path)?;
        // Everything after the last newline is an append that never completed.
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let torn = bytes.len() - complete;
        let mut events = Vec::new();
        let mut surface = Surface::default();
        for (index, line) in bytes[..complete]
            .split_inclusive(|&b| b == b'\n')
            .enumerate()
        {
            let line = line.strip_suffix(b"\n").unwrap_or(line);
            let line_error = |source| OpenError::Line {
                path: path.to_path_buf(),
                line: index + 1,
                source,
            };
            let event = Event::from_line(line).map_err(line_error)?;
            let plan = surface.plan(&event, &events).map_err(line_error)?;
            surface.apply(plan);
            events.push(event);
        }
        if torn > 0 {
            file.truncate(complete as u64)
                .map_err(|source| OpenError::Io {
                    path: path.to_path_buf(),
                    source,
                })?;
        }
        let report = OpenReport {
            events: events.len(),
            recovered_torn_bytes: torn,
        };
        let session = Self {
            id: SessionId::fresh(),
            file,
            events,
            surface,
            poisoned: false,
        };
        Ok((session, report))
    }

    /// Validate `candidate` as the next event, write it durably, then commit it in memory.
    pub fn append(&mut self, candidate: NewEvent) -> Result<&Event, AppendError> {
        let seq = self.events.len() as u64;
        let path = self.file.path().to_path_buf();
        if self.poisoned {
            return Err(AppendError::Poisoned { path });
        }
        let invalid = |source| AppendError::Invalid {
            path: path.clone(),
            seq,
            source,
        };
        let event = candidate.into_event(seq, now_ms());
        let plan = self.surface.plan(&event, &self.events).map_err(invalid)?;
        let mut line = event.to_line().map_err(invalid)?;
        line.push(b'\n');
        if let Err((source, rolled_back)) = self.file.append(&line) {
            self.poisoned = !rolled_back;
            return Err(AppendError::Io { path, seq, source });
        }
        self.surface.apply(plan);
        self.events.push(event);
        let last = self.events.len() - 1;
        Ok(&self.events[last])
    }

    /// This open session's identity.
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// The log path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The log path, owned.
    pub fn path_buf(&self) -> PathBuf {
        self.file.path().to_path_buf()
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
        self.surface
            .nodes()
            .iter()
            .filter_map(|&seq| self.event(seq))
    }

    /// The model messages derived from the surface (SPEC §7.2).
    pub fn derive_messages(&self) -> Vec<WireMessage> {
        derive_messages(self)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
