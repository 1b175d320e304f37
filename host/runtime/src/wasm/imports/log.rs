//! The `log` import: a plugin's log lines, kept under the instance's output budget and
//! shown escaped (see `store/output.rs`).

use super::super::contract::wit::{log as wit_log, types};
use super::super::store::StoreData;

impl wit_log::Host for StoreData {
    fn log(&mut self, level: wit_log::Level, message: String) -> wasmtime::Result<()> {
        let keep = match self.output.stdout.lock() {
            Ok(mut out) => {
                let room = out.cap.saturating_sub(out.kept);
                if message.len() <= room {
                    out.kept += message.len();
                    true
                } else {
                    out.dropped += message.len();
                    // The next flush reports the drop.
                    self.output
                        .written
                        .store(true, std::sync::atomic::Ordering::Release);
                    false
                }
            }
            Err(_) => false,
        };
        if keep {
            let level = match level {
                wit_log::Level::Trace => log::Level::Trace,
                wit_log::Level::Debug => log::Level::Debug,
                wit_log::Level::Info => log::Level::Info,
                wit_log::Level::Warn => log::Level::Warn,
                wit_log::Level::Error => log::Level::Error,
            };
            let stream = match level {
                log::Level::Trace => "trace",
                log::Level::Debug => "debug",
                log::Level::Info => "info",
                log::Level::Warn => "warn",
                log::Level::Error => "error",
            };
            self.output.emit(stream, level, &message);
        }
        Ok(())
    }
}

impl types::Host for StoreData {}
