//! Hugging Face `tokenizer.json` counts, with the text cut inside very long runs so that the
//! pre-tokenizer's regex never gives up on it.
//!
//! The `tokenizers` crate runs a pre-tokenizer's `Split` pattern (and `ByteLevel`'s own) with
//! fancy-regex, and when fancy-regex gives up it does not fail: it stops splitting, and the
//! rest of the text becomes one piece. fancy-regex gives up when one piece takes about a
//! million characters of backtracking stack, which a run of one kind of character does with
//! the common patterns (DeepSeek's, Llama 3's, GPT-2's): 999,991 spaces or tabs before a word,
//! 2,000,000 letters, combining marks or punctuation. The count was then silently wrong (2 MB
//! of spaces before a word: 15,626 tokens instead of 15,627). Hugging Face's own Python
//! package runs Oniguruma, which does not give up, so there is no reference to match there;
//! the rule below keeps every part far from the limit and is exact wherever no run is long.
//!
//! The rule: a run of more than [`MAX_RUN`] characters that are all whitespace, or all not
//! whitespace, is cut after every [`MAX_RUN`] characters from its start; the parts between the
//! cuts are counted as texts of their own and the counts added. A text without such a run is
//! one part, counted exactly as Hugging Face `tokenizers` counts it.

/// The longest run of whitespace, or of anything else, counted in one part: a fifteenth of
/// what fancy-regex's stack holds, so a piece that spans a run of each kind (punctuation
/// then newlines) is still far within it.
pub const MAX_RUN: usize = 65_536;

/// The number of tokens of `text`, counted part by part (see the module's description).
pub(super) fn count(
    tokenizer: &tokenizers::Tokenizer,
    text: &str,
) -> Result<usize, tokenizers::Error> {
    let mut total = 0;
    for part in parts(text) {
        total += tokenizer.encode_fast(part, false)?.len();
    }
    Ok(total)
}

/// The parts of `text`, in order, joined back to `text`.
fn parts(text: &str) -> impl Iterator<Item = &str> {
    let mut from = 0;
    std::iter::from_fn(move || {
        if from >= text.len() {
            return None;
        }
        let start = from;
        from = next_cut(text, start).unwrap_or(text.len());
        Some(&text[start..from])
    })
}

/// The first cut after `from`: where a run (of whitespace, or of anything else) that is
/// longer than [`MAX_RUN`] has had [`MAX_RUN`] characters since its start or its last cut.
fn next_cut(text: &str, from: usize) -> Option<usize> {
    let mut chars = text[from..].char_indices();
    let (_, first) = chars.next()?;
    let mut kind = first.is_whitespace();
    // Characters of the current run since its start or the last cut.
    let mut run = 1;
    for (offset, c) in chars {
        if c.is_whitespace() != kind {
            kind = !kind;
            run = 1;
        } else if run == MAX_RUN {
            return Some(from + offset);
        } else {
            run += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(text: &str) -> Vec<usize> {
        parts(text).map(|p| p.chars().count()).collect()
    }

    #[test]
    fn a_text_without_a_long_run_is_one_part() {
        let text = format!(
            "{}{}{}",
            "a".repeat(MAX_RUN),
            " \n".repeat(MAX_RUN / 2),
            "語".repeat(MAX_RUN)
        );
        assert_eq!(parts(&text).collect::<Vec<_>>(), [text.as_str()]);
        assert_eq!(parts("").count(), 0);
    }

    #[test]
    fn a_long_run_is_cut_every_max_run_characters_from_its_start() {
        let text = format!("ab{}x", " ".repeat(2 * MAX_RUN + 5));
        // "ab" then the run: cut MAX_RUN and 2 × MAX_RUN characters into it.
        assert_eq!(lengths(&text), [2 + MAX_RUN, MAX_RUN, 5 + 1]);
        let text = format!("{}!", "e\u{301}".repeat(MAX_RUN));
        assert_eq!(lengths(&text), [MAX_RUN, MAX_RUN, 1]);
    }

    #[test]
    fn a_run_of_exactly_max_run_characters_is_not_cut() {
        let text = format!("{}x{}", "\u{3000}".repeat(MAX_RUN), "y".repeat(MAX_RUN - 1));
        assert_eq!(lengths(&text), [2 * MAX_RUN]);
        let text = format!("{}x", "\t".repeat(MAX_RUN + 1));
        assert_eq!(lengths(&text), [MAX_RUN, 2]);
    }
}
