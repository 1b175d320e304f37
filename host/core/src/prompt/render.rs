//! Strict rendering of an assembly: `{{name}}` interpolation with the error texts of the
//! TypeScript DeepSeek Harness, the system prompt, and the runtime-context snapshot.
//!
//! Interpolation is one left-to-right pass over the bytes with no regex and no allocation
//! besides the output (errors allocate their message). `{`, `}` and the name characters are
//! ASCII, so working on UTF-8 bytes finds exactly the positions the JavaScript regex of the
//! TypeScript DeepSeek Harness finds.
//!
//! One divergence from it: the malformed-reference excerpt is the next 16 UTF-16 code units
//! from the `{{`; when that cut falls inside a surrogate pair, the TypeScript DeepSeek
//! Harness keeps a lone high surrogate, which a Rust `String` cannot hold, so the excerpt
//! ends before that character (15 units).

use thiserror::Error;

use super::assembly::{Assembly, NamedText};
use super::errors::EntryKind;
use super::names::is_variable_name;
use super::CONTEXT_SNAPSHOT_PREFIX;

mod budget;

pub use budget::{Budget, Budgeted};

/// Render-time errors; `Display` is the exact text of the TypeScript DeepSeek Harness.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RenderError {
    /// A `{{` that does not start a complete simple group while a `}}` follows it.
    #[error("malformed prompt variable reference at \"{excerpt}…\" in {kind} \"{owner}\" (references are complete simple {{{{name}}}} groups)")]
    MalformedAt {
        /// The next 16 UTF-16 code units from the `{{` (see the module note on surrogates).
        excerpt: String,
        /// `Section` or `Context`.
        kind: EntryKind,
        /// The section or context name.
        owner: String,
    },
    /// A complete group whose name fails `^[a-z][a-z0-9_]*$`.
    #[error("malformed prompt variable reference \"{{{{{reference}}}}}\" in {kind} \"{owner}\" (variable names match /^[a-z][a-z0-9_]*$/)")]
    MalformedName {
        /// The text between the braces, as written.
        reference: String,
        /// `Section` or `Context`.
        kind: EntryKind,
        /// The section or context name.
        owner: String,
    },
    /// A well-formed name that is not a registered variable.
    #[error("unknown prompt variable \"{{{{{reference}}}}}\" in {kind} \"{owner}\"; registered variables: {registered}")]
    Unknown {
        /// The variable name.
        reference: String,
        /// `Section` or `Context`.
        kind: EntryKind,
        /// The section or context name.
        owner: String,
        /// The registered names joined with `, ` in key order, or `(none)`.
        registered: String,
    },
    /// The rendering would grow past its byte budget (host.toml `[prompt] max_prompt_bytes`
    /// or `max_context_bytes`); detected before the text is allocated.
    #[error("{}", budget::describe(self))]
    OverBudget {
        /// The budget's name and limit.
        budget: Budget,
        /// `Section` or `Context`: the entry whose text crosses the limit.
        kind: EntryKind,
        /// Its name.
        owner: String,
        /// What that entry alone renders to, in bytes (saturating).
        entry_bytes: usize,
        /// The variable that contributes most to it: name, value bytes, references.
        variable: Option<(String, usize, usize)>,
    },
    /// A registered variable with no value for this assembly.
    #[error("prompt variable \"{{{{{reference}}}}}\" has no value for this assembly ({kind} \"{owner}\")")]
    NoValue {
        /// The variable name.
        reference: String,
        /// `Section` or `Context`.
        kind: EntryKind,
        /// The section or context name.
        owner: String,
    },
}

impl RenderError {
    /// The section or context the error is in: its kind and name.
    pub fn entry(&self) -> (EntryKind, &str) {
        match self {
            Self::MalformedAt { kind, owner, .. }
            | Self::MalformedName { kind, owner, .. }
            | Self::Unknown { kind, owner, .. }
            | Self::NoValue { kind, owner, .. }
            | Self::OverBudget { kind, owner, .. } => (*kind, owner),
        }
    }

    /// The registered variable the error is about: the one without a value, or the one
    /// that contributes most to a rendering over its budget. An unknown or malformed
    /// reference names no registered variable.
    pub fn variable(&self) -> Option<&str> {
        match self {
            Self::NoValue { reference, .. } => Some(reference),
            Self::OverBudget { variable, .. } => {
                variable.as_ref().map(|(name, _, _)| name.as_str())
            }
            Self::MalformedAt { .. } | Self::MalformedName { .. } | Self::Unknown { .. } => None,
        }
    }

    /// The reference as written, when the error is about one (unknown, or without a value).
    pub fn reference(&self) -> Option<&str> {
        match self {
            Self::Unknown { reference, .. } | Self::NoValue { reference, .. } => Some(reference),
            _ => None,
        }
    }
}

/// The system prompt: interpolated sections, empty ones dropped, joined with `\n\n`.
pub fn render_prompt(assembly: &Assembly) -> Result<String, RenderError> {
    render_prompt_within(assembly, usize::MAX)
}

/// [`render_prompt`], failing with [`RenderError::OverBudget`] instead of producing more than
/// `max_bytes` bytes. The check runs before each piece is appended, so an amplifying
/// template (a large value referenced many times) never allocates past the budget.
pub fn render_prompt_within(assembly: &Assembly, max_bytes: usize) -> Result<String, RenderError> {
    let estimate: usize = assembly.sections.iter().map(|s| s.text.len() + 2).sum();
    let mut out = String::with_capacity(estimate.min(max_bytes));
    let vars = Vars::new(&assembly.variables);
    let budget = Budget::prompt(max_bytes);
    for section in &assembly.sections {
        append_joined(
            &mut out,
            &section.text,
            Entry {
                kind: EntryKind::Section,
                owner: &section.name,
                budget,
            },
            &vars,
        )?;
    }
    Ok(out)
}

/// The interpolated contexts whose text is not empty.
pub fn render_context_sections(assembly: &Assembly) -> Result<Vec<NamedText>, RenderError> {
    render_context_sections_within(assembly, usize::MAX)
}

/// [`render_context_sections`], failing with [`RenderError::OverBudget`] before the snapshot
/// they join into ([`join_context_sections`]) would exceed `max_bytes` bytes.
pub fn render_context_sections_within(
    assembly: &Assembly,
    max_bytes: usize,
) -> Result<Vec<NamedText>, RenderError> {
    let mut rendered = Vec::with_capacity(assembly.contexts.len());
    let vars = Vars::new(&assembly.variables);
    let budget = Budget::context(max_bytes);
    // What the joined snapshot holds so far: the prefix, then `\n\n` before each text.
    let mut joined = CONTEXT_SNAPSHOT_PREFIX.len();
    for context in &assembly.contexts {
        let room = max_bytes.saturating_sub(joined.saturating_add(2));
        let mut text = String::with_capacity(context.text.len().min(room));
        interpolate_with(
            &mut text,
            &context.text,
            Entry {
                kind: EntryKind::Context,
                owner: &context.name,
                budget: Budget {
                    limit: room,
                    ..budget
                },
            },
            &vars,
        )
        .map_err(|e| budget.restore(e))?;
        if !text.is_empty() {
            joined += 2 + text.len();
            rendered.push(NamedText {
                name: context.name.clone(),
                text,
            });
        }
    }
    Ok(rendered)
}

/// The snapshot message: the prefix, `\n\n`, then the texts joined with `\n\n`; `""` when
/// that body is empty. Entries are joined as given (two empty entries make a `\n\n` body).
pub fn join_context_sections(sections: &[NamedText]) -> String {
    let body_empty = match sections {
        [] => true,
        [only] => only.text.is_empty(),
        _ => false,
    };
    if body_empty {
        return String::new();
    }
    let body_len: usize = sections.iter().map(|s| s.text.len() + 2).sum();
    let mut out = String::with_capacity(CONTEXT_SNAPSHOT_PREFIX.len() + body_len);
    out.push_str(CONTEXT_SNAPSHOT_PREFIX);
    out.push_str("\n\n");
    for (i, section) in sections.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str(&section.text);
    }
    out
}

/// `join_context_sections(render_context_sections(a))`, built in one output buffer.
pub fn render_context_snapshot(assembly: &Assembly) -> Result<String, RenderError> {
    let estimate: usize = assembly.contexts.iter().map(|c| c.text.len() + 2).sum();
    let mut out = String::with_capacity(CONTEXT_SNAPSHOT_PREFIX.len() + 2 + estimate);
    out.push_str(CONTEXT_SNAPSHOT_PREFIX);
    out.push_str("\n\n");
    let body_start = out.len();
    let vars = Vars::new(&assembly.variables);
    for context in &assembly.contexts {
        let mark = out.len();
        if mark > body_start {
            out.push_str("\n\n");
        }
        let start = out.len();
        interpolate_with(
            &mut out,
            &context.text,
            Entry {
                kind: EntryKind::Context,
                owner: &context.name,
                budget: Budget::context(usize::MAX),
            },
            &vars,
        )?;
        if out.len() == start {
            out.truncate(mark);
        }
    }
    if out.len() == body_start {
        out.clear();
    }
    Ok(out)
}

/// Interpolate `text` onto `out`, preceded by `\n\n` when `out` already holds something; an
/// empty result leaves `out` unchanged.
fn append_joined(
    out: &mut String,
    text: &str,
    entry: Entry<'_>,
    variables: &Vars<'_>,
) -> Result<(), RenderError> {
    let mark = out.len();
    if mark > 0 {
        out.push_str("\n\n");
    }
    let start = out.len();
    interpolate_with(out, text, entry, variables)?;
    if out.len() == start {
        out.truncate(mark);
    }
    Ok(())
}

/// The variables of one rendering, indexed by name when there are many, so a text with
/// many references to many variables costs one lookup per reference, not a scan.
struct Vars<'a> {
    list: &'a [(String, Option<String>)],
    index: Option<std::collections::HashMap<&'a str, Option<&'a str>>>,
}

impl<'a> Vars<'a> {
    /// Below this many variables a linear scan is cheaper than hashing.
    const INDEX_FROM: usize = 32;

    fn new(list: &'a [(String, Option<String>)]) -> Self {
        let index = (list.len() >= Self::INDEX_FROM).then(|| {
            let mut map = std::collections::HashMap::with_capacity(list.len());
            for (key, value) in list {
                // The first entry of a name wins, as the scan's `find` does.
                map.entry(key.as_str()).or_insert(value.as_deref());
            }
            map
        });
        Self { list, index }
    }

    /// `None` = not registered; `Some(None)` = registered without a value.
    fn get(&self, name: &str) -> Option<Option<&'a str>> {
        match &self.index {
            Some(map) => map.get(name).copied(),
            None => self
                .list
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, v)| v.as_deref()),
        }
    }
}

/// Interpolate one text onto `out`.
pub fn interpolate_into(
    out: &mut String,
    text: &str,
    kind: EntryKind,
    owner: &str,
    variables: &[(String, Option<String>)],
) -> Result<(), RenderError> {
    let entry = Entry {
        kind,
        owner,
        budget: Budget::prompt(usize::MAX),
    };
    interpolate_with(out, text, entry, &Vars::new(variables))
}

/// The entry a text belongs to, for error messages, and the budget `out` must stay within.
#[derive(Clone, Copy)]
struct Entry<'a> {
    kind: EntryKind,
    owner: &'a str,
    budget: Budget,
}

impl Entry<'_> {
    /// Append `piece` unless `out` would outgrow the budget.
    #[inline]
    fn push(
        &self,
        out: &mut String,
        piece: &str,
        text: &str,
        variables: &Vars<'_>,
    ) -> Result<(), RenderError> {
        if piece.len() > self.budget.limit.saturating_sub(out.len()) {
            return Err(budget::exceeded(self, text, variables));
        }
        out.push_str(piece);
        Ok(())
    }
}

fn interpolate_with(
    out: &mut String,
    text: &str,
    entry: Entry<'_>,
    variables: &Vars<'_>,
) -> Result<(), RenderError> {
    let Entry { kind, owner, .. } = entry;
    let bytes = text.as_bytes();
    // Most texts hold no `{{`: for them one byte search is all the work.
    let Some(first_open) = find_open(text, 0) else {
        return entry.push(out, text, text, variables);
    };
    // A `{{` is a group or a malformed reference only if some `}}` starts at or after its
    // third byte; past the last `}}` everything is literal, which keeps the scan linear.
    let Some(last_close) = rfind_close(text) else {
        return entry.push(out, text, text, variables);
    };
    let mut last = 0;
    let mut next = Some(first_open);
    while let Some(open) = next {
        if last_close < open + 2 {
            break;
        }
        let Some(close) = group_close(bytes, open + 2) else {
            return Err(RenderError::MalformedAt {
                excerpt: excerpt16(&text[open..]).to_string(),
                kind,
                owner: owner.to_string(),
            });
        };
        let name = &text[open + 2..close];
        if !is_variable_name(name) {
            return Err(RenderError::MalformedName {
                reference: name.to_string(),
                kind,
                owner: owner.to_string(),
            });
        }
        let value = match variables.get(name) {
            Some(Some(value)) => value,
            Some(None) => {
                return Err(RenderError::NoValue {
                    reference: name.to_string(),
                    kind,
                    owner: owner.to_string(),
                })
            }
            None => {
                return Err(RenderError::Unknown {
                    reference: name.to_string(),
                    kind,
                    owner: owner.to_string(),
                    registered: registered_list(variables.list),
                })
            }
        };
        entry.push(out, &text[last..open], text, variables)?;
        // Values are inserted verbatim and never re-scanned.
        entry.push(out, value, text, variables)?;
        last = close + 2;
        next = find_open(text, last);
    }
    entry.push(out, &text[last..], text, variables)
}

/// The first `{{` at or after byte `from` (a char boundary). Searching for the byte `{`
/// (memchr) and checking the next one is several times cheaper than a substring search,
/// which sets up a two-way searcher on every call.
fn find_open(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(found) = text[at..].find('{') {
        let pos = at + found;
        if bytes.get(pos + 1) == Some(&b'{') {
            return Some(pos);
        }
        // `{` is ASCII, so the next byte starts a char.
        at = pos + 1;
    }
    None
}

/// Where the last `}}` in `text` starts (as `rfind("}}")`, by byte search).
fn rfind_close(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut end = bytes.len();
    while let Some(pos) = text[..end].rfind('}') {
        if pos > 0 && bytes[pos - 1] == b'}' {
            return Some(pos - 1);
        }
        end = pos;
    }
    None
}

/// Where the `}}` of a complete simple group starting at `start` (just after `{{`) begins:
/// `[^{}]*` then `}}`. Brace-free runs cannot backtrack into a brace, so the first brace
/// decides.
fn group_close(bytes: &[u8], start: usize) -> Option<usize> {
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        match b {
            b'{' => return None,
            b'}' => return (bytes.get(i + 1) == Some(&b'}')).then_some(i),
            _ => {}
        }
    }
    None
}

/// The longest prefix of `text` that fits in 16 UTF-16 code units without splitting a
/// surrogate pair.
fn excerpt16(text: &str) -> &str {
    let mut units = 0;
    for (index, ch) in text.char_indices() {
        units += ch.len_utf16();
        if units > 16 {
            return &text[..index];
        }
    }
    text
}

fn registered_list(variables: &[(String, Option<String>)]) -> String {
    if variables.is_empty() {
        return "(none)".to_string();
    }
    let names: Vec<&str> = variables.iter().map(|(k, _)| k.as_str()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests;
