//! Where a text may be cut so that OpenAI's split patterns can run without their lookahead.
//!
//! `o200k_base` and `cl100k_base` cut text into pieces with a pattern whose only lookahead is
//! `\s+(?!\S)`: a run of whitespace up to, not including, its last character when a
//! non-whitespace character follows. fancy-regex runs that lookahead by backtracking, one
//! stack entry per character of the run, and gives up (tiktoken then panics) on a run of about
//! a million spaces or tabs. Without the lookahead the pattern is plain `regex` syntax, run in
//! linear time with no stack; what the lookahead decided is decided here instead, by cutting
//! the text where the original pattern always ends a piece.
//!
//! Take a maximal run of whitespace `[p, q)` followed by a non-whitespace character, and `m`,
//! the position after its last `\r` or `\n` (or `p` when it holds none). When `[m, q)` has two
//! characters or more, the original pattern ends a piece at `m` (the line breaks go with
//! `\s*[\r\n]`, or with a punctuation piece's `[\r\n]*`: no branch takes a line break and
//! then other whitespace unless the text ends there) and at `q - 1` (`\s+(?!\S)` gives back
//! the last character, which starts the next piece, alone or before a word). Cut at both, each
//! chunk but the last ends with one whole piece of whitespace, which `\s+` (or cl100k's
//! `\s+$`, the chunk's end standing for the text's) takes as the original did; every other run
//! of whitespace in a chunk has at most one character after its last line break, which `\s+`
//! takes alone as `\s+(?!\S)|\s+` did; and since the pieces end at the cuts, the other
//! branches, free of anchors and lookaround, match in a chunk what they matched in the whole
//! text. [`super::bpe`] runs the patterns without lookahead on these chunks. Each chunk is
//! found by one pass over it (its last run twice), so cutting is linear.

/// The chunks of `text`, in order, joined back to `text`.
pub(super) fn chunks(text: &str) -> Chunks<'_> {
    Chunks { text, from: 0 }
}

/// An iterator over the chunks of a text (see the module's description).
pub(super) struct Chunks<'a> {
    text: &'a str,
    /// Where the next chunk starts; a position already returned as a cut.
    from: usize,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.from >= self.text.len() {
            return None;
        }
        let start = self.from;
        let end = next_cut(self.text, start).unwrap_or(self.text.len());
        self.from = end;
        Some(&self.text[start..end])
    }
}

/// The first cut after `from` (the start of the text or a cut), if any.
///
/// A chunk that starts at a run's `m` finds that run's `q - 1`; one that starts at `q - 1`
/// finds nothing more in that run.
fn next_cut(text: &str, from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        // The next run of whitespace, `[p, q)`.
        let (offset, _) = text[at..]
            .char_indices()
            .find(|&(_, c)| c.is_whitespace())?;
        let p = at + offset;
        // `m`: after the run's last `\r` or `\n` (one byte each, so a character boundary);
        // `last`: where its last character starts.
        let (mut q, mut m, mut last) = (p, p, p);
        for (i, c) in text[p..].char_indices() {
            if !c.is_whitespace() {
                break;
            }
            last = p + i;
            q = last + c.len_utf8();
            if c == '\r' || c == '\n' {
                m = q;
            }
        }
        if q == text.len() {
            // A run at the end of the text: the patterns' own branches take it whole, or
            // up to its last line break and then whole.
            return None;
        }
        // Two characters or more from `m` on.
        if last > m {
            return Some(if m > p { m } else { last });
        }
        at = q;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> Vec<&str> {
        chunks(text).collect()
    }

    #[test]
    fn a_run_before_a_word_is_cut_before_its_last_character() {
        assert_eq!(cut("a    b"), ["a   ", " b"]);
        assert_eq!(cut("\t\t\tx"), ["\t\t", "\tx"]);
    }

    #[test]
    fn newlines_are_cut_off_the_run_they_end() {
        assert_eq!(cut("a\n\n    b"), ["a\n\n", "   ", " b"]);
        assert_eq!(cut("a \n \r\n  b"), ["a \n \r\n", " ", " b"]);
    }

    #[test]
    fn runs_that_need_no_cut_are_left_whole() {
        // One character after the last newline, none, or a run at the end of the text.
        for text in [
            "a b", "a\n b", "a \n\nb", "a   ", "   ", "\n\n  ", "", "abc",
        ] {
            assert_eq!(cut(text), if text.is_empty() { vec![] } else { vec![text] });
        }
    }

    #[test]
    fn chunks_join_back_to_the_text_and_cut_at_character_boundaries() {
        let text =
            "日本\u{3000}\u{3000}\u{3000}語 e\u{301}\u{a0}\u{2003}\n\u{85}\u{2028}  x \u{3000}";
        let parts = cut(text);
        assert_eq!(parts.concat(), text);
        assert_eq!(
            parts,
            [
                "日本\u{3000}\u{3000}",
                "\u{3000}語 e\u{301}\u{a0}\u{2003}\n",
                "\u{85}\u{2028} ",
                " x \u{3000}"
            ]
        );
    }

    #[test]
    fn a_million_spaces_are_three_chunks_at_most() {
        let text = format!("a\n{}b", " ".repeat(1_000_000));
        let parts = cut(&text);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1].len(), 999_999);
        assert_eq!(parts[2], " b");
    }
}
