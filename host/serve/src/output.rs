//! The server's output: lines waiting to be written, with a bound on how many bytes may wait.
//!
//! A client that stops reading its answers would otherwise make the server keep every answer
//! it produces (400 unread 500 KB answers took 274 MB). The reader stops taking requests in
//! while more than the budget waits to be written, and only a bounded number of requests runs
//! at once (`serve.rs`), so what waits is at most the budget plus the answers of the requests
//! already running. Notifications, which the server makes on its own, are dropped (and
//! counted) while the output is over its budget: nothing is kept for a client that does not
//! read.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::{mpsc, Notify};

/// Default of `serve --max-output-bytes`: 16 MiB waiting to be written.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 16 << 20;

/// Lines on their way to the client. The writer drains `lines`; it holds only the
/// [`Pending`] count, so the line channel closes once every sender (the reader, the
/// notifier, requests still running) is gone.
pub(crate) struct Output {
    lines: mpsc::UnboundedSender<String>,
    pending: std::sync::Arc<Pending>,
    /// Notifications dropped because the output was over its budget.
    dropped: AtomicU64,
    /// Lines queued so far, over every output of the server (`Server::lines_queued`).
    queued: std::sync::Arc<AtomicU64>,
}

/// The bytes queued and not yet written, against the budget.
pub(crate) struct Pending {
    bytes: AtomicUsize,
    budget: usize,
    /// Raised whenever a write brings `bytes` under the budget.
    drained: Notify,
}

impl Pending {
    /// Called by the writer once `bytes` (a line and its newline) went out.
    pub(crate) fn written(&self, bytes: usize) {
        let before = self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        if before.saturating_sub(bytes) <= self.budget {
            self.drained.notify_waiters();
        }
    }

    fn over(&self) -> bool {
        self.bytes.load(Ordering::Acquire) > self.budget
    }
}

impl Output {
    /// An output of `budget` bytes feeding `lines` (read by the writer task, which reports
    /// each written line to the returned [`Pending`]).
    pub(crate) fn new(
        lines: mpsc::UnboundedSender<String>,
        budget: usize,
        queued: std::sync::Arc<AtomicU64>,
    ) -> (Self, std::sync::Arc<Pending>) {
        let pending = std::sync::Arc::new(Pending {
            bytes: AtomicUsize::new(0),
            budget,
            drained: Notify::new(),
        });
        let output = Self {
            lines,
            pending: pending.clone(),
            dropped: AtomicU64::new(0),
            queued,
        };
        (output, pending)
    }

    /// Queue a response line (never dropped: its request was taken in).
    pub(crate) fn respond(&self, line: String) {
        let bytes = line.len() + 1;
        self.pending.bytes.fetch_add(bytes, Ordering::AcqRel);
        if self.lines.send(line).is_err() {
            // The writer is gone (the client closed its output): nothing will be written.
            self.pending.bytes.fetch_sub(bytes, Ordering::AcqRel);
        } else {
            self.queued.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Queue a notification, unless the output is over its budget.
    pub(crate) fn notify(&self, line: String) {
        if self.pending.over() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                log::warn!(
                    "serve: {dropped} notifications dropped so far: the client is not reading \
                     its output (more than {} bytes wait to be written)",
                    self.pending.budget
                );
            }
            return;
        }
        self.respond(line);
    }

    /// Notifications dropped so far.
    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Wait until no more than the budget waits to be written.
    pub(crate) async fn room(&self) {
        loop {
            let drained = self.pending.drained.notified();
            if !self.pending.over() {
                return;
            }
            drained.await;
        }
    }

    /// Bytes waiting to be written.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.pending.bytes.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn over_the_budget_notifications_drop_and_readers_wait() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (output, pending) = Output::new(tx, 10, Default::default());
        let output = std::sync::Arc::new(output);
        output.respond("0123456789ab".into());
        assert_eq!(output.pending(), 13);
        output.notify("n".into());
        assert_eq!(output.dropped(), 1);
        let waiting = {
            let output = output.clone();
            tokio::spawn(async move { output.room().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        let line = rx.recv().await.unwrap();
        pending.written(line.len() + 1);
        waiting.await.unwrap();
        assert_eq!(output.pending(), 0);
        output.notify("n".into());
        assert_eq!(output.dropped(), 1);
        assert_eq!(rx.recv().await.unwrap(), "n");
    }
}
