//! Where a session's state waits between requests, so that a call from this process
//! ([`Server::call`](super::Server::call)) can take it without waking the session's worker.
//!
//! A session's requests run one at a time, in order, from its queue. A line's request is
//! handed to the worker task, which runs it on a blocking thread. An in-process caller used
//! to be lent the state by that worker too: the caller queued its request, the worker woke,
//! sent the state over, and was woken again to take it back — two hand-offs between threads
//! per call, which cost more on a loaded machine than much of a step's own work
//! (docs/benchmarks.md §7). While the worker waits for a job and none is queued, the state
//! now lies on the shelf: a caller that finds it there (and no job queued ahead of it)
//! takes it, runs on its own thread, and puts it back. Order is kept: jobs are counted
//! under the server's session lock, and a caller takes the state only under that lock with
//! none counted; otherwise it queues like any other request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::methods::SessionState;

/// A session's state between requests, and the jobs queued for it.
#[derive(Default)]
pub(super) struct Shelf {
    slot: Mutex<Slot>,
    returned: tokio::sync::Notify,
    /// Jobs sent to the worker and not yet received by it. Incremented under the server's
    /// session lock, before the send.
    queued: AtomicUsize,
}

// One per session, in place: boxing the state would allocate on every turn.
#[allow(clippy::large_enum_variant)]
#[derive(Default)]
enum Slot {
    /// The worker holds the state (it runs a request, or it has not shelved it yet).
    #[default]
    WithWorker,
    /// The worker waits for a job; the state is here for a caller to take.
    Shelved(SessionState),
    /// A caller in this process runs a request with the state.
    Borrowed,
    /// The caller that borrowed the state panicked with it: the session's next request
    /// starts afresh, as after a request that panicked on the worker.
    Lost,
}

impl Shelf {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A job is about to be sent to the worker (called under the server's session lock).
    pub(super) fn job_queued(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// The worker received a job.
    pub(super) fn job_received(&self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }

    /// The worker leaves the state here while it waits for a job.
    pub(super) fn put(&self, state: SessionState) {
        *self.lock() = Slot::Shelved(state);
    }

    /// The worker takes the state back, waiting while a caller has it; `None` if it was lost
    /// with a caller that panicked.
    pub(super) async fn take_back(&self) -> Option<SessionState> {
        loop {
            let returned = self.returned.notified();
            {
                let mut slot = self.lock();
                match std::mem::take(&mut *slot) {
                    Slot::Shelved(state) => return Some(state),
                    Slot::Lost => return None,
                    Slot::Borrowed => *slot = Slot::Borrowed,
                    // Only the worker takes it back, once per put.
                    Slot::WithWorker => return Some(SessionState::default()),
                }
            }
            returned.await;
        }
    }

    /// A caller takes the state if it lies here and no job is queued ahead of the caller.
    /// Call under the server's session lock, so that no job is queued meanwhile.
    pub(super) fn borrow(self: &Arc<Self>) -> Option<Borrowed> {
        if self.queued.load(Ordering::Acquire) != 0 {
            return None;
        }
        let mut slot = self.lock();
        match std::mem::replace(&mut *slot, Slot::Borrowed) {
            Slot::Shelved(state) => Some(Borrowed {
                shelf: Arc::clone(self),
                state: Some(state),
            }),
            other => {
                *slot = other;
                None
            }
        }
    }

    /// Whether the state lies here holding nothing (no open log, no step to retry) and no
    /// job is queued.
    pub(super) fn holds_nothing(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0
            && matches!(&*self.lock(), Slot::Shelved(state) if state.is_idle())
    }

    /// Whether the state lies here, its worker waiting, with no job queued: the session
    /// may be closed ([`super::cache`]). Call under the server's session lock.
    pub(super) fn is_waiting(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0 && matches!(&*self.lock(), Slot::Shelved(_))
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The state in a caller's hands; put back on the shelf when dropped (marked lost if the
/// caller panicked), waking the worker if it waits for it.
pub(super) struct Borrowed {
    shelf: Arc<Shelf>,
    state: Option<SessionState>,
}

impl Borrowed {
    pub(super) fn state(&mut self) -> &mut SessionState {
        self.state.get_or_insert_with(SessionState::default)
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        let back = match self.state.take() {
            Some(state) if !std::thread::panicking() => Slot::Shelved(state),
            _ => Slot::Lost,
        };
        *self.shelf.lock() = back;
        self.shelf.returned.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn a_caller_takes_only_a_shelved_state_with_no_job_queued() {
        let shelf = Shelf::new();
        assert!(shelf.borrow().is_none(), "the worker holds it");
        shelf.put(SessionState::default());
        shelf.job_queued();
        assert!(shelf.borrow().is_none(), "a job is queued ahead");
        shelf.job_received();
        let borrowed = shelf.borrow().expect("shelved, nothing queued");
        assert!(shelf.borrow().is_none(), "one caller at a time");
        assert!(!shelf.holds_nothing(), "borrowed");
        drop(borrowed);
        assert!(shelf.holds_nothing(), "back, holding nothing");
        assert!(shelf.borrow().is_some());
    }

    #[test]
    fn the_worker_waits_for_a_borrowed_state_to_come_back() {
        let rt = runtime();
        let shelf = Shelf::new();
        shelf.put(SessionState::default());
        let borrowed = shelf.borrow().expect("shelved");
        let waiting = rt.spawn({
            let shelf = Arc::clone(&shelf);
            async move { shelf.take_back().await.is_some() }
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!waiting.is_finished(), "taken back while a caller has it");
        drop(borrowed);
        assert!(rt.block_on(waiting).expect("joined"), "given back");
        // The worker has it now: no caller can take it.
        assert!(shelf.borrow().is_none());
    }

    #[test]
    fn a_caller_that_panics_with_the_state_loses_it() {
        let rt = runtime();
        let shelf = Shelf::new();
        shelf.put(SessionState::default());
        let borrowed = shelf.borrow().expect("shelved");
        let panicked = std::thread::spawn(move || {
            let _borrowed = borrowed;
            panic!("a request panicked");
        })
        .join();
        assert!(panicked.is_err());
        assert!(rt.block_on(shelf.take_back()).is_none(), "lost");
    }
}
