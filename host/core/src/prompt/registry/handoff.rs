//! An async caller's assembly handed to Tokio's blocking pool, and the wait for it.
//!
//! The hand-off keeps what async code expects of a future: dropping it interrupts the
//! assembly. Its price on a virtual machine was about 55 µs on a 27 µs assembly, and little
//! of that is the hand-off itself (an empty closure through the pool and back: 13 µs). Most
//! is the waiting thread going to sleep and being woken when the result is there. So the
//! future first polls for a while, on its own thread, before it sleeps: a little longer than
//! this registry's last handed-off assembly took, and never more than [`SPIN_AT_MOST`]. An
//! assembly that takes longer than that sleeps at once, as before. Nothing polls on one
//! core, where the polling would only delay the work it waits for, nor while the runtime
//! has as many tasks alive as it has workers, where it would hold a worker another task
//! needs. While it polls, the future cannot be dropped: interruption by drop comes at most
//! `SPIN_AT_MOST` later.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::task::{JoinError, JoinHandle};

/// The longest a future polls for its assembly before it sleeps.
pub(crate) const SPIN_AT_MOST: Duration = Duration::from_micros(100);

/// How long the last assembly handed off by one registry took.
#[derive(Debug, Default)]
pub(crate) struct Handoff {
    last_ns: AtomicU64,
}

impl Handoff {
    /// Run `work` on the blocking pool and wait for it (see the module docs).
    pub(crate) async fn run<R: Send + 'static>(
        &self,
        work: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, JoinError> {
        let finished = Arc::new(AtomicBool::new(false));
        let done = Arc::clone(&finished);
        let task = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let result = work();
            let took = started.elapsed();
            done.store(true, Ordering::Release);
            (result, took)
        });
        let budget = self.spin_budget();
        let waited = Spin {
            task,
            finished,
            until: (!budget.is_zero()).then(|| Instant::now() + budget),
        };
        let (result, took) = waited.await?;
        self.last_ns.store(
            u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        Ok(result)
    }

    /// How long the next wait may poll: half again what the last assembly took plus the
    /// hand-off, when that fits in [`SPIN_AT_MOST`]; nothing after a long one, before the
    /// first, on one core, or when the runtime has as many tasks alive as workers.
    pub(crate) fn spin_budget(&self) -> Duration {
        let last = Duration::from_nanos(self.last_ns.load(Ordering::Relaxed));
        if last.is_zero()
            || last >= SPIN_AT_MOST
            || crate::blocking::cores() < 2
            || !runtime_has_room()
        {
            return Duration::ZERO;
        }
        (last * 3 / 2 + Duration::from_micros(15)).min(SPIN_AT_MOST)
    }
}

/// Whether the runtime has fewer tasks alive than workers, so that a worker spent polling
/// keeps no other task waiting. Under load (a server assembling for many scopes at once)
/// the future sleeps at once: polling there cost a third of the throughput.
fn runtime_has_room() -> bool {
    tokio::runtime::Handle::try_current().is_ok_and(|handle| {
        let metrics = handle.metrics();
        metrics.num_alive_tasks() < metrics.num_workers()
    })
}

/// A blocking task's result, polled for until `until` before the future sleeps.
struct Spin<R> {
    task: JoinHandle<R>,
    /// Set by the task when its work is done (the pool stores the result right after).
    finished: Arc<AtomicBool>,
    until: Option<Instant>,
}

impl<R> Future for Spin<R> {
    type Output = Result<R, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            if let Poll::Ready(result) = Pin::new(&mut self.task).poll(cx) {
                return Poll::Ready(result);
            }
            let Some(until) = self.until else {
                return Poll::Pending;
            };
            // The task's own flag is watched, not the handle: each poll of a `JoinHandle`
            // spends a unit of Tokio's cooperative budget.
            while !self.finished.load(Ordering::Acquire) {
                if Instant::now() >= until {
                    self.until = None;
                    return Poll::Pending;
                }
                std::hint::spin_loop();
            }
            if Instant::now() >= until {
                // Done, but the result not stored yet: the wake-up brings it.
                self.until = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_wait_polls_only_after_a_short_assembly_on_a_runtime_with_room() {
        let handoff = Handoff::default();
        handoff.last_ns.store(20_000, Ordering::Relaxed);
        assert_eq!(handoff.spin_budget(), Duration::ZERO, "outside a runtime");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            if crate::blocking::cores() < 2 {
                assert_eq!(handoff.spin_budget(), Duration::ZERO, "one core");
                return;
            }
            assert_eq!(handoff.spin_budget(), Duration::from_micros(45));
            handoff.last_ns.store(80_000, Ordering::Relaxed);
            assert_eq!(handoff.spin_budget(), SPIN_AT_MOST, "capped");
            handoff.last_ns.store(2_000_000, Ordering::Relaxed);
            assert_eq!(handoff.spin_budget(), Duration::ZERO, "after a long one");
            handoff.last_ns.store(0, Ordering::Relaxed);
            assert_eq!(handoff.spin_budget(), Duration::ZERO, "before the first");

            // As many tasks alive as workers: a worker spent polling would keep one waiting.
            handoff.last_ns.store(20_000, Ordering::Relaxed);
            let (stop, stopped) = tokio::sync::watch::channel(false);
            let busy: Vec<_> = (0..2)
                .map(|_| {
                    let mut stopped = stopped.clone();
                    tokio::spawn(async move { stopped.changed().await.ok() })
                })
                .collect();
            assert_eq!(handoff.spin_budget(), Duration::ZERO, "no room");
            stop.send(true).unwrap();
            for task in busy {
                task.await.unwrap();
            }
            assert_eq!(
                handoff.spin_budget(),
                Duration::from_micros(45),
                "room again"
            );
        });
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn results_and_panics_come_back_whether_the_wait_polls_or_sleeps() {
        let handoff = Handoff::default();
        for pause in [0, 30, 0, 3_000, 0] {
            let got = handoff
                .run(move || {
                    std::thread::sleep(Duration::from_micros(pause));
                    pause * 2
                })
                .await
                .unwrap();
            assert_eq!(got, pause * 2);
        }
        let panicked = handoff.run(|| -> u32 { panic!("on purpose") }).await;
        assert!(panicked.unwrap_err().is_panic());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_wait_leaves_the_task_to_finish_on_its_own() {
        let handoff = Arc::new(Handoff::default());
        handoff.last_ns.store(20_000, Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiting = handoff.run(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send(()).unwrap();
        });
        // Polled once: it polls for its budget, then gives up and is dropped.
        let dropped = tokio::time::timeout(Duration::from_millis(1), waiting).await;
        assert!(dropped.is_err(), "the task takes 50 ms");
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
    }
}
