//! Per-server instruction budgets in tokens: what a server's `instructions` may cost in the
//! prompt, and how a longer text is cut so that the cut is never silent.
//!
//! The host cuts before the instruction-provider plugin sees the text: the plugin receives
//! the first part that fits, followed by a note saying that the text was cut, by how much,
//! and under which budget. [`InstructionsCut`] records the same facts for
//! [`super::McpStatus`], `inspect`, the step result and `serve`'s `mcp/instructions_cut`
//! notification.

use std::sync::Arc;

use prompt_host_tokens::{Tokenizer, TokenizerError};

/// The most bytes a token is assumed to span when looking for the longest prefix that fits:
/// the search never reads past `budget × this` bytes of an untrusted text. A tokenizer whose
/// tokens are longer on average keeps less than the budget would allow, never more.
const MAX_BYTES_PER_TOKEN: usize = 64;

/// The longest instructions whose whole count is reported; a longer text is cut without
/// being counted to its end (its size in bytes is reported instead), so a server sending
/// megabytes costs the host a bounded amount of work per generation.
pub const MAX_COUNTED_INSTRUCTION_BYTES: usize = 1 << 20;

/// A budget for one server's instructions.
#[derive(Debug, Clone)]
pub struct InstructionBudget {
    /// The most tokens of the server's own text kept in the prompt (the host's note about
    /// the cut comes on top; it is about 40 tokens).
    pub max_tokens: usize,
    /// What counts them (the host's `[prompt] tokenizer` for a `[[mcp]]` entry).
    pub tokenizer: Arc<Tokenizer>,
}

impl InstructionBudget {
    /// A budget of `max_tokens` counted by `tokenizer`.
    pub fn new(max_tokens: usize, tokenizer: Arc<Tokenizer>) -> Self {
        InstructionBudget {
            max_tokens,
            tokenizer,
        }
    }
}

impl PartialEq for InstructionBudget {
    fn eq(&self, other: &Self) -> bool {
        self.max_tokens == other.max_tokens && self.tokenizer.name() == other.tokenizer.name()
    }
}

impl Eq for InstructionBudget {}

/// How one generation's instructions were cut.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InstructionsCut {
    /// The server.
    pub server: String,
    /// The server generation that was cut.
    pub generation: u64,
    /// The budget, in tokens.
    pub budget: usize,
    /// The tokenizer that counted.
    pub tokenizer: String,
    /// The tokens of the whole text the server sent; `None` when it was longer than
    /// [`MAX_COUNTED_INSTRUCTION_BYTES`] and was not counted to its end.
    pub tokens: Option<usize>,
    /// The bytes the server sent.
    pub bytes: usize,
    /// The tokens kept (at most the budget).
    pub kept_tokens: usize,
    /// The bytes kept.
    pub kept_bytes: usize,
    /// The bytes dropped.
    pub dropped_bytes: usize,
}

impl InstructionsCut {
    /// The note that starts a cut text (and the report's one-line summary).
    pub fn note(&self) -> String {
        let of = match self.tokens {
            Some(tokens) => format!("{tokens} tokens"),
            None => format!("{} bytes", self.bytes),
        };
        format!(
            "[prompt-host: the instructions of MCP server \"{}\" were cut to their first {} of {of} \
             ({} tokens at most, counted with {}); {} bytes were dropped]",
            self.server, self.kept_tokens, self.budget, self.tokenizer, self.dropped_bytes
        )
    }
}

/// `instructions` within `budget`: unchanged when they fit, else [`InstructionsCut::note`],
/// a blank line and their longest prefix that fits (ending at a line break when one is in its
/// second half). The note comes first so that a provider plugin's own cap on the length of
/// the text (the `mcp-instructions` example's `max_bytes`) can never remove it.
pub fn cut_instructions(
    server: &str,
    generation: u64,
    instructions: &str,
    budget: &InstructionBudget,
) -> Result<(String, Option<InstructionsCut>), TokenizerError> {
    let tokenizer = &budget.tokenizer;
    let limit = budget.max_tokens;
    let cheap_fit = tokenizer.at_most_one_token_per_byte() && instructions.len() <= limit;
    if cheap_fit {
        return Ok((instructions.to_owned(), None));
    }
    let tokens = if instructions.len() <= MAX_COUNTED_INSTRUCTION_BYTES {
        let tokens = tokenizer.count_afresh(instructions)?;
        if tokens <= limit {
            return Ok((instructions.to_owned(), None));
        }
        Some(tokens)
    } else {
        None
    };
    let kept = longest_fitting_prefix(instructions, limit, tokenizer)?;
    let kept = at_line_break(kept);
    let kept_tokens = tokenizer.count_afresh(kept)?;
    let cut = InstructionsCut {
        server: server.to_owned(),
        generation,
        budget: limit,
        tokenizer: tokenizer.name().to_owned(),
        tokens,
        bytes: instructions.len(),
        kept_tokens,
        kept_bytes: kept.len(),
        dropped_bytes: instructions.len() - kept.len(),
    };
    let text = if kept.is_empty() {
        cut.note()
    } else {
        format!("{}\n\n{}", cut.note(), kept.trim_end())
    };
    Ok((text, Some(cut)))
}

/// The longest prefix of `text` (at a character boundary, at most `limit × 64` bytes) whose
/// count is at most `limit`, found by bisection over byte offsets.
fn longest_fitting_prefix<'a>(
    text: &'a str,
    limit: usize,
    tokenizer: &Tokenizer,
) -> Result<&'a str, TokenizerError> {
    let floor = |mut at: usize| {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    // Invariant: the prefix of `fits` bytes fits; every prefix longer than `beyond` does not
    // (or lies past the search bound).
    let mut fits = 0;
    let mut beyond = floor(text.len().min(limit.saturating_mul(MAX_BYTES_PER_TOKEN)));
    if tokenizer.count_afresh(&text[..beyond])? <= limit {
        return Ok(&text[..beyond]);
    }
    while beyond - fits > 1 {
        let middle = floor(fits + (beyond - fits) / 2);
        if middle <= fits {
            // No character boundary strictly between the two: `fits` is the answer.
            break;
        }
        if tokenizer.count_afresh(&text[..middle])? <= limit {
            fits = middle;
        } else {
            beyond = middle;
        }
    }
    Ok(&text[..fits])
}

/// `kept` up to its last line break when that keeps at least half of it, so a cut ends
/// between lines rather than inside a word; otherwise `kept` as it is.
fn at_line_break(kept: &str) -> &str {
    match kept.rfind('\n') {
        Some(at) if at >= kept.len() / 2 && at > 0 => &kept[..at],
        _ => kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(max_tokens: usize) -> InstructionBudget {
        let tokenizer = Tokenizer::load("o200k_base", None).expect("o200k_base loads");
        InstructionBudget::new(max_tokens, Arc::new(tokenizer))
    }

    #[test]
    fn instructions_within_the_budget_are_unchanged() {
        let budget = budget(50);
        let text = "Use the search tool before answering.";
        let (kept, cut) = cut_instructions("docs", 1, text, &budget).expect("counted");
        assert_eq!(kept, text);
        assert_eq!(cut, None);
        // Exactly at the budget still fits.
        let exact = budget.tokenizer.count_afresh(text).expect("counted");
        let exact = InstructionBudget::new(exact, budget.tokenizer.clone());
        let (kept, cut) = cut_instructions("docs", 1, text, &exact).expect("counted");
        assert_eq!((kept.as_str(), cut), (text, None));
    }

    #[test]
    fn a_long_text_keeps_the_longest_prefix_that_fits_and_says_so() {
        let budget = budget(20);
        let text = "word ".repeat(100);
        let (kept, cut) = cut_instructions("docs", 3, &text, &budget).expect("counted");
        let cut = cut.expect("cut");
        // " word" is one token each; the trailing space is one more.
        assert_eq!(cut.tokens, Some(101));
        assert!(cut.kept_tokens <= 20, "{cut:?}");
        // The longest: one more word would not fit.
        let prefix = &text[..cut.kept_bytes];
        assert!(budget.tokenizer.count_afresh(prefix).expect("counted") <= 20);
        let longer = &text[..(cut.kept_bytes + 5).min(text.len())];
        assert!(budget.tokenizer.count_afresh(longer).expect("counted") > 20);
        assert_eq!(cut.dropped_bytes, text.len() - cut.kept_bytes);
        assert_eq!(
            kept,
            format!("{}\n\n{}", cut.note(), prefix.trim_end()),
            "the note, a blank line, the kept text"
        );
        assert_eq!(
            cut.note(),
            format!(
                "[prompt-host: the instructions of MCP server \"docs\" were cut to their first {} of 101 tokens (20 tokens at most, counted with o200k_base); {} bytes were dropped]",
                cut.kept_tokens, cut.dropped_bytes
            )
        );
    }

    #[test]
    fn a_cut_ends_at_a_line_break_when_one_is_near() {
        let budget = budget(30);
        let text = (0..40)
            .map(|i| format!("rule {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let (kept, cut) = cut_instructions("docs", 1, &text, &budget).expect("counted");
        let cut = cut.expect("cut");
        let body = &text[..cut.kept_bytes];
        assert!(text[cut.kept_bytes..].starts_with('\n'), "{body:?}");
        assert!(kept.ends_with(body));
    }

    #[test]
    fn multibyte_text_is_cut_at_a_character_boundary() {
        let budget = budget(10);
        for text in ["漢字".repeat(200), "👩‍👩‍👧‍👦".repeat(100), "e\u{301}".repeat(300)]
        {
            let (kept, cut) = cut_instructions("docs", 1, &text, &budget).expect("counted");
            let cut = cut.expect("cut");
            assert!(text.is_char_boundary(cut.kept_bytes));
            assert!(cut.kept_tokens <= 10, "{cut:?}");
            assert!(kept.starts_with("[prompt-host: "));
        }
    }

    #[test]
    fn megabytes_of_instructions_are_cut_without_counting_them_all() {
        let budget = budget(100);
        let text = "a b ".repeat(MAX_COUNTED_INSTRUCTION_BYTES / 2);
        let (kept, cut) = cut_instructions("big", 1, &text, &budget).expect("counted");
        let cut = cut.expect("cut");
        assert_eq!(cut.tokens, None);
        assert_eq!(cut.bytes, text.len());
        assert!(cut.kept_tokens <= 100);
        assert!(kept.contains(&format!("of {} bytes", text.len())), "{kept}");
    }

    #[test]
    fn a_budget_too_small_for_any_text_keeps_only_the_note() {
        let budget = budget(1);
        let text = "Supercalifragilisticexpialidocious".repeat(3);
        let (kept, cut) = cut_instructions("docs", 1, &text, &budget).expect("counted");
        let cut = cut.expect("cut");
        assert!(cut.kept_tokens <= 1);
        assert!(kept.starts_with(&cut.note()));
    }
}
