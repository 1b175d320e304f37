//! Compile progress. A component that is not in the compile cache can take seconds to
//! compile — a JavaScript or Python plugin carries its language runtime, 7–16 s on two cores
//! — and a first load must not look like a hang. A compile still running after the
//! runtime's `progress_after` is announced to its [`ProgressSink`] with the plugin's name
//! and size, and its time is reported when it ends; a quick one stays silent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a [`ProgressSink`] is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompileProgress<'a> {
    /// A component is being compiled (it was not in the compile cache).
    Compiling {
        /// The plugin it is compiled for.
        plugin: &'a str,
        /// The component's size.
        bytes: usize,
    },
    /// The compile announced by `Compiling` ended (successfully or not).
    Compiled {
        /// The plugin.
        plugin: &'a str,
        /// The component's size.
        bytes: usize,
        /// How long it took, from its start.
        elapsed: Duration,
    },
}

/// Where compile progress goes (the command line prints it on stderr).
pub type ProgressSink = Arc<dyn Fn(&CompileProgress<'_>) + Send + Sync>;

/// Default of `RuntimeConfig::progress_after`: a compile still running after a second is
/// announced.
pub const DEFAULT_PROGRESS_AFTER: Duration = Duration::from_secs(1);

impl std::fmt::Display for CompileProgress<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Compiling { plugin, bytes } => write!(
                f,
                "compiling plugin \"{plugin}\" ({}; not in the compile cache yet)…",
                size(*bytes)
            ),
            Self::Compiled {
                plugin,
                bytes,
                elapsed,
            } => write!(
                f,
                "compiled plugin \"{plugin}\" ({}) in {:.1} s",
                size(*bytes),
                elapsed.as_secs_f64()
            ),
        }
    }
}

/// `812 KB`, `23.4 MB`.
fn size(bytes: usize) -> String {
    if bytes < 1_000_000 {
        format!("{} KB", bytes.div_ceil(1000))
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// Run `compile` for `plugin`'s component of `bytes` bytes, announcing it to `sink` if it is
/// still running after `after`.
pub(crate) fn announced<T>(
    sink: Option<&ProgressSink>,
    after: Duration,
    plugin: &str,
    bytes: usize,
    compile: impl FnOnce() -> T,
) -> T {
    let Some(sink) = sink else {
        return compile();
    };
    let started = Instant::now();
    let was_announced = AtomicBool::new(false);
    let announced = &was_announced;
    let (done, finished) = mpsc::channel::<()>();
    let result = std::thread::scope(|scope| {
        // The watch ends when the compile does (the sender is dropped), or announces it.
        scope.spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(after) {
                announced.store(true, Ordering::SeqCst);
                sink(&CompileProgress::Compiling { plugin, bytes });
            }
        });
        let result = compile();
        drop(done);
        result
    });
    // The watch has ended (the scope joined it), so a `Compiling` it sent came first.
    if was_announced.load(Ordering::SeqCst) {
        sink(&CompileProgress::Compiled {
            plugin,
            bytes,
            elapsed: started.elapsed(),
        });
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn recording() -> (ProgressSink, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&lines);
        let sink: ProgressSink = Arc::new(move |p: &CompileProgress<'_>| {
            let line = match p {
                CompileProgress::Compiled { plugin, bytes, .. } => {
                    format!("compiled {plugin} {bytes}")
                }
                other => other.to_string(),
            };
            kept.lock().unwrap().push(line);
        });
        (sink, lines)
    }

    #[test]
    fn a_slow_compile_is_announced_then_timed_and_a_quick_one_is_not() {
        let (sink, lines) = recording();
        let value = announced(Some(&sink), Duration::ZERO, "slow", 2_345_678, || {
            std::thread::sleep(Duration::from_millis(50));
            7
        });
        assert_eq!(value, 7);
        assert_eq!(
            *lines.lock().unwrap(),
            [
                "compiling plugin \"slow\" (2.3 MB; not in the compile cache yet)…",
                "compiled slow 2345678"
            ]
        );
        lines.lock().unwrap().clear();
        announced(Some(&sink), Duration::from_secs(3600), "quick", 10, || ());
        assert!(lines.lock().unwrap().is_empty());
        assert_eq!(announced(None, Duration::ZERO, "none", 1, || 3), 3);
    }

    #[test]
    fn the_report_gives_the_size_and_seconds() {
        let done = CompileProgress::Compiled {
            plugin: "js",
            bytes: 812_001,
            elapsed: Duration::from_millis(8_450),
        };
        assert_eq!(done.to_string(), "compiled plugin \"js\" (813 KB) in 8.4 s");
    }
}
