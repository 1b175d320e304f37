//! Explicit request control: a token an embedder cancels to stop an assembly in flight.
//!
//! The assembly checks it between providers; a Wasm call in progress checks it at every
//! epoch tick and in every host wait (sleeps, polls, random bytes), so a cancelled assembly
//! ends within about a tick even while a plugin is in a busy loop or a WASI sleep.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A cancellation token: cheap to clone, every clone sees the same state.
#[derive(Clone, Default)]
pub struct CancelToken(Arc<Inner>);

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel: every holder sees it, every waiter wakes. Idempotent.
    pub fn cancel(&self) {
        if !self.0.cancelled.swap(true, Ordering::SeqCst) {
            self.0.notify.notify_waiters();
        }
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Wait until the token is cancelled.
    pub async fn cancelled(&self) {
        loop {
            // Registered before the check, so a cancel between the two still wakes us.
            let notified = self.0.notify.notified();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }

    /// A guard that cancels this token when dropped, unless disarmed: an `async` call that
    /// is dropped before it completes cancels the work it started.
    pub fn drop_guard(&self) -> CancelOnDrop {
        CancelOnDrop(Some(self.clone()))
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CancelToken")
            .field(&self.is_cancelled())
            .finish()
    }
}

/// Cancels its token on drop unless [`CancelOnDrop::disarm`]ed.
#[must_use = "dropping the guard at once cancels the token"]
pub struct CancelOnDrop(Option<CancelToken>);

impl CancelOnDrop {
    /// The work finished: dropping the guard no longer cancels.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancel_wakes_waiters_and_is_seen_by_clones() {
        let token = CancelToken::new();
        let clone = token.clone();
        let waiter = tokio::spawn(async move { clone.cancelled().await });
        tokio::task::yield_now().await;
        assert!(!token.is_cancelled());
        token.cancel();
        waiter.await.unwrap();
        assert!(token.is_cancelled());
        // Already cancelled: returns at once.
        token.cancelled().await;
    }

    #[test]
    fn a_dropped_guard_cancels_a_disarmed_one_does_not() {
        let token = CancelToken::new();
        token.drop_guard().disarm();
        assert!(!token.is_cancelled());
        drop(token.drop_guard());
        assert!(token.is_cancelled());
    }
}
