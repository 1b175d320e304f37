//! The host's own messages (a compile cache that cannot be used, a tool an MCP server sent
//! that was left out, …) in Python's `logging`, under the logger `prompt_host`: what
//! `prompt-host serve` prints on stderr as `warning: …`, an in-process host tells the
//! embedding program the way Python libraries do. Plugin log lines are not among them: they
//! reach the client as `serve` gives them (stderr lines, `log` notifications).

use pyo3::prelude::*;

/// The most detailed level forwarded (what `serve` shows by default).
const LEVEL: log::LevelFilter = log::LevelFilter::Warn;

struct PythonLogging;

impl log::Log for PythonLogging {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        let target = metadata.target();
        target.starts_with("prompt_host")
            && !target.starts_with("prompt_host::plugin")
            && metadata.level() <= LEVEL
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            log::Level::Error => 40,
            log::Level::Warn => 30,
            log::Level::Info => 20,
            log::Level::Debug | log::Level::Trace => 10,
        };
        let message = record.args().to_string();
        // A failure to log has nobody to be reported to.
        Python::attach(|py| {
            let _ = py
                .import("logging")
                .and_then(|logging| logging.call_method1("getLogger", ("prompt_host",)))
                .and_then(|logger| logger.call_method1("log", (level, message)));
        });
    }

    fn flush(&self) {}
}

static LOGGER: PythonLogging = PythonLogging;

/// Install the forwarding once per process; a program that installed another `log` logger
/// first (the command line, another extension) keeps its own.
pub fn install() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(LEVEL);
    }
}
