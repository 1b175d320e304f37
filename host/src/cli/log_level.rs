//! `--log-level`: which plugin output a command shows on stderr. Plugin log lines carry a
//! level; stdout and stderr lines count as `info`; the host's own notices about a plugin
//! (skipped, quarantined, output dropped) are warnings.

use std::sync::atomic::{AtomicU8, Ordering};

use clap::ValueEnum;

use crate::wasm::PluginLog;

/// The most detailed plugin output shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum LogLevel {
    /// Only errors.
    Error = 1,
    /// Errors and warnings (the default).
    Warn = 2,
    /// Also info lines, stdout and stderr.
    Info = 3,
    /// Also debug lines.
    Debug = 4,
    /// Everything.
    Trace = 5,
}

static LEVEL: AtomicU8 = AtomicU8::new(LogLevel::Warn as u8);

/// Set the level for this process (the command line's `--log-level`).
pub fn set(level: LogLevel) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// The severity of a plugin line: 1 = error … 5 = trace.
fn severity(stream: &str) -> u8 {
    match stream {
        "error" => 1,
        "warn" | "skipped" | "quarantined" | "dropped" => 2,
        "info" | "stdout" | "stderr" => 3,
        "debug" => 4,
        _ => 5,
    }
}

/// Print `line` on stderr if the level asks for it.
pub fn show(line: &PluginLog) {
    if severity(line.stream) > LEVEL.load(Ordering::Relaxed) {
        return;
    }
    match line.stream {
        // The host's own notices are whole sentences naming plugin and scope.
        "skipped" | "quarantined" | "dropped" => super::warn(&format!("warning: {}", line.message)),
        stream => {
            let scope = crate::wasm::scope_label(line.scope.as_deref());
            super::warn(&format!(
                "plugin \"{}\" ({scope}) {stream}: {}",
                line.plugin, line.message
            ));
        }
    }
}
