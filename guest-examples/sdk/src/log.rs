//! One-line logging into the host's log. The host attributes each line to the plugin and caps
//! how much a plugin may log, so logging is cheap to call but not free to abuse.

use crate::bindings::api::log::{log, Level};

/// Log `message` at trace level.
pub fn trace(message: impl AsRef<str>) {
    log(Level::Trace, message.as_ref());
}

/// Log `message` at debug level.
pub fn debug(message: impl AsRef<str>) {
    log(Level::Debug, message.as_ref());
}

/// Log `message` at info level.
pub fn info(message: impl AsRef<str>) {
    log(Level::Info, message.as_ref());
}

/// Log `message` at warn level.
pub fn warn(message: impl AsRef<str>) {
    log(Level::Warn, message.as_ref());
}

/// Log `message` at error level.
pub fn error(message: impl AsRef<str>) {
    log(Level::Error, message.as_ref());
}
