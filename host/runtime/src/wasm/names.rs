//! Text a plugin wrote, made safe to show, and the rules for the names it declares.
//!
//! Everything a plugin says outside the prompt itself — the message of an `err` result, its
//! log lines, what it prints to stdout or stderr, a panic message — ends up in error chains,
//! on the operator's terminal and in log files. Raw, it could carry ESC sequences that clear
//! the screen, a carriage return that overwrites a line, a newline that forges a line such as
//! `error: … plugin "persona" failed`, or bidirectional-text controls that make a line read
//! differently from what it holds. Declared names are refused when they hold such
//! characters ([`declared_name`]); free text is escaped instead, so nothing the plugin meant
//! to say is lost.

pub(crate) use prompt_host_core::escape::{escape, is_unsafe_char};

/// Refuse a name a plugin declares (section, context, tool, listener or tool-provider key)
/// that holds a control character or a bidirectional-text control. Names appear in error
/// messages, logs and the command line's human output, where such characters could forge
/// lines or escape sequences, or display reordered text. The message shows the name escaped.
pub(crate) fn declared_name(what: &str, name: &str) -> Result<(), String> {
    match name.chars().find(|&c| is_unsafe_char(c)) {
        None => Ok(()),
        Some(c) => Err(format!(
            "{what} name {name:?} contains the control character U+{:04X}; names may not hold \
             control characters or bidirectional-text controls",
            u32::from(c)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_names_refuse_control_and_bidi_characters() {
        for ok in [
            "a",
            "tool-guide:rules",
            "\u{fffd}\u{feff}",
            "\u{10ffff}",
            "e\u{301}",
        ] {
            assert!(declared_name("section", ok).is_ok(), "{ok:?}");
        }
        for bad in [
            "a\0",
            "a\nb",
            "\u{1b}[2J",
            "\u{7f}",
            "\u{85}",
            "\u{202e}x",
            "\u{2066}",
        ] {
            let err = declared_name("tool", bad).unwrap_err();
            assert!(err.starts_with("tool name \""), "{err}");
            assert!(!err.chars().any(char::is_control), "{err:?}");
        }
        assert_eq!(
            declared_name("section", "a\nb").unwrap_err(),
            "section name \"a\\nb\" contains the control character U+000A; names may not hold \
             control characters or bidirectional-text controls"
        );
    }
}
