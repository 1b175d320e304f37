//! The request-level boundary: whatever panics while a method runs — a third-party crate
//! choking on a peer's or a plugin's input, or a defect of the host's own — ends that request
//! with an `internal` error naming it, and the server goes on serving the others. Without it
//! the panic ended the task that held the request's answer, and the request was never
//! answered (a client waited forever; the in-process Python host took the dropped answer for
//! a server that had exited).
//!
//! A panic is caught where the method's future is polled, so it is caught on whichever
//! thread polls it: a task of the runtime, a session's blocking thread, or an in-process
//! caller's own thread. A blocking pool thread that panics inside an assembly hands its
//! panic back to that future (`blocking::run`), so it is caught here too.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::json;

use super::error::{code, RpcError};

/// `future`, with a panic while it is polled returned as its payload instead of unwinding
/// through the caller.
pub(super) struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> CatchUnwind<F> {
    pub(super) fn new(future: F) -> Self {
        CatchUnwind(Box::pin(future))
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        // The future is dropped after a panic, never polled again, so whatever state it was
        // left in is not observed through it.
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// The text a panic carried (escaped and capped: it may quote a plugin's or a peer's input).
pub(crate) fn panic_text(panic: &(dyn Any + Send)) -> String {
    let text = if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "(no message)".to_owned()
    };
    prompt_host::peer::shown(&text)
}

/// The answer to a request whose method panicked: code -32603, kind `internal`, naming the
/// method (and the session, for a session's request, whose state is then dropped and read
/// again from its log by the next request).
pub(super) fn internal_error(
    method: &str,
    session: Option<&std::path::Path>,
    panic: &(dyn Any + Send),
) -> RpcError {
    let on = match session {
        Some(path) => format!(
            " on session log {}",
            prompt_host::session::display_name(path)
        ),
        None => String::new(),
    };
    let mut data = json!({"kind": "internal"});
    if let Some(path) = session {
        data["session"] = json!(prompt_host::session::display_name(path));
    }
    RpcError {
        code: code::INTERNAL,
        message: format!(
            "internal error: {method}{on} failed inside the host ({}); the request was not completed and the server goes on",
            panic_text(panic)
        ),
        data: Some(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_future_becomes_its_payload() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let caught = runtime.block_on(CatchUnwind::new(async {
            tokio::task::yield_now().await;
            panic!("choked on \u{1b}[2J input");
        }));
        let panic = caught.expect_err("the panic");
        let e = internal_error("render", None, &*panic);
        assert_eq!(e.code, -32603);
        assert_eq!(
            e.message,
            "internal error: render failed inside the host (choked on \\u{1b}[2J input); the request was not completed and the server goes on"
        );
        assert_eq!(e.data, Some(json!({"kind": "internal"})));
        let fine = runtime.block_on(CatchUnwind::new(async { 7 }));
        assert_eq!(fine.ok(), Some(7));
    }
}
