//! `--log-level`: which plugin output a command shows on stderr. Plugin log lines carry a
//! level; stdout and stderr lines count as `info`; the host's own notices about a plugin
//! (skipped, quarantined, output dropped) are warnings.

use std::sync::atomic::{AtomicU8, Ordering};

use clap::ValueEnum;

use prompt_host::wasm::PluginLog;

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

/// Set the level for this process (the command line's `--log-level`), and show the host's
/// own messages at that level on stderr too (a cache that cannot be used, a tool an MCP
/// server sent that was left out, …), as `warning: …`.
pub fn set(level: LogLevel) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    static LOGGER: HostLines = HostLines;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(match level {
            LogLevel::Error => log::LevelFilter::Error,
            LogLevel::Warn => log::LevelFilter::Warn,
            LogLevel::Info => log::LevelFilter::Info,
            LogLevel::Debug => log::LevelFilter::Debug,
            LogLevel::Trace => log::LevelFilter::Trace,
        });
    }
}

/// The host's own `log` lines on stderr. Plugin lines reach stderr through the runtime's
/// sink ([`show`]), so their `prompt_host::plugin` copies are left out here, as are other
/// crates' lines.
struct HostLines;

impl log::Log for HostLines {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        let target = metadata.target();
        target.starts_with("prompt_host")
            && !target.starts_with("prompt_host::plugin")
            && metadata.level() as u8 <= LEVEL.load(Ordering::Relaxed)
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let label = match record.level() {
            log::Level::Error => "error",
            log::Level::Warn => "warning",
            log::Level::Info => "info",
            log::Level::Debug => "debug",
            log::Level::Trace => "trace",
        };
        super::warn(&format!("{label}: {}", record.args()));
    }

    fn flush(&self) {}
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
    if let Some(text) = text(line) {
        super::warn(&text);
    }
}

/// The stderr line for `line`, if the level asks for it.
pub fn text(line: &PluginLog) -> Option<String> {
    if severity(line.stream) > LEVEL.load(Ordering::Relaxed) {
        return None;
    }
    Some(match line.stream {
        // The host's own notices are whole sentences naming plugin and scope.
        "skipped" | "quarantined" | "dropped" => format!("warning: {}", line.message),
        stream => {
            let scope = prompt_host::wasm::scope_label(line.scope.as_deref());
            format!(
                "plugin \"{}\" ({scope}) {stream}: {}",
                line.plugin, line.message
            )
        }
    })
}

/// Print a compile's progress on stderr: at every level but `error`, since a first load
/// of a large plugin takes seconds and must not look like a hang.
pub fn progress(progress: &prompt_host::wasm::CompileProgress<'_>) {
    if LEVEL.load(Ordering::Relaxed) > LogLevel::Error as u8 {
        super::warn(&progress.to_string());
    }
}
