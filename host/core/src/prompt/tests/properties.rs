//! Property tests (proptest) of rendering, assembly and tool order: rendering never panics on
//! arbitrary text and variables, a text without `{{` renders to itself, a successful render
//! leaves no reference behind, assembly is deterministic, and tool order is the UTF-16 order.
//!
//! Case counts are kept modest so the suite stays fast in a debug build; a failure prints the
//! minimal input proptest shrank it to.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

/// Text biased towards the renderer's syntax: braces, valid and invalid names, multi-byte
/// and astral characters, control characters.
fn template() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => Just("{{".to_string()),
        4 => Just("}}".to_string()),
        2 => Just("{".to_string()),
        2 => Just("}".to_string()),
        3 => "[a-c][a-c0-9_]{0,3}",
        1 => Just("Model".to_string()),
        1 => Just(" ".to_string()),
        1 => Just("é😀\u{FF5A}\u{0}\n".to_string()),
        3 => any::<String>(),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|parts| parts.concat())
}

/// Variables: names mostly valid (`a`, `b1`, …), sometimes not; values present or absent,
/// sometimes holding braces themselves.
fn variables() -> impl Strategy<Value = Vec<(String, Option<String>)>> {
    let name = prop_oneof![
        4 => "[a-c][a-c0-9_]{0,3}",
        1 => any::<String>(),
    ];
    let value = prop_oneof![
        3 => "[ -z]{0,8}".prop_map(Some),
        1 => Just(None),
        1 => Just(Some("{{a}}".to_string())),
        1 => any::<String>().prop_map(Some),
    ];
    prop::collection::vec((name, value), 0..6)
}

fn assembly_of(sections: Vec<String>, variables: Vec<(String, Option<String>)>) -> Assembly {
    let mut a = Assembly::default();
    for (name, value) in variables {
        a.set_variable(&name, value);
    }
    for (i, text) in sections.into_iter().enumerate() {
        a.sections.push(NamedText {
            name: format!("s{i}"),
            text: text.clone(),
        });
        a.contexts.push(NamedText {
            name: format!("c{i}"),
            text,
        });
    }
    a
}

/// Whether `text` holds `{{name}}` with `name` a well-formed variable name.
fn has_reference(text: &str) -> bool {
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        if let Some(close) = after.find("}}") {
            if is_variable_name(&after[..close]) {
                return true;
            }
        }
        rest = &rest[open + 1..];
    }
    false
}

fn utf16_reference(a: &str, b: &str) -> Ordering {
    let a: Vec<u16> = a.encode_utf16().collect();
    let b: Vec<u16> = b.encode_utf16().collect();
    a.cmp(&b)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn rendering_never_panics(
        sections in prop::collection::vec(template(), 0..4),
        variables in variables(),
    ) {
        let a = assembly_of(sections, variables);
        let prompt = render_prompt(&a);
        let contexts = render_context_sections(&a);
        let snapshot = render_context_snapshot(&a);
        // The three renderers agree on whether the texts are renderable.
        prop_assert_eq!(prompt.is_ok(), contexts.is_ok());
        prop_assert_eq!(contexts.is_ok(), snapshot.is_ok());
        if let Err(e) = prompt {
            // Every error names the section it came from.
            prop_assert!(e.to_string().contains("section \"s"), "{}", e);
        }
    }

    #[test]
    fn a_text_without_double_braces_renders_to_itself(
        text in any::<String>().prop_filter("no {{", |t| !t.contains("{{")),
        variables in variables(),
    ) {
        let a = assembly_of(vec![text.clone()], variables);
        prop_assert_eq!(render_prompt(&a), Ok(text.clone()));
        let mut out = String::new();
        render::interpolate_into(&mut out, &text, EntryKind::Context, "c", &a.variables)
            .expect("no reference, no error");
        prop_assert_eq!(out, text);
    }

    #[test]
    fn a_successful_render_leaves_no_reference(
        sections in prop::collection::vec(template(), 1..4),
        names in prop::collection::btree_set("[a-c][a-c0-9_]{0,2}", 0..8),
        values in prop::collection::vec("[ -z&&[^{}]]{0,6}", 8),
    ) {
        // Values without braces: whatever a render outputs came from the texts.
        let variables: Vec<(String, Option<String>)> = names
            .into_iter()
            .zip(values)
            .map(|(n, v)| (n, Some(v)))
            .collect();
        let a = assembly_of(sections, variables);
        if let Ok(prompt) = render_prompt(&a) {
            prop_assert!(!has_reference(&prompt), "{:?}", prompt);
        }
        if let Ok(contexts) = render_context_sections(&a) {
            for c in contexts {
                prop_assert!(!has_reference(&c.text), "{:?}", c.text);
            }
        }
    }

    #[test]
    fn utf16_cmp_is_a_total_order_matching_utf16_code_units(
        a in any::<String>(),
        b in any::<String>(),
        c in any::<String>(),
    ) {
        prop_assert_eq!(utf16_cmp(&a, &b), utf16_reference(&a, &b));
        prop_assert_eq!(utf16_cmp(&a, &b), utf16_cmp(&b, &a).reverse());
        prop_assert_eq!(utf16_cmp(&a, &b) == Ordering::Equal, a == b);
        prop_assert_eq!(utf16_cmp(&a, &a), Ordering::Equal);
        if utf16_cmp(&a, &b) != Ordering::Greater && utf16_cmp(&b, &c) != Ordering::Greater {
            prop_assert_ne!(utf16_cmp(&a, &c), Ordering::Greater);
        }
    }

    #[test]
    fn assembled_tools_are_in_utf16_order_whatever_the_registration_order(
        names in prop::collection::btree_set(
            // Names must be non-empty (an assembly invariant).
            prop_oneof![
                "[a-d_]{1,4}",
                "[\u{E000}-\u{E002}\u{FF5A}😀a]{1,3}",
                any::<String>().prop_filter("non-empty", |s| !s.is_empty()),
            ],
            0..12,
        ),
        rotate in 0usize..12,
        split in 0usize..12,
    ) {
        let names: Vec<String> = names.into_iter().collect();
        let mut shuffled = names.clone();
        if !shuffled.is_empty() {
            let n = shuffled.len();
            shuffled.rotate_left(rotate % n);
            shuffled.reverse();
        }
        let split = split.min(shuffled.len());
        let r = reg();
        let f = r.fiber("p", None);
        let (one, two) = shuffled.split_at(split);
        for part in [one, two] {
            let refs: Vec<&str> = part.iter().map(String::as_str).collect();
            f.tools(static_tools(&refs));
        }
        let got: Vec<String> = assemble(&r, None).tools.into_iter().map(|t| t.name).collect();
        let mut expected = names.clone();
        expected.sort_by(|a, b| utf16_reference(a, b));
        prop_assert_eq!(&got, &expected);
        for pair in got.windows(2) {
            prop_assert_eq!(utf16_cmp(&pair[0], &pair[1]), Ordering::Less);
        }
    }

    #[test]
    fn assembly_is_deterministic(
        sections in prop::collection::vec(
            ("[a-e]{1,3}", prop_oneof![Just(0.0), Just(1.0), -5.0f64..500.0], template()),
            0..10,
        ),
        scoped in prop::collection::vec(any::<bool>(), 10),
        tools in prop::collection::btree_set("[a-e]{1,3}", 0..6),
        variables in prop::collection::btree_set("[a-c]{1,2}", 0..4),
        facts in prop::collection::vec(("[a-c]{1,2}", "[a-z]{0,4}"), 0..3),
    ) {
        // Built twice the same way; each assembled twice.
        let build = || {
            let r = reg();
            r.bind_scope_parent("child", "S").expect("scope");
            let global = r.fiber("g", None);
            let scoped_fiber = r.fiber("s", Some("child"));
            let mut seen = BTreeSet::new();
            for (i, (name, order, text)) in sections.iter().enumerate() {
                // Names must be unique per layer; keep the first of a repeat.
                let at_scope = scoped[i % scoped.len()];
                if !seen.insert((at_scope, name.clone())) {
                    continue;
                }
                let fiber = if at_scope { &scoped_fiber } else { &global };
                fiber.section(fixed(name, *order, text)).expect("section");
                if i % 3 == 0 {
                    fiber.context(fixed(name, *order, text)).expect("context");
                }
            }
            let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
            global.tools(static_tools(&tools));
            for (i, name) in variables.iter().enumerate() {
                let fiber = if i % 2 == 0 { &global } else { &scoped_fiber };
                let name_for_fact = name.clone();
                fiber
                    .variable(
                        name,
                        var(move |cx| Ok(cx.fact(&name_for_fact).map(str::to_string))),
                    )
                    .expect("variable");
            }
            (r, global, scoped_fiber)
        };
        let context = || AssembleContext::with_facts(facts.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let (r1, _g1, _s1) = build();
        let (r2, _g2, _s2) = build();
        for scope in [None, Some("child")] {
            let first = r1.assemble_blocking(scope, context()).expect("assemble");
            let again = r1.assemble_blocking(scope, context()).expect("assemble");
            let other = r2.assemble_blocking(scope, context()).expect("assemble");
            prop_assert_eq!(&first, &again);
            prop_assert_eq!(&first, &other);
            let rendered = |a: &Assembly| {
                (
                    render_prompt(a).map_err(|e| e.to_string()),
                    render_context_snapshot(a).map_err(|e| e.to_string()),
                    serde_json::to_vec(&a.to_json()).expect("json"),
                )
            };
            prop_assert_eq!(rendered(&first), rendered(&again));
            prop_assert_eq!(rendered(&first), rendered(&other));
        }
    }
}
