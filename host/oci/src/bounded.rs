//! The boundary around one exchange with a registry (a pull, a tag resolved, a push): its
//! whole time bounded, its cancellation reaching the network wait, and a panic inside it
//! turned into an error.
//!
//! `timeout_ms` bounds each connect and each read; a registry that sends one byte a second
//! never trips it. `total_timeout_ms` bounds the whole exchange — token, redirects,
//! manifest, component — whatever the pace. The exchange runs on a task of its own, aborted
//! when the caller's future is dropped (serve's `$/cancelRequest` drops it), which drops the
//! connection. A panic in a library on the way (the HTTP stack on a peer's input) ends the
//! task, not the process: it is reported as [`RegistryError::Failed`], so every request is
//! answered and the command line exits 1, never 101.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::{OciError, RegistryError};
use prompt_host_peer::shown;

/// What an exchange is, for its error: the operation, the reference, the registry.
pub(super) struct Exchange<'a> {
    /// "the pull", "resolving the tag", "the push".
    pub(super) operation: &'static str,
    /// The reference, as the error names it.
    pub(super) reference: &'a str,
    /// `host[:port]`.
    pub(super) registry: &'a str,
    /// `total_timeout_ms`.
    pub(super) limit: Duration,
}

/// Aborts its task when dropped: a caller that stops waiting stops the exchange.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Run `work` as `exchange`: on a task of the current Tokio runtime, within its limit.
pub(super) async fn run<T, F>(exchange: Exchange<'_>, work: F) -> Result<T, OciError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, OciError>> + Send + 'static,
{
    let failed = |error: RegistryError| OciError::registry(exchange.reference, error);
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(failed(RegistryError::NoRuntime));
    }
    let limit = exchange.limit;
    let mut task = AbortOnDrop(tokio::spawn(tokio::time::timeout(limit, work)));
    match (&mut task.0).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_elapsed)) => Err(failed(RegistryError::TimedOut {
            operation: exchange.operation,
            registry: exchange.registry.to_owned(),
            limit_ms: limit.as_millis(),
        })),
        Err(join) => {
            let message = if join.is_panic() {
                let payload = join.into_panic();
                let text = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".into());
                shown(&text)
            } else {
                // Aborted from outside: the runtime is shutting down.
                "the runtime stopped it".into()
            };
            Err(failed(RegistryError::Failed {
                registry: exchange.registry.to_owned(),
                message,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn exchange(limit: Duration) -> Exchange<'static> {
        Exchange {
            operation: "the pull",
            reference: "oci://127.0.0.1:5000/a:1",
            registry: "127.0.0.1:5000",
            limit,
        }
    }

    #[test]
    fn outside_a_runtime_it_is_an_error_not_a_panic() {
        let outcome = futures_block_on(run(exchange(Duration::from_secs(1)), async { Ok(1) }));
        assert_eq!(
            outcome.err().map(|e| e.to_string()).unwrap_or_default(),
            "oci://127.0.0.1:5000/a:1: the registry client runs inside a Tokio runtime (with time and I/O enabled); there is none on this thread"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_becomes_an_error_and_the_whole_exchange_is_bounded() {
        let panicked = run(exchange(Duration::from_secs(60)), async {
            if true {
                panic!("header\n\u{1b}[2Jvalue");
            }
            Ok(())
        })
        .await;
        assert_eq!(
            panicked.err().map(|e| e.to_string()).unwrap_or_default(),
            "oci://127.0.0.1:5000/a:1: the registry client failed while talking to 127.0.0.1:5000: header\\n\\u{1b}[2Jvalue"
        );
        let slow = run(exchange(Duration::from_millis(20)), async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        })
        .await;
        assert_eq!(
            slow.err().map(|e| e.to_string()).unwrap_or_default(),
            "oci://127.0.0.1:5000/a:1: the pull did not complete within total_timeout_ms = 20 (the whole exchange with the registry 127.0.0.1:5000); stopped"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn dropping_the_caller_aborts_the_exchange() {
        struct SetOnDrop(Arc<AtomicBool>);
        impl Drop for SetOnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = SetOnDrop(dropped.clone());
        let started = Arc::new(tokio::sync::Notify::new());
        let signal = started.clone();
        let caller = run(exchange(Duration::from_secs(3600)), async move {
            let _held = flag;
            signal.notify_one();
            std::future::pending::<()>().await;
            Ok(())
        });
        tokio::select! {
            _ = caller => unreachable!("the work never ends"),
            () = started.notified() => {}
        }
        // The caller's future is dropped here; the task is aborted and its state dropped.
        for _ in 0..100 {
            if dropped.load(Ordering::SeqCst) {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the exchange kept running after its caller went away");
    }

    /// Poll `future` to completion on this thread, outside any runtime.
    fn futures_block_on<F: Future>(future: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut future = std::pin::pin!(future);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
        }
    }
}
