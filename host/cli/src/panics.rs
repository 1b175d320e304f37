//! What the command line says when it panics: one line on stderr, escaped (a panic's message
//! can quote a plugin's or a peer's text), naming where it happened — instead of Rust's
//! default report, which prints the message raw. The command then fails with status 1 (see
//! `run_command_line`); a panic in `serve` fails only the request it happened in.

use std::sync::Once;

/// Install the hook, once per process (the Python package may run several command lines in
/// one process).
pub fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let message = if let Some(text) = info.payload().downcast_ref::<&str>() {
                (*text).to_owned()
            } else if let Some(text) = info.payload().downcast_ref::<String>() {
                text.clone()
            } else {
                "(no message)".to_owned()
            };
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            super::warn(&format!(
                "error: internal error{at}: {}; this is a defect of prompt-host, please report it with the command that caused it",
                prompt_host::peer::shown(&message)
            ));
        }));
    });
}
