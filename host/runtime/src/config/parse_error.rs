//! A host.toml that toml refuses, told as toml means it to be read: what is wrong and where
//! on one line, then the line itself with a caret under the place.
//!
//! toml's own rendering is not used as it is: it prints the whole offending line (a 16 MiB
//! host.toml can be one line) and the line's bytes raw (a control character in the file
//! reaches the terminal). The snippet here is toml's layout — gutter, line number, carets —
//! over a window of the line around the place, escaped.

/// The most characters of the offending line shown, around the place; the rest is marked
/// `…` on the side it was cut.
const WINDOW_CHARS: usize = 100;

/// The most bytes of toml's message kept (a key can be as long as the file).
const MAX_MESSAGE_BYTES: usize = 1024;

/// What toml said on one line, with the place when it gave one (`line 4, column 1:
/// unknown field …`), and the snippet to show below it (empty without a place).
pub(super) fn describe(error: &toml::de::Error, text: &str) -> (String, String) {
    // toml's message can take lines of its own (`invalid string` / `expected …`): one line.
    let said =
        prompt_host_core::escape::shown_within(&one_line(error.message()), MAX_MESSAGE_BYTES);
    match error.span().and_then(|span| place(text, span)) {
        Some(place) => (
            format!("line {}, column {}: {said}", place.line, place.column),
            place.snippet(),
        ),
        // No place: toml's text names the key instead (`missing field … in `plugin``).
        None => (
            prompt_host_core::escape::shown_within(
                &one_line(&error.to_string()),
                MAX_MESSAGE_BYTES,
            ),
            String::new(),
        ),
    }
}

/// `text`'s lines joined with `; `.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Where an error is: its line and column (from 1, the column in characters, as toml counts
/// them) and the line's text.
struct Place<'a> {
    line: usize,
    column: usize,
    content: &'a str,
    /// Characters the span covers on this line (at least one caret is drawn).
    width: usize,
}

fn place(text: &str, span: std::ops::Range<usize>) -> Option<Place<'_>> {
    let before = text.get(..span.start)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let rest = &text[line_start..];
    let content = rest.split('\n').next().unwrap_or("");
    let content = content.strip_suffix('\r').unwrap_or(content);
    let column = before[line_start..].chars().count();
    let covered = text
        .get(span.start..span.end.min(line_start + content.len()).max(span.start))
        .map_or(0, |s| s.chars().count());
    Some(Place {
        line: before.matches('\n').count() + 1,
        column: column + 1,
        content,
        width: covered,
    })
}

impl Place<'_> {
    /// toml's layout:
    ///
    /// ```text
    ///   |
    /// 4 | confg={}
    ///   | ^^^^^
    /// ```
    fn snippet(&self) -> String {
        let chars: Vec<char> = self.content.chars().collect();
        let at = self.column - 1;
        // A window around the place: from a little before it, WINDOW_CHARS long.
        let start = at.saturating_sub(WINDOW_CHARS / 4).min(chars.len());
        let end = (start + WINDOW_CHARS).min(chars.len());
        let mut shown = String::new();
        let mut caret_at = 0;
        if start > 0 {
            shown.push('…');
        }
        for (i, c) in chars[start..end].iter().enumerate() {
            if start + i == at {
                caret_at = shown.chars().count();
            }
            shown.push_str(&crate::wasm::escape(&c.to_string()));
        }
        if at >= end {
            // At the end of the line (or of the window): the caret goes after the text.
            caret_at = shown.chars().count();
        }
        if end < chars.len() {
            shown.push('…');
        }
        let carets = self.width.clamp(1, end.saturating_sub(at).max(1));
        let gutter = " ".repeat(self.line.to_string().len() + 1);
        format!(
            "{gutter}|\n{} | {shown}\n{gutter}| {}{}",
            self.line,
            " ".repeat(caret_at),
            "^".repeat(carets)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(text: &str) -> (String, String) {
        let error = toml::from_str::<toml::Table>(text)
            .map(|_| ())
            .err()
            .map(|e| describe(&e, text));
        error.unwrap_or_else(|| panic!("{text:?} parsed"))
    }

    #[test]
    fn the_place_and_the_line_as_toml_draws_them() {
        assert_eq!(
            described("a = 1\nb = = 2\n"),
            (
                "line 2, column 5: invalid string; expected `\"`, `'`".into(),
                "  |\n2 | b = = 2\n  |     ^".into()
            )
        );
    }

    #[test]
    fn a_long_line_is_shown_around_the_place_and_control_characters_escaped() {
        let long = format!("k = \"{}\" \u{1b}[2J x", "v".repeat(300));
        let (message, snippet) = described(&long);
        assert!(message.starts_with("line 1, column 308: "), "{message}");
        let lines: Vec<&str> = snippet.lines().collect();
        assert_eq!(lines.len(), 3, "{snippet}");
        assert!(lines[1].starts_with("1 | …"), "{snippet}");
        assert!(lines[1].chars().count() < WINDOW_CHARS + 16, "{snippet}");
        assert!(!snippet.contains('\u{1b}'), "{snippet:?}");
        // The caret is under the character it names.
        let caret = lines[2].chars().position(|c| c == '^').unwrap_or(0);
        let under: String = lines[1].chars().skip(caret).take(6).collect();
        assert_eq!(under, "\\u{1b}", "{snippet}");
    }
}
