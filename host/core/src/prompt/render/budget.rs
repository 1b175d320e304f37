//! Rendering budgets: how many bytes one rendered system prompt or runtime-context snapshot
//! may hold, and the error that says which entry and which variable would exceed it.
//!
//! Strict interpolation inserts a value once per reference, so a template of 100,000
//! references to a 500,000-byte variable asks for 50 GB from a few hundred kilobytes of
//! plugin output. The renderer checks the budget before each append; when a text would
//! cross it, this module measures what that text alone would render to (without allocating
//! it) to name the variable that amplifies it.

use std::collections::HashMap;

use super::{find_open, group_close, Entry, RenderError, Vars};
use crate::prompt::is_variable_name;

/// Which rendering a budget bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budgeted {
    /// The system prompt (`max_prompt_bytes`).
    Prompt,
    /// The runtime-context snapshot (`max_context_bytes`).
    Context,
}

impl Budgeted {
    /// The host.toml key that sets this budget.
    pub fn key(self) -> &'static str {
        match self {
            Self::Prompt => "max_prompt_bytes",
            Self::Context => "max_context_bytes",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Self::Prompt => "rendered system prompt",
            Self::Context => "runtime-context snapshot",
        }
    }
}

/// A byte budget of one rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// What it bounds.
    pub budgeted: Budgeted,
    /// The most bytes allowed.
    pub limit: usize,
}

impl Budget {
    /// The system prompt's budget.
    pub fn prompt(limit: usize) -> Self {
        Self {
            budgeted: Budgeted::Prompt,
            limit,
        }
    }

    /// The runtime-context snapshot's budget.
    pub fn context(limit: usize) -> Self {
        Self {
            budgeted: Budgeted::Context,
            limit,
        }
    }

    /// Report `error` against this budget (a part of the rendering was checked against the
    /// room left in it).
    pub(super) fn restore(self, error: RenderError) -> RenderError {
        match error {
            RenderError::OverBudget {
                kind,
                owner,
                entry_bytes,
                variable,
                ..
            } => RenderError::OverBudget {
                budget: self,
                kind,
                owner,
                entry_bytes,
                variable,
            },
            other => other,
        }
    }
}

/// The error for `entry`, whose `text` would not fit.
pub(super) fn exceeded(entry: &Entry<'_>, text: &str, variables: &Vars<'_>) -> RenderError {
    let (entry_bytes, variable) = measure(text, variables);
    RenderError::OverBudget {
        budget: entry.budget,
        kind: entry.kind,
        owner: entry.owner.to_string(),
        entry_bytes,
        variable,
    }
}

/// What `text` renders to, in bytes (saturating), and the variable that contributes the
/// most bytes: (name, value bytes, references). Stops at the first malformed or unresolved
/// reference: the budget error is about size, and rendering reports those on its own.
fn measure(text: &str, variables: &Vars<'_>) -> (usize, Option<(String, usize, usize)>) {
    let bytes = text.as_bytes();
    let mut total = 0usize;
    let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut last = 0;
    let mut next = find_open(text, 0);
    while let Some(open) = next {
        let Some(close) = group_close(bytes, open + 2) else {
            break;
        };
        let name = &text[open + 2..close];
        let Some(Some(value)) = is_variable_name(name)
            .then(|| variables.get(name))
            .flatten()
        else {
            break;
        };
        total = total
            .saturating_add(open - last)
            .saturating_add(value.len());
        let slot = counts.entry(name).or_insert((value.len(), 0));
        slot.1 += 1;
        last = close + 2;
        next = find_open(text, last);
    }
    total = total.saturating_add(text.len() - last);
    let top = counts
        .into_iter()
        .max_by_key(|(_, (len, refs))| len.saturating_mul(*refs))
        .filter(|(_, (len, _))| *len > 0)
        .map(|(name, (len, refs))| (name.to_string(), len, refs));
    (total, top)
}

/// The message of [`RenderError::OverBudget`].
pub(super) fn describe(error: &RenderError) -> String {
    let RenderError::OverBudget {
        budget,
        kind,
        owner,
        entry_bytes,
        variable,
    } = error
    else {
        return String::new();
    };
    let mut text = format!(
        "the {} would exceed {} = {} bytes at {kind} \"{owner}\", which alone renders to {entry_bytes} bytes",
        budget.budgeted.what(),
        budget.budgeted.key(),
        budget.limit,
    );
    if let Some((name, len, refs)) = variable {
        let plural = if *refs == 1 { "" } else { "s" };
        text.push_str(&format!(
            " ({refs} reference{plural} to variable \"{name}\" of {len} bytes)"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::{render_context_sections_within, render_prompt_within};
    use super::*;
    use crate::prompt::{Assembly, EntryKind, NamedText};

    fn assembly(sections: &[(&str, &str)], variables: &[(&str, &str)]) -> Assembly {
        Assembly {
            sections: sections
                .iter()
                .map(|(n, t)| NamedText {
                    name: n.to_string(),
                    text: t.to_string(),
                })
                .collect(),
            contexts: Vec::new(),
            tools: Vec::new(),
            variables: variables
                .iter()
                .map(|(k, v)| (k.to_string(), Some(v.to_string())))
                .collect(),
        }
    }

    #[test]
    fn amplification_is_refused_before_allocating() {
        // 500,000 bytes × 100,000 references = 50 GB if it were rendered.
        let value = "x".repeat(500_000);
        let template = "{{v}}".repeat(100_000);
        let a = assembly(&[("intro", "Hello."), ("amp", &template)], &[("v", &value)]);
        let err = render_prompt_within(&a, 8 << 20).unwrap_err();
        assert_eq!(
            err,
            RenderError::OverBudget {
                budget: Budget::prompt(8 << 20),
                kind: EntryKind::Section,
                owner: "amp".into(),
                entry_bytes: 50_000_000_000,
                variable: Some(("v".into(), 500_000, 100_000)),
            }
        );
        assert_eq!(
            err.to_string(),
            "the rendered system prompt would exceed max_prompt_bytes = 8388608 bytes at section \
             \"amp\", which alone renders to 50000000000 bytes (100000 references to variable \
             \"v\" of 500000 bytes)"
        );
    }

    #[test]
    fn exactly_the_budget_fits_and_one_more_byte_does_not() {
        let a = assembly(&[("a", "12345"), ("b", "{{v}}")], &[("v", "678")]);
        // "12345" + "\n\n" + "678" = 10 bytes.
        assert_eq!(render_prompt_within(&a, 10).unwrap(), "12345\n\n678");
        let err = render_prompt_within(&a, 9).unwrap_err();
        assert!(matches!(
            err,
            RenderError::OverBudget { ref owner, entry_bytes: 3, .. } if owner == "b"
        ));
    }

    #[test]
    fn contexts_count_the_joined_snapshot() {
        let mut a = assembly(&[], &[("v", "abc")]);
        a.contexts = vec![
            NamedText {
                name: "one".into(),
                text: "{{v}}".into(),
            },
            NamedText {
                name: "two".into(),
                text: "{{v}}{{v}}".into(),
            },
        ];
        let prefix = crate::prompt::CONTEXT_SNAPSHOT_PREFIX.len();
        // prefix + "\n\n" + "abc" + "\n\n" + "abcabc"
        let full = prefix + 2 + 3 + 2 + 6;
        let ok = render_context_sections_within(&a, full).unwrap();
        assert_eq!(crate::prompt::join_context_sections(&ok).len(), full);
        let err = render_context_sections_within(&a, full - 1).unwrap_err();
        match err {
            RenderError::OverBudget {
                budget,
                owner,
                variable,
                ..
            } => {
                assert_eq!(budget, Budget::context(full - 1));
                assert_eq!(owner, "two");
                assert_eq!(variable, Some(("v".into(), 3, 2)));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_literal_text_over_budget_names_no_variable() {
        let a = assembly(&[("big", &"y".repeat(100))], &[]);
        let err = render_prompt_within(&a, 50).unwrap_err();
        assert!(err
            .to_string()
            .ends_with("which alone renders to 100 bytes"));
    }
}
