//! Notifications the server sends on its own, once a client asked for them with `subscribe`:
//! plugin log lines at or above a level, plugins skipped or quarantined, registry changes and
//! MCP server status changes. Each is a JSON-RPC notification (no `id`) on the same output
//! as the responses.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use crate::protocol::notifications::{NotificationLine, PluginLine};

use prompt_host::wasm::{LogSink, PluginLog};

/// Where notifications go, and which the client asked for.
#[derive(Default)]
pub struct Notifier {
    out: Mutex<Option<Arc<super::output::Output>>>,
    /// Plugin log lines at this level or more severe: 0 = none, 1 = error … 5 = trace.
    log_level: AtomicU8,
    plugins: AtomicBool,
    registry: AtomicBool,
    mcp: AtomicBool,
}

/// The levels of `subscribe {log}`, most severe first.
pub const LOG_LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

impl Notifier {
    /// A notifier with nothing subscribed and nowhere to write yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Write notifications to `out` (the server's output queue).
    pub(crate) fn attach(&self, out: Arc<super::output::Output>) {
        *self.out.lock().unwrap_or_else(PoisonError::into_inner) = Some(out);
    }

    /// Stop writing notifications (the output is closing).
    pub(crate) fn detach(&self) {
        *self.out.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Apply a `subscribe` request's choices.
    pub(crate) fn subscribe(
        &self,
        log: Option<&str>,
        plugins: bool,
        registry: bool,
        mcp: bool,
    ) -> Result<(), String> {
        let level = match log {
            None | Some("off") => 0,
            Some(name) => match LOG_LEVELS.iter().position(|l| *l == name) {
                Some(i) => i as u8 + 1,
                None => {
                    return Err(format!(
                        "log: unknown level \"{name}\" (off, {})",
                        LOG_LEVELS.join(", ")
                    ))
                }
            },
        };
        self.log_level.store(level, Ordering::Relaxed);
        self.plugins.store(plugins, Ordering::Relaxed);
        self.registry.store(registry, Ordering::Relaxed);
        self.mcp.store(mcp, Ordering::Relaxed);
        Ok(())
    }

    /// Whether registry changes are wanted.
    pub(crate) fn wants_registry(&self) -> bool {
        self.registry.load(Ordering::Relaxed)
    }

    /// Whether MCP status changes are wanted.
    pub(crate) fn wants_mcp(&self) -> bool {
        self.mcp.load(Ordering::Relaxed)
    }

    /// Send notification `method` with `params`.
    pub(crate) fn send(&self, method: &str, params: &impl Serialize) {
        let guard = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(out) = guard.as_ref() {
            let line = NotificationLine {
                jsonrpc: "2.0",
                method,
                params,
            };
            // A notification's params are the host's own values: they always serialize.
            if let Ok(text) = serde_json::to_string(&line) {
                out.notify(text);
            }
        }
    }

    /// A log sink that turns plugin lines into notifications (when subscribed) and then
    /// hands them to `next` (e.g. the command line's stderr echo).
    pub fn sink(self: &Arc<Self>, next: Option<LogSink>) -> LogSink {
        let me = Arc::clone(self);
        Arc::new(move |line: &PluginLog| {
            me.on_plugin_line(line);
            if let Some(next) = &next {
                next(line);
            }
        })
    }

    fn on_plugin_line(&self, line: &PluginLog) {
        let params = PluginLine::of(line);
        match line.stream {
            "skipped" | "quarantined" => {
                if self.plugins.load(Ordering::Relaxed) {
                    self.send(&format!("plugin/{}", line.stream), &params);
                }
            }
            stream => {
                // stdout/stderr lines count as info.
                let severity = match stream {
                    "stdout" | "stderr" => 3,
                    other => LOG_LEVELS
                        .iter()
                        .position(|l| *l == other)
                        .map_or(3, |i| i as u8 + 1),
                };
                if severity <= self.log_level.load(Ordering::Relaxed) {
                    self.send("log", &params);
                }
            }
        }
    }
}
