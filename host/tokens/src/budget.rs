//! Token budgets (`[prompt] max_prompt_tokens`, `max_context_tokens`): a rendering over its
//! budget fails as the byte budgets do, naming the parts that cost the most and who
//! registered them, so an operator knows what to cut.

use thiserror::Error;

use super::{Tokenizer, TokenizerError};
use prompt_host_core::prompt::{scope_label, EntryKind, NamedText, Owner};

/// How many of the largest parts a budget error names.
pub const LARGEST_NAMED: usize = 3;

/// Which rendering a token budget bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenBudgeted {
    /// The system prompt (`max_prompt_tokens`).
    Prompt,
    /// The runtime-context snapshot (`max_context_tokens`).
    Context,
}

impl TokenBudgeted {
    /// The host.toml key that sets this budget.
    pub fn key(self) -> &'static str {
        match self {
            Self::Prompt => "max_prompt_tokens",
            Self::Context => "max_context_tokens",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::Prompt => "rendered system prompt",
            Self::Context => "runtime-context snapshot",
        }
    }

    /// The kind of the parts it is made of.
    pub fn part_kind(self) -> EntryKind {
        match self {
            Self::Prompt => EntryKind::Section,
            Self::Context => EntryKind::Context,
        }
    }
}

/// One part of an over-budget rendering, with what it costs alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contributor {
    /// The section or context.
    pub name: String,
    /// Its tokens, counted alone.
    pub tokens: usize,
    /// Who registered it; `None` when a listener made it.
    pub owner: Option<Owner>,
}

/// A rendering over its token budget.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "the {} has {tokens} tokens ({tokenizer}), over {} = {limit}; the largest: {}",
    budgeted.what(),
    budgeted.key(),
    listed(*budgeted, largest)
)]
pub struct OverTokenBudget {
    /// The budget passed.
    pub budgeted: TokenBudgeted,
    /// The tokenizer that counted.
    pub tokenizer: String,
    /// The rendering's tokens, counted as one text.
    pub tokens: usize,
    /// The budget.
    pub limit: usize,
    /// The largest parts, largest first (at most [`LARGEST_NAMED`]).
    pub largest: Vec<Contributor>,
}

fn listed(budgeted: TokenBudgeted, largest: &[Contributor]) -> String {
    largest
        .iter()
        .map(|c| {
            let from = match &c.owner {
                Some(owner) => format!(
                    "from plugin \"{}\" ({})",
                    owner.plugin,
                    scope_label(owner.scope.as_deref())
                ),
                None => "made by a listener".to_string(),
            };
            format!(
                "{} \"{}\" {} tokens {from}",
                budgeted.part_kind(),
                c.name,
                c.tokens
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a budget check did not pass.
#[derive(Debug, Error)]
pub enum BudgetError {
    /// Over the budget.
    #[error(transparent)]
    Over(Box<OverTokenBudget>),
    /// The tokenizer failed on the text.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
}

/// Check `text` against `limit`; over it, the error names the largest of the parts it is
/// made of (`parts`, asked for only then), each counted alone, with the owners `owner_of`
/// finds.
pub fn check(
    tokenizer: &Tokenizer,
    budgeted: TokenBudgeted,
    limit: usize,
    text: &str,
    parts: impl FnOnce() -> Vec<NamedText>,
    owner_of: impl Fn(&str) -> Option<Owner>,
) -> Result<(), BudgetError> {
    // A byte-level BPE token is at least one byte: a text of at most `limit` bytes is
    // within the budget uncounted (counting a long run of one letter takes ~0.3 s a MiB).
    if tokenizer.at_most_one_token_per_byte() && text.len() <= limit {
        return Ok(());
    }
    let tokens = tokenizer.count(text)?;
    if tokens <= limit {
        return Ok(());
    }
    let mut counted = parts()
        .iter()
        .map(|part| Ok((tokenizer.count(&part.text)?, part.name.clone())))
        .collect::<Result<Vec<_>, TokenizerError>>()?;
    // Largest first; equal counts in render order.
    counted.sort_by_key(|&(tokens, _)| std::cmp::Reverse(tokens));
    let largest = counted
        .into_iter()
        .take(LARGEST_NAMED)
        .map(|(tokens, name)| Contributor {
            owner: owner_of(&name),
            name,
            tokens,
        })
        .collect();
    Err(BudgetError::Over(Box::new(OverTokenBudget {
        budgeted,
        tokenizer: tokenizer.name().to_string(),
        tokens,
        limit,
        largest,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(name: &str, text: &str) -> NamedText {
        NamedText {
            name: name.into(),
            text: text.into(),
        }
    }

    #[test]
    fn within_the_budget_is_its_count_and_over_it_names_the_largest_three() {
        let tokenizer = Tokenizer::load("cl100k_base", None).expect("built in");
        let parts = [
            part("a", "one"),
            part("b", "one two three four five six seven"),
            part("c", "one two"),
            part("d", "one two three"),
        ];
        let text: Vec<&str> = parts.iter().map(|p| p.text.as_str()).collect();
        let text = text.join("\n\n");
        let total = tokenizer.count(&text).expect("counts");
        let owner = |name: &str| {
            (name != "c").then(|| Owner {
                plugin: format!("p-{name}"),
                scope: (name == "b").then(|| "agent:1".to_string()),
            })
        };
        let unasked = || -> Vec<NamedText> { panic!("the parts are counted only when over") };
        let within = check(
            &tokenizer,
            TokenBudgeted::Prompt,
            total,
            &text,
            unasked,
            owner,
        );
        assert!(within.is_ok());
        // Within the budget by its bytes alone: not even counted.
        let before = tokenizer.cache_stats();
        let short = check(
            &tokenizer,
            TokenBudgeted::Prompt,
            100,
            "abc",
            unasked,
            owner,
        );
        assert!(short.is_ok());
        assert_eq!(tokenizer.cache_stats(), before);
        let over = check(
            &tokenizer,
            TokenBudgeted::Prompt,
            5,
            &text,
            || parts.to_vec(),
            owner,
        )
        .expect_err("over");
        assert_eq!(
            over.to_string(),
            format!(
                "the rendered system prompt has {total} tokens (cl100k_base), over \
                 max_prompt_tokens = 5; the largest: section \"b\" 7 tokens from plugin \"p-b\" \
                 (scope agent:1), section \"d\" 3 tokens from plugin \"p-d\" (global), \
                 section \"c\" 2 tokens made by a listener"
            )
        );
    }
}
