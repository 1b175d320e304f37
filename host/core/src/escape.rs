//! Text from outside the host (a plugin's message or log line, a network peer's error body)
//! made safe to show: control and bidirectional-text characters written as escapes, so it
//! stays one line and nothing in it acts on a terminal.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a control character (Unicode `Cc`) or a bidirectional-text control.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// The bidirectional-text controls (marks, embeddings, overrides, isolates).
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// `text` trimmed and escaped ([`escape`]), at most `max_bytes` of it, cut at a character
/// boundary and followed by how much was left out. Here rather than in `prompt-host-peer`
/// because host.toml's parse errors show the file's text the same way, and a build of
/// `prompt-host` without a network client has no peer crate.
pub fn shown_within(text: &str, max_bytes: usize) -> String {
    let trimmed = text.trim();
    let mut cut = trimmed.len().min(max_bytes);
    while !trimmed.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = escape(&trimmed[..cut]).into_owned();
    if cut < trimmed.len() {
        out.push_str(&format!(" … ({} more bytes)", trimmed.len() - cut));
    }
    out
}

/// `text` with every control and bidi character written as an escape: `\n`, `\r`, `\t`,
/// else `\u{1b}`; one line, shown as it was written. Borrowed when nothing needed escaping.
pub fn escape(text: &str) -> Cow<'_, str> {
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
}
