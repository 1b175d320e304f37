//! Sleeping cannot outlast a call's deadline.
//!
//! A WASI sleep (`monotonic-clock.subscribe-*` then `poll`) blocks inside the host, where
//! epoch interruption cannot reach it: a plugin sleeping an hour would hold its thread for an
//! hour and be caught only when it returns to Wasm. The linker's `subscribe-duration` and
//! `subscribe-instant` are therefore replaced by versions that cap the wait at the time left
//! before the running call's deadline (plus one tick), so the sleep ends early and the epoch
//! check that follows interrupts the call on time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Linker, Resource};
use wasmtime::StoreContextMut;
use wasmtime_wasi::p2::{subscribe, DynPollable, Pollable};
use wasmtime_wasi::HostMonotonicClock;

use super::state::SandboxState;

/// The monotonic clock a store's WASI context uses: nanoseconds since the store's creation,
/// readable by the host (wasmtime-wasi's own clock is private).
#[derive(Clone)]
pub(crate) struct StoreClock(pub(crate) Arc<Instant>);

impl StoreClock {
    pub(crate) fn new() -> Self {
        Self(Arc::new(Instant::now()))
    }

    pub(crate) fn now_ns(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl HostMonotonicClock for StoreClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.now_ns()
    }
}

/// A wait that ends at a fixed instant, or when the running call's signal is cancelled.
struct Wake(tokio::time::Instant, Option<crate::prompt::CancelToken>);

#[wasmtime_wasi::async_trait]
impl Pollable for Wake {
    async fn ready(&mut self) {
        match &self.1 {
            Some(signal) => {
                tokio::select! {
                    () = tokio::time::sleep_until(self.0) => {}
                    () = signal.cancelled() => {}
                }
            }
            None => tokio::time::sleep_until(self.0).await,
        }
    }
}

/// How long a sleep of `wanted` may really last in the running call.
fn capped<T: SandboxState>(state: &T, wanted: Duration) -> Duration {
    match state.deadline() {
        Some(deadline) => {
            let left =
                deadline.saturating_duration_since(Instant::now()) + Duration::from_millis(1);
            wanted.min(left)
        }
        None => wanted,
    }
}

fn wait<T: SandboxState>(
    mut store: StoreContextMut<'_, T>,
    wanted: Duration,
) -> wasmtime::Result<(Resource<DynPollable>,)> {
    let state = store.data_mut();
    let duration = capped(state, wanted);
    let at = tokio::time::Instant::now()
        .checked_add(duration)
        .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400));
    let signal = state.signal();
    let table = state.table();
    let wake = table.push(Wake(at, signal))?;
    Ok((subscribe(table, wake)?,))
}

/// Replace `subscribe-duration` and `subscribe-instant` of `wasi:clocks/monotonic-clock`.
pub(crate) fn add_capped_sleep<T: SandboxState>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut clocks = linker.instance("wasi:clocks/monotonic-clock@0.2.12")?;
    clocks.func_wrap(
        "subscribe-duration",
        |store: StoreContextMut<'_, T>, (nanos,): (u64,)| wait(store, Duration::from_nanos(nanos)),
    )?;
    clocks.func_wrap(
        "subscribe-instant",
        |store: StoreContextMut<'_, T>, (when,): (u64,)| {
            let now = store.data().now_ns();
            wait(store, Duration::from_nanos(when.saturating_sub(now)))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}
