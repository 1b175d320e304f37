//! Test helpers: a real session log in a temp dir plus compact descriptions of commits
//! (`app("t")`, `rep(n,"t")`), surfaces (`0S"v1"`, `1U`) and wire messages (`role:text`).

use serde_json::json;
use tempfile::TempDir;

use super::system_prompt::{AdmissionFlags, SystemPromptCommit, SystemPromptProjection};
use crate::session::event::{NewEvent, SYSTEM_MESSAGE, USER_MESSAGE};
use crate::session::{ContentBlock, Message, MessageData, Session, SurfaceIntent, SurfaceOp};

/// `{inHistory:false, startsSeries:false}`.
pub const R: AdmissionFlags = AdmissionFlags {
    in_history: false,
    starts_series: false,
};
/// `{inHistory:true, startsSeries:false}`.
pub const C: AdmissionFlags = AdmissionFlags {
    in_history: true,
    starts_series: false,
};
/// `{inHistory:true, startsSeries:true}`.
pub const N: AdmissionFlags = AdmissionFlags {
    in_history: true,
    starts_series: true,
};
/// `{inHistory:false, startsSeries:true}`.
pub const RN: AdmissionFlags = AdmissionFlags {
    in_history: false,
    starts_series: true,
};

/// A session log in its own temp dir.
pub struct Log {
    pub dir: TempDir,
    pub session: Session,
    users: usize,
}

impl Log {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (session, report) = Session::open(dir.path().join("session.jsonl")).unwrap();
        assert_eq!(report.events, 0);
        Self {
            dir,
            session,
            users: 0,
        }
    }

    /// Decide without committing.
    pub fn project(&self, rendered: &str, flags: AdmissionFlags) -> Vec<SystemPromptCommit> {
        SystemPromptProjection::new(&self.session).project(rendered, flags)
    }

    /// Decide, check the commit shapes, commit, and describe the commits.
    pub fn admit(&mut self, rendered: &str, flags: AdmissionFlags) -> Vec<String> {
        let commits = self.project(rendered, flags);
        for commit in &commits {
            check_shape(commit);
            self.session.append(commit.to_event(None)).unwrap();
        }
        commits.iter().map(describe_commit).collect()
    }

    /// Append a user message `u<n>`; returns its seq.
    pub fn user(&mut self) -> u64 {
        self.users += 1;
        let data = MessageData::new(Message::user_text(format!("u{}", self.users)));
        let event = NewEvent::message(USER_MESSAGE, data, SurfaceIntent::append());
        self.session.append(event).unwrap().seq
    }

    /// Append a raw system message with arbitrary content.
    pub fn raw_system(&mut self, content: Vec<ContentBlock>) -> u64 {
        let data = MessageData::new(Message::new("system", content));
        let event = NewEvent::message(SYSTEM_MESSAGE, data, SurfaceIntent::append());
        self.session.append(event).unwrap().seq
    }

    /// A compaction: a user message replacing `start..=end`, citing every node in between.
    pub fn compact(&mut self, start: u64, end: u64) -> u64 {
        let nodes = self.session.surface().nodes();
        let (i, j) = (
            self.session.surface().index_of(start).unwrap(),
            self.session.surface().index_of(end).unwrap(),
        );
        let sources = nodes[i..=j].to_vec();
        let data = MessageData::new(Message::user_text("summary"));
        let event = NewEvent::message(
            USER_MESSAGE,
            data,
            SurfaceIntent::replace(start, end, sources),
        );
        self.session.append(event).unwrap().seq
    }

    /// The surface as `0S"v1"`, `0S""`, `0S*` (not simple) and `1U`.
    pub fn surface(&self) -> Vec<String> {
        self.session
            .surface_events()
            .map(|e| match e.kind.as_str() {
                SYSTEM_MESSAGE => match e.message().and_then(Message::simple_text) {
                    Some(text) => format!("{}S{text:?}", e.seq),
                    None => format!("{}S*", e.seq),
                },
                _ => format!("{}U", e.seq),
            })
            .collect()
    }

    /// The wire messages as `role:text`.
    pub fn wire(&self) -> Vec<String> {
        self.session
            .derive_messages()
            .iter()
            .map(|m| {
                let role = m["role"].as_str().unwrap_or_default();
                match &m["content"] {
                    serde_json::Value::String(text) => format!("{role}:{text}"),
                    other => format!("{role}:{other}"),
                }
            })
            .collect()
    }

    /// Reopen the log from disk and check the replay rebuilds the same state.
    pub fn reopen(&mut self) {
        let (surface, wire, generation) = (
            self.surface(),
            self.wire(),
            self.session.surface().replace_generation(),
        );
        let path = self.session.path_buf();
        // The old handle must be closed first (the lock is per open file), so swap in a
        // scratch session while reopening.
        let scratch = Session::open(self.dir.path().join("scratch.jsonl"))
            .unwrap()
            .0;
        drop(std::mem::replace(&mut self.session, scratch));
        let (session, report) = Session::open(&path).unwrap();
        assert_eq!(report.recovered_torn_bytes, 0);
        self.session = session;
        assert_eq!(self.surface(), surface);
        assert_eq!(self.wire(), wire);
        assert_eq!(self.session.surface().replace_generation(), generation);
    }
}

/// `app("t")` or `rep(n,"t")`.
pub fn describe_commit(commit: &SystemPromptCommit) -> String {
    match commit.intent.surface_op {
        SurfaceOp::Append => format!("app({:?})", commit.text()),
        SurfaceOp::Replace { start_seq, .. } => format!("rep({start_seq},{:?})", commit.text()),
    }
}

/// Every commit: the intent is exactly an append, or a replace of the one node it names as
/// its source; content `[]` for empty text; and the plugin source.
pub fn check_shape(commit: &SystemPromptCommit) {
    let intent = serde_json::to_value(&commit.intent).unwrap();
    match commit.intent.surface_op {
        SurfaceOp::Append => assert_eq!(intent, json!({"surfaceOp": "append"})),
        SurfaceOp::Replace { start_seq, .. } => assert_eq!(
            intent,
            json!({"surfaceOp":{"op":"replace","startSeq":start_seq,"endSeq":start_seq},"sourceEventSeqs":[start_seq]})
        ),
    }
    let message = serde_json::to_value(&commit.message).unwrap();
    assert_eq!(message["role"], "system");
    assert_eq!(
        message["source"],
        json!({"kind":"plugin","plugin":"@deepseek-ai/dsh-system-prompt"})
    );
    if commit.text().is_empty() {
        assert_eq!(message["content"], json!([]));
    } else {
        assert_eq!(
            message["content"],
            json!([{"type":"text","text":commit.text()}])
        );
    }
}

/// Shorthand for expected lists.
pub fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|x| x.to_string()).collect()
}
