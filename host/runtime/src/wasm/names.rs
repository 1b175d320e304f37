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

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a control character (Unicode `Cc`) or a bidirectional-text control.
pub(crate) fn is_unsafe_char(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// The bidirectional-text controls (marks, embeddings, overrides, isolates).
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// `text` with every control and bidi character written as an escape: `\n`, `\r`, `\t`,
/// else `\u{1b}`; one line, shown as it was written. Borrowed when nothing needed escaping.
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

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
    fn plain_text_is_borrowed() {
        assert!(matches!(escape("plain text, ünïcode ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn terminal_tricks_become_visible_escapes() {
        assert_eq!(escape("\u{1b}[2Jcleared"), "\\u{1b}[2Jcleared");
        assert_eq!(
            escape("ok\nerror: plugin \"persona\" failed"),
            "ok\\nerror: plugin \"persona\" failed"
        );
        assert_eq!(escape("a\rb\tc\0"), "a\\rb\\tc\\u{0}");
        assert_eq!(escape("\u{202e}txt.exe"), "\\u{202e}txt.exe");
        assert_eq!(escape("\u{85}\u{7f}"), "\\u{85}\\u{7f}");
        assert!(!escape("\u{1b}\u{9b}\u{2066}x\n")
            .chars()
            .any(is_unsafe_char));
    }

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
