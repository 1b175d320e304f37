//! Rebuilding a past step's model request from the log alone.
//!
//! A request is a pure function of the log: its messages are the surface as it stood when
//! the step ended (`step/end`), derived as for a live step; its tools are the canonical
//! header in force then (the newest `request/header` at or before that `step/end` — a step
//! logs one whenever its tools differ from the previous header); its route, model and
//! options are the `request/context` in force then. So a request returned by a step, by a
//! retry, or by another process writing the same log is rebuilt byte for byte.

use serde_json::Value;
use thiserror::Error;

use super::derive::ModelRequest;
use super::event::{EventData, REQUEST_CONTEXT, REQUEST_HEADER, STEP_END};
use super::route::RouteContext;
use super::{Session, Surface};
use crate::prompt::ToolSchema;

/// Why a request could not be rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The log has no completed step of that number.
    #[error("session log {path} has no completed step {step}; completed steps: {}", completed_steps(*completed))]
    NoSuchStep {
        /// The log file.
        path: String,
        /// The step asked for.
        step: u64,
        /// How many steps completed.
        completed: u64,
    },
    /// The log has no completed step at all.
    #[error("session log {path} has no completed step yet")]
    NoSteps {
        /// The log file.
        path: String,
    },
    /// A logged header does not hold a tool list this build can read.
    #[error("session log {path}: the request/header at seq {seq} holds no readable tool list: {message}")]
    BadHeader {
        /// The log file.
        path: String,
        /// The header event.
        seq: u64,
        /// What is wrong.
        message: String,
    },
}

fn completed_steps(n: u64) -> String {
    match n {
        0 => "none".to_string(),
        1 => "0".to_string(),
        n => format!("0 to {}", n - 1),
    }
}

/// The request step `step` returned (the newest completed step when `None`), and its number.
pub fn request_at(
    session: &Session,
    step: Option<u64>,
) -> Result<(u64, ModelRequest), ReplayError> {
    let path = session.path().display().to_string();
    let ends: Vec<(u64, u64)> = session
        .events()
        .iter()
        .filter(|e| e.kind == STEP_END)
        .filter_map(|e| Some((step_number(&e.data)?, e.seq)))
        .collect();
    let completed = ends.len() as u64;
    let (step, end_seq) = match step {
        None => *ends
            .last()
            .ok_or(ReplayError::NoSteps { path: path.clone() })?,
        Some(n) => *ends
            .iter()
            .find(|(s, _)| *s == n)
            .ok_or(ReplayError::NoSuchStep {
                path: path.clone(),
                step: n,
                completed,
            })?,
    };
    let end = usize::try_from(end_seq).unwrap_or(usize::MAX);
    let events = &session.events()[..=end.min(session.events().len() - 1)];
    let mut surface = Surface::default();
    for (index, event) in events.iter().enumerate() {
        // Every event already passed these checks when it was appended or replayed.
        if let Ok(plan) = surface.plan(event, &events[..index]) {
            surface.apply(plan);
        }
    }
    let tools = match events.iter().rev().find(|e| e.kind == REQUEST_HEADER) {
        Some(header) => header_tools(&header.data).map_err(|message| ReplayError::BadHeader {
            path,
            seq: header.seq,
            message,
        })?,
        None => Vec::new(),
    };
    let route = context_in_force(events);
    Ok((
        step,
        ModelRequest::derive_from(events, &surface, &tools, &route),
    ))
}

/// The route context the newest readable `request/context` of `events` logged (the default,
/// `chat-completions` with no model, when there is none).
pub fn context_in_force(events: &[super::Event]) -> RouteContext {
    events
        .iter()
        .rev()
        .filter(|e| e.kind == REQUEST_CONTEXT)
        .find_map(|e| match &e.data {
            EventData::Other(data) => RouteContext::from_log(data),
            EventData::Message(_) => None,
        })
        .unwrap_or_default()
}

/// The number of the newest completed step, if any.
pub fn last_step(session: &Session) -> Option<u64> {
    session
        .events()
        .iter()
        .rev()
        .find(|e| e.kind == STEP_END)
        .and_then(|e| step_number(&e.data))
}

fn step_number(data: &EventData) -> Option<u64> {
    match data {
        EventData::Other(value) => value.get("step").and_then(Value::as_u64),
        EventData::Message(_) => None,
    }
}

fn header_tools(data: &EventData) -> Result<Vec<ToolSchema>, String> {
    let EventData::Other(value) = data else {
        return Err("not a header".into());
    };
    match value.get("header").and_then(|h| h.get("tools")) {
        None => Ok(Vec::new()),
        Some(tools) => serde_json::from_value(tools.clone()).map_err(|e| e.to_string()),
    }
}
