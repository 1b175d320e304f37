//! Calls from a client in the same process ([`Server::call`]): a request line parsed and run
//! exactly as [`Server::serve`] runs it — the same envelope checks, the same session queue
//! and state, the same errors — but run on the caller's own thread and answered with the
//! method's [`Answer`] itself instead of a line on the output. The Python package's
//! in-process host takes its steps this way: the request is handed over as objects built from
//! the host's own values, without a JSON text in between and without the threads a line
//! passes through.
//!
//! What such a call leaves out, because the caller waits for it: an id (it cannot be
//! cancelled with `$/cancelRequest`, though it can send one for a line's request; its
//! `signal` cancels it) and a batch.

use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;

use super::envelope::{self, Call, Input};
use super::methods::{self, Answer, SessionState};
use super::{cancelled, code, session_of, Responder, RpcError, Server};
use prompt_host::prompt::CancelToken;

impl Server {
    /// Run the request `line` (one JSON-RPC request object) for a caller in this process, on
    /// the caller's own thread (which it blocks), cancelled by `signal`: its answer, or `None`
    /// if the server stopped first. A request naming a session waits for its turn on that
    /// session's queue, in order with the lines' requests, and then runs here with the
    /// session's state: taken from the session's shelf when its worker waits with nothing
    /// queued (no thread is woken), else lent by the worker in turn.
    /// The others run on a task of the runtime, as a line's do.
    /// `interrupted` is asked every [`TURN_POLL`] while the caller waits (for the session's
    /// turn, or for the task); `true` cancels the request. `handle` is the server's runtime;
    /// call this outside it.
    pub fn call(
        self: &Arc<Self>,
        handle: &tokio::runtime::Handle,
        line: &str,
        signal: &CancelToken,
        interrupted: &dyn Fn() -> bool,
    ) -> Option<Result<Answer, RpcError>> {
        let mut call = match envelope::parse_line(line) {
            Input::Single(Ok(call)) => call,
            Input::Single(Err(refused)) => return Some(Err(refused.error)),
            Input::Batch(_) => {
                return Some(Err(RpcError::new(
                    code::INVALID_REQUEST,
                    "invalid request: a batch cannot be called in process; send it as a line",
                )))
            }
            Input::Invalid(e) => return Some(Err(e)),
        };
        if call.method == "$/cancelRequest" {
            // As a line's: the request it names (a line's, by its id) is cancelled; `{}`.
            self.cancel_named(&call);
            return Some(methods::raw(&serde_json::json!({})).map(Answer::Json));
        }
        // Without an id nothing else can cancel it.
        call.signal = signal.clone();
        let path = match session_of(&mut call, self.host()) {
            Some(Ok(path)) => Some(path),
            Some(Err(e)) => return Some(Err(e)),
            None => None,
        };
        let Some(path) = path else {
            // On a task of the runtime, as a line's: a plugin's `init` may block there.
            let (done, answered) = std::sync::mpsc::channel();
            let me = Arc::clone(self);
            let _runtime = handle.enter();
            tokio::spawn(async move {
                let _ = done.send(me.run_direct(call, &mut SessionState::default()).await);
            });
            return wait_for(&answered, signal, interrupted);
        };
        if let Some(answer) = self.close_unheld(&path, &call) {
            return Some(answer.map(Answer::Json));
        }
        let call = match self.run_on_shelved_state(&path, handle, call) {
            Ok(answer) => return Some(answer),
            Err(call) => call,
        };
        let (lend, lent) = std::sync::mpsc::channel();
        {
            let _runtime = handle.enter();
            if let Err(refused) = self.queue(path, (call, Responder::Lend(lend))) {
                let (_, e) = *refused;
                return Some(Err(e));
            }
        }
        let Lent {
            call,
            mut state,
            give_back,
            idle,
        } = wait_for(&lent, signal, interrupted)?;
        // As on the blocking thread a line's session request runs on.
        let mut answer = prompt_host::blocking::allow_blocking(|| {
            handle.block_on(self.run_direct(call, &mut state))
        });
        idle.store(state.is_idle(), std::sync::atomic::Ordering::Release);
        state.leave_with(&mut answer);
        let _ = give_back.send(state);
        Some(answer)
    }

    /// Run `call` here with the session's state taken from its shelf, if it lies there with
    /// no job queued ahead (see [`super::shelf`]); `call` back otherwise.
    #[allow(clippy::result_large_err)]
    fn run_on_shelved_state(
        self: &Arc<Self>,
        path: &std::path::Path,
        handle: &tokio::runtime::Handle,
        call: Call,
    ) -> Result<Result<Answer, RpcError>, Call> {
        let taken = {
            let sessions = self.lock_sessions();
            sessions.get(path).and_then(|queue| {
                let borrowed = queue.shelf.borrow()?;
                queue.idle.store(false, Ordering::Release);
                Some((borrowed, queue.serial, Arc::clone(&queue.idle)))
            })
        };
        let Some((mut borrowed, serial, idle)) = taken else {
            return Err(call);
        };
        let state = borrowed.state();
        let mut answer =
            prompt_host::blocking::allow_blocking(|| handle.block_on(self.run_direct(call, state)));
        let now_idle = state.is_idle();
        let held = state.held_bytes();
        idle.store(now_idle, Ordering::Release);
        state.leave_with(&mut answer);
        drop(borrowed);
        if now_idle {
            // The session holds nothing: its worker ends, as after a line's last request.
            self.retire_if_idle(path, serial);
        } else {
            self.keep_within_cache(path, serial, held);
        }
        Ok(answer)
    }

    /// Run `call` to its answer, for [`Server::call`].
    pub(super) async fn run_direct(
        self: &Arc<Self>,
        call: Call,
        state: &mut SessionState,
    ) -> Result<Answer, RpcError> {
        if call.signal.is_cancelled() {
            return Err(cancelled());
        }
        if !call.params.is_object() {
            return Err(RpcError::params("expected an object"));
        }
        self.dispatch_guarded(state, call).await
    }

    /// How many lines (answers and notifications) were queued for the output so far. An
    /// in-process client that also reads the output delivers the lines before a call's
    /// answer first, as a line's answer would come after them.
    pub fn lines_queued(&self) -> u64 {
        self.lines_queued.load(Ordering::Acquire)
    }
}

/// What arrives on `channel`, asking `interrupted` every [`TURN_POLL`] meanwhile (`true`
/// cancels the call through `signal`: it still ends, at once); `None` if the sender went away
/// (the server stopped).
fn wait_for<T>(
    channel: &std::sync::mpsc::Receiver<T>,
    signal: &CancelToken,
    interrupted: &dyn Fn() -> bool,
) -> Option<T> {
    loop {
        match channel.recv_timeout(TURN_POLL) {
            Ok(value) => return Some(value),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => {
                if interrupted() {
                    signal.cancel();
                }
            }
        }
    }
}

/// How often a call waiting for its session's turn asks whether it was interrupted.
pub const TURN_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// A session's request and state, lent by the session's worker to the caller that runs it
/// ([`Server::call`]); the state comes back through `give_back`.
pub(super) struct Lent {
    pub(super) call: Call,
    pub(super) state: SessionState,
    pub(super) give_back: tokio::sync::oneshot::Sender<SessionState>,
    /// Set to whether the request left the session holding nothing, before its answer is
    /// returned (see `SessionQueue::idle`).
    pub(super) idle: Arc<std::sync::atomic::AtomicBool>,
}

#[cfg(test)]
mod tests;
