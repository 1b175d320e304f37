//! Assembly invariants: always checked, because listeners are untrusted. The texts are those
//! of the TypeScript DeepSeek Harness; its two "must be a string" checks cannot fail in Rust
//! (texts are `String`, values `Option<String>`) and are not implemented.
//!
//! Where they are checked: on the assembly built from the registry, before the waterfall
//! (only an empty section, context or tool name can fail there; it is blamed on the plugin
//! that registered it, even if a listener would have removed it), then after each listener
//! returns (blamed on that listener's plugin). The outermost listener's result is the final
//! result, so that is checked too.
//!
//! One addition: `Assembly::variables` is a list, so a listener could push a name twice; that
//! is refused with `assembled variable name "x" is duplicated` (the TypeScript DeepSeek
//! Harness keeps variables in a map, which cannot hold it).

use std::collections::HashSet;

use super::assembly::{Assembly, NamedText};
use super::names::is_variable_name;

/// The first broken invariant of `assembly`, as its exact text.
pub fn check(assembly: &Assembly) -> Option<String> {
    check_named(&assembly.sections, "section")
        .or_else(|| check_named(&assembly.contexts, "context"))
        .or_else(|| {
            assembly
                .tools
                .iter()
                .any(|t| t.name.is_empty())
                .then(|| "assembled tool names must be non-empty".to_string())
        })
        .or_else(|| check_variables(&assembly.variables))
}

/// A name as the TypeScript DeepSeek Harness's messages show it (`JSON.stringify`): quoted,
/// with `"`, `\\` and control characters escaped.
fn json(name: &str) -> String {
    serde_json::Value::String(name.to_string()).to_string()
}

fn check_named(entries: &[NamedText], kind: &str) -> Option<String> {
    first_problem(
        entries.iter().map(|e| e.name.as_str()),
        |name, duplicated| {
            if name.is_empty() {
                Some(format!("assembled {kind} names must be non-empty"))
            } else if duplicated {
                Some(format!(
                    "assembled {kind} name {} is duplicated",
                    json(name)
                ))
            } else {
                None
            }
        },
    )
}

fn check_variables(variables: &[(String, Option<String>)]) -> Option<String> {
    first_problem(
        variables.iter().map(|(k, _)| k.as_str()),
        |name, duplicated| {
            if !is_variable_name(name) {
                Some(format!("assembled variable name {} is invalid", json(name)))
            } else if duplicated {
                Some(format!(
                    "assembled variable name {} is duplicated",
                    json(name)
                ))
            } else {
                None
            }
        },
    )
}

/// Walk names in order, telling `judge` whether each one was already seen. Small lists (the
/// usual case) are checked pairwise without allocating; larger ones use a set.
fn first_problem<'a>(
    names: impl ExactSizeIterator<Item = &'a str> + Clone,
    judge: impl Fn(&str, bool) -> Option<String>,
) -> Option<String> {
    const PAIRWISE_LIMIT: usize = 24;
    if names.len() <= PAIRWISE_LIMIT {
        for (index, name) in names.clone().enumerate() {
            let duplicated = names.clone().take(index).any(|earlier| earlier == name);
            if let Some(problem) = judge(name, duplicated) {
                return Some(problem);
            }
        }
        return None;
    }
    let mut seen: HashSet<&str> = HashSet::with_capacity(names.len());
    for name in names {
        let duplicated = !seen.insert(name);
        if let Some(problem) = judge(name, duplicated) {
            return Some(problem);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::ToolSchema;

    fn base() -> Assembly {
        Assembly {
            sections: vec![NamedText::new("a", "1"), NamedText::new("b", "2")],
            contexts: vec![NamedText::new("c", "3")],
            tools: vec![ToolSchema {
                name: "t".into(),
                description: String::new(),
                parameters: serde_json::json!({}).into(),
            }],
            variables: vec![("v".into(), None)],
        }
    }

    #[test]
    fn clean_assembly_passes() {
        assert_eq!(check(&base()), None);
        assert_eq!(check(&Assembly::default()), None);
    }

    #[test]
    fn each_text() {
        let mut a = base();
        a.sections.push(NamedText::new("", "x"));
        assert_eq!(
            check(&a).unwrap(),
            "assembled section names must be non-empty"
        );
        let mut a = base();
        a.sections.push(NamedText::new("a", "x"));
        assert_eq!(
            check(&a).unwrap(),
            "assembled section name \"a\" is duplicated"
        );
        let mut a = base();
        a.contexts.push(NamedText::new("", "x"));
        assert_eq!(
            check(&a).unwrap(),
            "assembled context names must be non-empty"
        );
        let mut a = base();
        a.contexts.push(NamedText::new("c", "x"));
        assert_eq!(
            check(&a).unwrap(),
            "assembled context name \"c\" is duplicated"
        );
        let mut a = base();
        a.tools[0].name.clear();
        assert_eq!(check(&a).unwrap(), "assembled tool names must be non-empty");
        let mut a = base();
        a.tools.push(a.tools[0].clone());
        assert_eq!(check(&a), None, "duplicate tool names are allowed");
        let mut a = base();
        a.variables.push(("Bad".into(), Some("x".into())));
        assert_eq!(
            check(&a).unwrap(),
            "assembled variable name \"Bad\" is invalid"
        );
        let mut a = base();
        a.variables.push(("v".into(), Some("x".into())));
        assert_eq!(
            check(&a).unwrap(),
            "assembled variable name \"v\" is duplicated"
        );
    }

    #[test]
    fn names_are_json_escaped_like_upstream() {
        let mut a = base();
        a.sections.push(NamedText::new("q\"x", "1"));
        a.sections.push(NamedText::new("q\"x", "2"));
        assert_eq!(
            check(&a).unwrap(),
            "assembled section name \"q\\\"x\" is duplicated"
        );
        let mut a = base();
        a.variables.push(("B\\\n".into(), None));
        assert_eq!(
            check(&a).unwrap(),
            "assembled variable name \"B\\\\\\n\" is invalid"
        );
    }

    #[test]
    fn large_lists_use_the_set_path() {
        let mut a = base();
        a.sections = (0..40)
            .map(|i| NamedText::new(format!("s{i}"), ""))
            .collect();
        assert_eq!(check(&a), None);
        a.sections.push(NamedText::new("s7", ""));
        assert_eq!(
            check(&a).unwrap(),
            "assembled section name \"s7\" is duplicated"
        );
    }
}
