//! [`InProcessServer::call`](crate::InProcessServer): a request answered to its caller in
//! this process, its result handed over as Python objects built from the host's own values.
//!
//! The request goes through the server as a line's would ([`Server::call`]: the same
//! envelope checks, the same session queue and state, the same errors), but the caller's
//! thread waits for it with the GIL released, and a step's result becomes Python objects
//! directly, without a JSON text in between — all but its request, which is handed over as
//! a [`StepRequest`] and converted when it is read.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use prompt_host::prompt::CancelToken;
use prompt_host_serve::{Answer, RpcError, Server, StepResultView};

use crate::step_request::StepRequest;

/// How a call was answered, for the Python side: a result as objects (a step's with its
/// `request` a [`StepRequest`]), a result as JSON text (the small ones), or an error object
/// as JSON text.
pub const RESULT_OBJECT: u8 = 0;
/// See [`RESULT_OBJECT`].
pub const RESULT_JSON: u8 = 1;
/// See [`RESULT_OBJECT`].
pub const ERROR_JSON: u8 = 2;

/// Where the server is, for calls: being built, serving, or gone; and the calls running on
/// callers' threads, which the server waits for before its runtime goes (as `serve` answers
/// the requests in flight when its input closes).
#[derive(Default)]
pub struct Slot {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    phase: Phase,
    /// The cancel token of each call running now, by its number.
    running: HashMap<u64, CancelToken>,
    next: u64,
}

#[derive(Default)]
enum Phase {
    #[default]
    Starting,
    Ready(Arc<Server>),
    Stopped,
}

/// A call counted as running; it leaves the count when dropped.
struct Running<'a> {
    slot: &'a Slot,
    number: u64,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.slot.lock().running.remove(&self.number);
        self.slot.changed.notify_all();
    }
}

impl Slot {
    pub fn ready(&self, server: Arc<Server>) {
        self.lock().phase = Phase::Ready(server);
        self.changed.notify_all();
    }

    /// No call starts any more; with `cancel`, those running are cancelled (a kill). Waits
    /// at most `limit` for the running ones to end.
    pub fn stop(&self, cancel: bool, limit: Duration) {
        let mut state = self.lock();
        state.phase = Phase::Stopped;
        if cancel {
            state.running.values().for_each(CancelToken::cancel);
        }
        self.changed.notify_all();
        let _ = self
            .changed
            .wait_timeout_while(state, limit, |s| !s.running.is_empty())
            .unwrap_or_else(PoisonError::into_inner);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The server once it is built, with the call counted as running; `None` if it never was
    /// or stopped.
    fn enter(&self, signal: &CancelToken) -> Option<(Arc<Server>, Running<'_>)> {
        let state = self.lock();
        let mut state = self
            .changed
            .wait_while(state, |s| matches!(s.phase, Phase::Starting))
            .unwrap_or_else(PoisonError::into_inner);
        let Phase::Ready(server) = &state.phase else {
            return None;
        };
        let server = Arc::clone(server);
        let number = state.next;
        state.next += 1;
        state.running.insert(number, signal.clone());
        Some((server, Running { slot: self, number }))
    }
}

/// Run the request `line`; `(kind, payload, lines)` with `lines` the lines queued for the
/// output before the answer (the caller delivers those first), or `None` when the server is
/// not running (or stopped before answering). The call runs on this thread, the GIL released;
/// Ctrl-C while it waits for its session's turn cancels it and is raised once it has ended
/// (a request already running is not interrupted: plugin deadlines bound it).
pub fn call<'py>(
    py: Python<'py>,
    slot: &Slot,
    handle: &tokio::runtime::Handle,
    line: String,
) -> PyResult<Option<(u8, Bound<'py, PyAny>, u64)>> {
    let signal = CancelToken::new();
    let Some((server, running)) = py.detach(|| slot.enter(&signal)) else {
        return Ok(None);
    };
    // Ctrl-C while the call waits for its session's turn: checked with the GIL taken back
    // for the moment, kept, and raised once the call has ended (cancelled).
    let interrupt: Mutex<Option<PyErr>> = Mutex::new(None);
    let interrupted = || {
        let mut slot = interrupt.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                *slot = Some(e);
            }
        }
        slot.is_some()
    };
    let answered = py.detach(|| server.call(handle, &line, &signal, &interrupted));
    if let Some(e) = interrupt
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        return Err(e);
    }
    drop(running);
    let Some(answer) = answered else {
        return Ok(None);
    };
    let lines = server.lines_queued();
    let (kind, payload) = match answer {
        Ok(Answer::Step(outcome)) => {
            // Everything but the request becomes objects now; the request (most of the
            // result) waits as the host's value until Python reads it.
            let objects = pythonize::pythonize(py, &StepResultView::without_request(&outcome))
                .map_err(|e| {
                    pyo3::exceptions::PyRuntimeError::new_err(format!(
                        "cannot hand the step's result to Python: {e}"
                    ))
                });
            let request = Bound::new(py, StepRequest::new(outcome))?;
            let objects = objects?;
            // `without_request` leaves the request's place (after `step`, as on a line) null;
            // a dict keeps a key's place when its value is replaced.
            let result = objects.cast_into::<PyDict>().map_err(PyErr::from)?;
            result.set_item("request", &request)?;
            (RESULT_OBJECT, result.into_any())
        }
        Ok(Answer::Json(raw)) => (RESULT_JSON, PyString::new(py, raw.get()).into_any()),
        Err(e) => (ERROR_JSON, PyString::new(py, &error_json(&e)).into_any()),
    };
    Ok(Some((kind, payload, lines)))
}

/// The JSON-RPC error object of `e`, as a line's answer carries it.
fn error_json(e: &RpcError) -> String {
    serde_json::to_string(&e.to_value()).unwrap_or_else(|_| {
        format!(
            r#"{{"code":{},"message":"the error could not be written"}}"#,
            e.code
        )
    })
}
