//! One loop step over a session log, from already-rendered strings to the model request.
//!
//! Event order: `step/start`, the system-prompt commits, the user's messages, the
//! runtime-context snapshot (claimed input first, snapshot at the tail), `request/context`
//! when the route, model or options changed, `request/header` when it is new or the series
//! started, `step/end`. The request is derived from the log.
//! The events go out in one durable write (one sync however many messages the user sent, one
//! transaction in a shared store): they are staged in the session as they are decided — the
//! snapshot and header depend on the step's input — then written together, so that no
//! reader, and no other writer of a shared store, ever sees half a step.
//!
//! `startsSeries` is the OR of: the caller's flag; the tools differing (canonical JSON
//! equality) from the last logged header; and the surface having been replaced since the last
//! step's request (`step/end` records the replace generation the request was built at, so the
//! term survives a restart of the loop).

use serde_json::{json, Map, Value};

use super::runtime_context::RuntimeContextProjection;
use super::system_prompt::{AdmissionFlags, SystemPromptCommit, SystemPromptProjection};
use crate::prompt::{NamedText, ToolSchema};
use crate::session::event::{
    NewEvent, REQUEST_CONTEXT, REQUEST_HEADER, STEP_END, STEP_START, USER_MESSAGE,
};
use crate::session::replay::context_in_force;
use crate::session::route::RouteContext;
use crate::session::{
    AppendError, EventData, Message, MessageData, ModelRequest, Session, SurfaceIntent,
};

/// Where one section of the rendered prompt lies, and which plugin wrote it: what a system
/// commit records (`sections` in its `system/message` data), so that a session's timeline
/// can name the plugin whose change broke the prompt-cache prefix at a step.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SectionOrigin {
    /// The section's name.
    pub name: String,
    /// The plugin that registered it (`(listener)` for one a listener added).
    pub plugin: String,
    /// Its first byte in the prompt.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
}

/// Who wrote each section of a step's prompt, asked only when a commit writes that prompt.
pub type SectionOrigins<'a> = &'a (dyn Fn() -> Vec<SectionOrigin> + Sync);

/// The rendered inputs of one step.
#[derive(Clone, Copy)]
pub struct StepInput<'a> {
    /// `renderPrompt(assembly)`.
    pub rendered_prompt: &'a str,
    /// `renderContextSections(assembly)`: the non-empty rendered contexts.
    pub context_sections: &'a [NamedText],
    /// `joinContextSections(context_sections)`: `""` when no context applies.
    pub context_snapshot: &'a str,
    /// The assembled tools, in canonical order.
    pub tools: &'a [ToolSchema],
    /// The route the request is prepared for (its `in_history` decides the projection).
    pub route: &'a RouteContext,
    /// The caller declares a new request series.
    pub starts_series: bool,
    /// The user's input for this step.
    pub user_texts: &'a [String],
    /// This step retries step N (logged as `retryOf` in `step/start`).
    pub retry_of: Option<u64>,
    /// Who wrote each section of `rendered_prompt`; `None` records nothing.
    pub origins: Option<SectionOrigins<'a>>,
}

impl std::fmt::Debug for StepInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepInput")
            .field("rendered_prompt", &self.rendered_prompt)
            .field("context_sections", &self.context_sections)
            .field("context_snapshot", &self.context_snapshot)
            .field("tools", &self.tools)
            .field("route", &self.route)
            .field("starts_series", &self.starts_series)
            .field("user_texts", &self.user_texts)
            .field("retry_of", &self.retry_of)
            .field("origins", &self.origins.is_some())
            .finish()
    }
}

/// Why a `request/header` was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderReason {
    /// The log's first header.
    Initial,
    /// This loop instance's first request, on a log that already holds a header (it was
    /// opened again: a restarted process, a reopened session).
    Resume,
    /// The canonical header changed.
    Change,
    /// The header is unchanged but a new series started.
    Series,
}

impl HeaderReason {
    /// The logged `reason` text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Initial => "initial",
            Self::Resume => "resume",
            Self::Change => "change",
            Self::Series => "series",
        }
    }
}

/// What one step did.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    /// The request, derived from the log after the step's commits.
    pub request: ModelRequest,
    /// The system-prompt commits, in commit order.
    pub commits: Vec<SystemPromptCommit>,
    /// The seq each commit received (parallel to `commits`).
    pub commit_seqs: Vec<u64>,
    /// The seq of the runtime-context snapshot, when one was appended.
    pub snapshot_seq: Option<u64>,
    /// The effective `startsSeries`.
    pub starts_series: bool,
    /// The header logged, if any.
    pub header: Option<HeaderReason>,
    /// This step's number (0-based count of earlier `step/start` events).
    pub step: u64,
    /// The route the request was prepared for.
    pub route: RouteContext,
    /// The token counts recorded with the newest reply before this step, if any: what the
    /// provider reported for the previous request (cached input beside the prediction of
    /// the cache-prefix report).
    pub last_usage: Option<crate::session::Usage>,
}

/// Run one step on `session`: its events are written as one durable write, visible together
/// or not at all (in a shared store, one conditional append). On an error nothing of the
/// step is written.
pub fn run_step(session: &mut Session, input: &StepInput<'_>) -> Result<StepOutcome, AppendError> {
    run_step_checked(session, input, |_| Ok::<(), std::convert::Infallible>(())).map_err(
        |e| match e {
            StepRefused::Append(e) => e,
            StepRefused::Check(never) => match never {},
        },
    )
}

/// Why [`run_step_checked`] wrote nothing.
#[derive(Debug)]
pub enum StepRefused<E> {
    /// The log refused or failed the write.
    Append(AppendError),
    /// The caller's check refused the request.
    Check(E),
}

/// [`run_step`], with `check` looking at the step's request before anything is written: a
/// refusal leaves the log and the session as they were (a request over a token budget is
/// never logged as sent).
pub fn run_step_checked<E>(
    session: &mut Session,
    input: &StepInput<'_>,
    check: impl FnOnce(&StepOutcome) -> Result<(), E>,
) -> Result<StepOutcome, StepRefused<E>> {
    session.stage();
    let staged = stage_step(session, input)
        .map_err(StepRefused::Append)
        .and_then(|outcome| {
            check(&outcome)
                .map(|()| outcome)
                .map_err(StepRefused::Check)
        });
    match staged {
        Ok(outcome) => {
            session.commit_staged().map_err(StepRefused::Append)?;
            Ok(outcome)
        }
        Err(e) => {
            session.abort_staged();
            Err(e)
        }
    }
}

fn stage_step(session: &mut Session, input: &StepInput<'_>) -> Result<StepOutcome, AppendError> {
    let step = session
        .events()
        .iter()
        .filter(|e| e.kind == STEP_START)
        .count() as u64;
    let header = json_header(input.tools);
    let last_header = last_logged_header(session);
    let tools_changed = last_header.as_ref().is_some_and(|h| *h != header);
    let generation_moved = last_request_generation(session)
        .is_some_and(|g| g != session.surface().replace_generation());
    let starts_series = input.starts_series || tools_changed || generation_moved;
    let flags = AdmissionFlags {
        in_history: input.route.in_history,
        starts_series,
    };

    // Tool schemas nested deeper than a log line is read back are refused before anything
    // of the step is written (the header would be refused only after the step's input).
    let header_event = |reason: HeaderReason, header: Value| {
        let mut data = Map::new();
        data.insert("reason".into(), reason.as_str().into());
        data.insert("header".into(), header);
        if starts_series && reason == HeaderReason::Change {
            data.insert("startsSeries".into(), true.into());
        }
        NewEvent::log(REQUEST_HEADER, Value::Object(data))
    };
    let next_seq = session.events().len() as u64;
    let context_event = (context_in_force(session.events()) != *input.route)
        .then(|| NewEvent::log(REQUEST_CONTEXT, input.route.to_log()));
    let probes = std::iter::once(header_event(HeaderReason::Initial, header.clone()))
        .chain(context_event.clone());
    for probe in probes {
        let probe = probe.into_event(next_seq, 0);
        crate::session::depth::check(&probe).map_err(|source| AppendError::Invalid {
            path: session.path_buf(),
            seq: next_seq,
            error: source,
        })?;
    }

    let start = match input.retry_of {
        Some(of) => json!({ "step": step, "retryOf": of }),
        None => json!({ "step": step }),
    };
    // The step's first batch: its start, the system-prompt commits and the user's input.
    let commits = SystemPromptProjection::new(session).project(input.rendered_prompt, flags);
    let mut first_write = Vec::with_capacity(1 + commits.len() + input.user_texts.len());
    first_write.push(NewEvent::log(STEP_START, start));
    // A commit that writes the prompt records who wrote each of its sections.
    let origins = match input.origins {
        Some(origins) if commits.iter().any(|c| !c.text().is_empty()) => Some(origins()),
        _ => None,
    };
    first_write.extend(
        commits
            .iter()
            .map(|commit| commit.to_event_with(Some(step), origins.as_deref())),
    );
    for text in input.user_texts {
        let data = MessageData::new(Message::user_text(text.as_str())).at_step(step);
        first_write.push(NewEvent::message(
            USER_MESSAGE,
            data,
            SurfaceIntent::append(),
        ));
    }
    let written = session.append_all(first_write)?;
    let commit_seqs: Vec<u64> =
        (written.start + 1..written.start + 1 + commits.len() as u64).collect();

    // Restored from the log so the decision matches what a fresh process would make.
    let runtime = RuntimeContextProjection::restore(session);
    let mut second_write = Vec::with_capacity(4);
    let mut snapshot_seq = None;
    if let Some(message) = runtime.project(input.context_snapshot, input.context_sections) {
        let data = MessageData::new(message).at_step(step);
        snapshot_seq = Some(session.events().len() as u64);
        second_write.push(NewEvent::message(
            USER_MESSAGE,
            data,
            SurfaceIntent::append(),
        ));
    }

    // The route, model and options the request is prepared with, when they changed: what
    // replay rebuilds the request with.
    second_write.extend(context_event);

    // This instance's first request logs a header whatever changed.
    let first_of_instance = !session
        .appended_events()
        .iter()
        .any(|e| e.kind == REQUEST_HEADER);
    let reason = match &last_header {
        None => Some(HeaderReason::Initial),
        Some(_) if first_of_instance => Some(HeaderReason::Resume),
        Some(previous) if *previous != header => Some(HeaderReason::Change),
        Some(_) if starts_series => Some(HeaderReason::Series),
        Some(_) => None,
    };
    if let Some(reason) = reason {
        second_write.push(header_event(reason, header));
    }

    // The snapshot and the header change no replace generation: step/end records the one
    // the request is built at.
    let generation = session.surface().replace_generation();
    second_write.push(NewEvent::log(
        STEP_END,
        json!({ "step": step, "replaceGeneration": generation }),
    ));
    session.append_all(second_write)?;

    Ok(StepOutcome {
        request: ModelRequest::derive(session, input.tools, input.route),
        commits,
        commit_seqs,
        snapshot_seq,
        starts_series,
        header: reason,
        step,
        route: input.route.clone(),
        last_usage: crate::session::conversation::last_usage(session),
    })
}

/// The canonical header: `{tools}` with an empty list omitted.
fn json_header(tools: &[ToolSchema]) -> Value {
    let mut header = Map::new();
    if !tools.is_empty() {
        header.insert(
            "tools".into(),
            serde_json::to_value(tools).unwrap_or(Value::Null),
        );
    }
    Value::Object(header)
}

/// The header of the newest `request/header` event.
fn last_logged_header(session: &Session) -> Option<Value> {
    session
        .events()
        .iter()
        .rev()
        .find(|e| e.kind == REQUEST_HEADER)
        .and_then(|e| match &e.data {
            EventData::Other(data) => data.get("header").cloned(),
            EventData::Message(_) => None,
        })
}

/// The replace generation the previous step's request was built at.
fn last_request_generation(session: &Session) -> Option<u64> {
    session
        .events()
        .iter()
        .rev()
        .find(|e| e.kind == STEP_END)
        .and_then(|e| match &e.data {
            EventData::Other(data) => data.get("replaceGeneration").and_then(Value::as_u64),
            EventData::Message(_) => None,
        })
}

#[cfg(test)]
#[path = "step/tests.rs"]
mod tests;
