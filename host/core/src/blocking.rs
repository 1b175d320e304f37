//! Where a call into a plugin may run.
//!
//! A plugin call blocks its thread: Wasm runs on it, and the WASI shim that plugins reach
//! through `std` (stdout, stderr, stdin, sleeps, polls, sockets) drives its futures with
//! `Handle::block_on` on the ambient Tokio runtime. On a thread that is *inside* a runtime
//! (a worker running a task, or the thread in `Runtime::block_on`) Tokio refuses that with a
//! panic ("Cannot start a runtime from within a runtime"), so one `println!` in a plugin's
//! `init` would take the whole host down when an embedder loads it from async code.
//!
//! [`run_blocking`] is the one gate every entry into a plugin goes through. It runs the call
//! on the current thread when blocking is allowed there (no runtime, or a thread marked by
//! [`allow_blocking`], which the host's own `spawn_blocking` hand-offs use), moves a
//! multi-threaded runtime's worker out of the runtime for the call (`block_in_place`), and
//! runs the call on a short-lived thread of its own when the caller is a current-thread
//! runtime (which cannot give up its only thread).

use std::cell::Cell;

thread_local! {
    /// Set while a thread runs work the host handed to a blocking thread.
    static BLOCKING_ALLOWED: Cell<bool> = const { Cell::new(false) };
}

/// Run `f`, which may block and may call into plugins, marking this thread as one where
/// blocking is allowed. Use it inside `spawn_blocking` closures and dedicated threads.
pub fn allow_blocking<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            BLOCKING_ALLOWED.with(|flag| flag.set(self.0));
        }
    }
    let _restore = Restore(BLOCKING_ALLOWED.with(|flag| flag.replace(true)));
    f()
}

/// Whether work that may block and call into plugins can run on this thread directly,
/// through [`block_here`], instead of being handed to another thread: the thread is marked
/// by [`allow_blocking`], and it is in no runtime or in a multi-threaded one, which it can
/// leave for the call (a current-thread runtime's `block_on` cannot be left).
pub fn can_block_here() -> bool {
    BLOCKING_ALLOWED.with(Cell::get) && can_leave_runtime()
}

/// Whether this thread is in no runtime or in a multi-threaded one, which it can leave for
/// a call that blocks ([`block_here`]); a current-thread runtime's `block_on` cannot be left.
pub fn can_leave_runtime() -> bool {
    tokio::runtime::Handle::try_current().map_or(true, |handle| {
        handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
    })
}

/// Run `f` on this thread, outside the runtime it is in (if any), where [`can_block_here`]
/// said so: a plugin's WASI calls can then drive their own futures.
pub fn block_here<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => tokio::task::block_in_place(f),
        Err(_) => f(),
    }
}

/// Run `f` (a call into a plugin) where blocking is allowed, whatever thread the caller is
/// on; see the module documentation. A panic in `f` propagates to the caller.
pub fn run_blocking<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if BLOCKING_ALLOWED.with(Cell::get) {
        return f();
    }
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        // No runtime on this thread: the WASI shim uses its own.
        return f();
    };
    match handle.runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| allow_blocking(f))
        }
        // A current-thread runtime has no other thread to hand its work to: run the call on
        // a thread that belongs to no runtime.
        _ => on_own_thread(f),
    }
}

fn on_own_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("prompt-host-plugin-call".into())
            .spawn_scoped(scope, || allow_blocking(f));
        match spawned {
            Ok(thread) => match thread.join() {
                Ok(value) => value,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // No thread could be started (resource exhaustion): there is nowhere else to
            // go; the Tokio guard will report it if the plugin then blocks.
            Err(_) => unreachable_thread(),
        }
    })
}

#[cold]
fn unreachable_thread() -> ! {
    panic!("prompt-host: cannot start a thread for a plugin call")
}

/// The cores this process may use, asked once: `available_parallelism` reads the cgroup's
/// files on every call, which costs about as much as creating a thread. Work is spread over
/// threads, or a thread waits for another by polling, only when this is more than one.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the WASI shim does: block on the ambient runtime, if any.
    fn shim_like() -> u32 {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle.block_on(async { 7 }),
            Err(_) => 7,
        }
    }

    #[test]
    fn outside_any_runtime_runs_inline() {
        assert_eq!(run_blocking(shim_like), 7);
    }

    #[test]
    fn inside_a_multi_thread_runtime_task() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        assert_eq!(rt.block_on(async { run_blocking(shim_like) }), 7);
        let task = rt.spawn(async { run_blocking(shim_like) });
        assert_eq!(rt.block_on(task).unwrap(), 7);
    }

    #[test]
    fn inside_a_current_thread_runtime() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(async { run_blocking(shim_like) }), 7);
    }

    #[test]
    fn marked_threads_run_inline() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (outer, inner) = rt.block_on(async {
            tokio::task::spawn_blocking(|| {
                let outer = std::thread::current().id();
                let inner = allow_blocking(|| run_blocking(|| std::thread::current().id()));
                (outer, inner)
            })
            .await
            .unwrap()
        });
        assert_eq!(outer, inner);
        // Restored after the closure.
        assert!(!BLOCKING_ALLOWED.with(Cell::get));
    }

    #[test]
    fn a_panic_reaches_the_caller() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rt.block_on(async { run_blocking(|| panic!("boom")) })
        }));
        assert!(caught.is_err());
    }
}
