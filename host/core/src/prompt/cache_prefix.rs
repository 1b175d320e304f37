//! Cache-prefix report: does a new prompt keep the previous one as a byte prefix, and if not,
//! where does reuse of a model's KV cache stop?
//!
//! Providers cache the key/value state of a prompt's longest unchanged prefix. A section
//! that changes early in the prompt (a clock in the persona, say) makes every byte after it a
//! cache miss; this report names the first section that changed and the byte offset.

use serde::Serialize;

use super::assembly::Assembly;
use super::errors::EntryKind;
use super::render::{interpolate_into, render_prompt_within, RenderError};

/// Where one section's text lies in the rendered prompt (byte offsets, end exclusive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionSpan {
    /// The section name.
    pub name: String,
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// Render `assembly`'s sections and say where each landed. Empty sections take no span,
/// exactly as `render_prompt` drops them. The prompt may hold at most `max_bytes` bytes
/// (see [`render_prompt_within`]).
pub fn section_spans(
    assembly: &Assembly,
    max_bytes: usize,
) -> Result<(String, Vec<SectionSpan>), RenderError> {
    // Check the budget (and every reference) first: the spans below then cannot outgrow it.
    render_prompt_within(assembly, max_bytes)?;
    let mut out = String::new();
    let mut spans = Vec::with_capacity(assembly.sections.len());
    let mut text = String::new();
    for section in &assembly.sections {
        text.clear();
        interpolate_into(
            &mut text,
            &section.text,
            EntryKind::Section,
            &section.name,
            &assembly.variables,
        )?;
        if text.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        let start = out.len();
        out.push_str(&text);
        spans.push(SectionSpan {
            name: section.name.clone(),
            start,
            end: out.len(),
        });
    }
    Ok((out, spans))
}

/// The comparison of a new prompt with a previous one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrefixReport {
    /// The new prompt starts with the whole previous prompt.
    pub keeps_prefix: bool,
    /// Bytes of the previous prompt a KV cache can reuse (the common prefix, on a character
    /// boundary).
    pub reusable_bytes: usize,
    /// Size of the previous prompt.
    pub previous_bytes: usize,
    /// Size of the new prompt.
    pub current_bytes: usize,
    /// The section of the new prompt in which the first difference lies (`None` when the
    /// prefix is kept, or when the new prompt simply ends early).
    pub first_changed_section: Option<String>,
}

/// Compare `current` (with its section spans) against `previous`.
pub fn compare(previous: &str, current: &str, spans: &[SectionSpan]) -> PrefixReport {
    let mut common = previous
        .bytes()
        .zip(current.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !current.is_char_boundary(common) || !previous.is_char_boundary(common) {
        common -= 1;
    }
    let keeps_prefix = common == previous.len();
    let first_changed_section = if keeps_prefix {
        None
    } else {
        // The difference may sit in the `\n\n` between two sections: blame the next one.
        spans
            .iter()
            .find(|s| common < s.end)
            .map(|s| s.name.clone())
    };
    PrefixReport {
        keeps_prefix,
        reusable_bytes: common,
        previous_bytes: previous.len(),
        current_bytes: current.len(),
        first_changed_section,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::NamedText;

    fn assembly(sections: &[(&str, &str)]) -> Assembly {
        Assembly {
            sections: sections
                .iter()
                .map(|(n, t)| NamedText::new(*n, *t))
                .collect(),
            ..Assembly::default()
        }
    }

    #[test]
    fn spans_match_render() {
        let a = assembly(&[("a", "one"), ("e", ""), ("b", "two")]);
        let (text, spans) = section_spans(&a, usize::MAX).unwrap();
        assert_eq!(text, crate::prompt::render_prompt(&a).unwrap());
        assert_eq!(spans.len(), 2);
        assert_eq!(&text[spans[1].start..spans[1].end], "two");
    }

    #[test]
    fn appended_section_keeps_prefix() {
        let a = assembly(&[("a", "one"), ("b", "two")]);
        let (text, spans) = section_spans(&a, usize::MAX).unwrap();
        let r = compare("one", &text, &spans);
        assert!(r.keeps_prefix);
        assert_eq!(r.reusable_bytes, 3);
        assert_eq!(r.first_changed_section, None);
    }

    #[test]
    fn change_names_first_changed_section() {
        let a = assembly(&[("a", "one"), ("b", "two"), ("c", "three")]);
        let (text, spans) = section_spans(&a, usize::MAX).unwrap();
        let r = compare("one\n\ntwX\n\nthree", &text, &spans);
        assert!(!r.keeps_prefix);
        assert_eq!(r.reusable_bytes, 7);
        assert_eq!(r.first_changed_section.as_deref(), Some("b"));
    }

    #[test]
    fn removed_section_blames_the_one_after() {
        let a = assembly(&[("a", "one"), ("c", "three")]);
        let (text, spans) = section_spans(&a, usize::MAX).unwrap();
        let r = compare("one\n\ntwo\n\nthree", &text, &spans);
        // "one\n\nt" still matches: "two" and "three" share their first byte.
        assert_eq!(r.reusable_bytes, 6);
        assert_eq!(r.first_changed_section.as_deref(), Some("c"));
    }

    #[test]
    fn offset_stays_on_a_char_boundary() {
        let a = assembly(&[("a", "é")]);
        let (text, spans) = section_spans(&a, usize::MAX).unwrap();
        // "é" = C3 A9, "è" = C3 A8: one shared byte that is not a whole character.
        let r = compare("è", &text, &spans);
        assert_eq!(r.reusable_bytes, 0);
    }
}
