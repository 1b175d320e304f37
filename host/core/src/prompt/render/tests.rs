//! The rendering conformance vectors: R1–R36 (interpolating sections: values, unknown and
//! valueless variables, malformed references and their excerpts), C1–C7 (the runtime-context
//! snapshot and sections) and J1 (joining context sections).

use super::*;
use crate::prompt::CONTEXT_SNAPSHOT_PREFIX as P;

fn asm(sections: &[(&str, &str)], vars: &[(&str, Option<&str>)]) -> Assembly {
    Assembly {
        sections: sections
            .iter()
            .map(|(n, t)| NamedText::new(*n, *t))
            .collect(),
        contexts: Vec::new(),
        tools: Vec::new(),
        variables: vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect(),
    }
}

fn ctx_asm(contexts: &[(&str, &str)], vars: &[(&str, Option<&str>)]) -> Assembly {
    let mut a = asm(&[], vars);
    a.contexts = contexts
        .iter()
        .map(|(n, t)| NamedText::new(*n, *t))
        .collect();
    a
}

fn ok(sections: &[(&str, &str)], vars: &[(&str, Option<&str>)]) -> String {
    render_prompt(&asm(sections, vars)).expect("render ok")
}

fn err(sections: &[(&str, &str)], vars: &[(&str, Option<&str>)]) -> String {
    render_prompt(&asm(sections, vars))
        .expect_err("render error")
        .to_string()
}

const MALFORMED_TAIL: &str = "(references are complete simple {{name}} groups)";
const NAME_TAIL: &str = "(variable names match /^[a-z][a-z0-9_]*$/)";

#[test]
fn r1_to_r4_plain_and_verbatim_values() {
    assert_eq!(ok(&[("s", "content")], &[]), "content");
    assert_eq!(ok(&[("empty", ""), ("real", "content")], &[]), "content");
    assert_eq!(ok(&[("a", ""), ("b", "")], &[]), "");
    assert_eq!(
        ok(
            &[("s", "v = {{model}}!")],
            &[("model", Some("literal {{sneaky}} inside"))]
        ),
        "v = literal {{sneaky}} inside!"
    );
}

#[test]
fn r5_to_r8_unknown_no_value_malformed_name() {
    assert_eq!(
        err(&[("s", "{{x}}")], &[]),
        "unknown prompt variable \"{{x}}\" in section \"s\"; registered variables: (none)"
    );
    assert_eq!(
        err(&[("persona", "on {{modle}}")], &[("model", Some("m"))]),
        "unknown prompt variable \"{{modle}}\" in section \"persona\"; registered variables: model"
    );
    assert_eq!(
        err(&[("persona", "in {{cwd}}")], &[("cwd", None)]),
        "prompt variable \"{{cwd}}\" has no value for this assembly (section \"persona\")"
    );
    assert_eq!(
        err(&[("s", "on {{ model }}")], &[("model", Some("m"))]),
        format!(
            "malformed prompt variable reference \"{{{{ model }}}}\" in section \"s\" {NAME_TAIL}"
        )
    );
}

#[test]
fn r9_to_r14() {
    assert_eq!(
        ok(&[("s", "shell ${X:-{{fallback} stays")], &[]),
        "shell ${X:-{{fallback} stays"
    );
    assert_eq!(
        err(&[("s", "{{{model}}}")], &[("model", Some("m"))]),
        format!("malformed prompt variable reference at \"{{{{{{model}}}}}}…\" in section \"s\" {MALFORMED_TAIL}")
    );
    assert_eq!(
        err(&[("s", "x {{a{b}} y {{model}}")], &[("model", Some("m"))]),
        format!("malformed prompt variable reference at \"{{{{a{{b}}}} y {{{{mode…\" in section \"s\" {MALFORMED_TAIL}")
    );
    assert_eq!(
        err(&[("s", "on {{constructor}}")], &[("model", Some("m"))]),
        "unknown prompt variable \"{{constructor}}\" in section \"s\"; registered variables: model"
    );
    assert_eq!(
        err(&[("s", "{{}}")], &[("model", Some("m"))]),
        format!("malformed prompt variable reference \"{{{{}}}}\" in section \"s\" {NAME_TAIL}")
    );
    assert_eq!(
        err(&[("s", "{{Model}}")], &[("model", Some("m"))]),
        format!(
            "malformed prompt variable reference \"{{{{Model}}}}\" in section \"s\" {NAME_TAIL}"
        )
    );
}

#[test]
fn r15_to_r20() {
    assert_eq!(
        ok(
            &[("s", "{{a}}{{b}}")],
            &[("a", Some("1")), ("b", Some("2"))]
        ),
        "12"
    );
    assert_eq!(
        ok(&[("s", "{{a}} and {{a}}")], &[("a", Some("x"))]),
        "x and x"
    );
    assert_eq!(ok(&[("s", "a {{ b")], &[]), "a {{ b");
    assert_eq!(ok(&[("s", "x }} y")], &[]), "x }} y");
    assert_eq!(
        ok(&[("s1", "{{a}}"), ("s2", "tail")], &[("a", Some(""))]),
        "tail"
    );
    assert_eq!(ok(&[("s", "{{a}}}")], &[("a", Some("X"))]), "X}");
}

#[test]
fn r21_to_r26() {
    let e = render_prompt(&asm(&[("s", "{{{{a}}")], &[("a", Some("X"))])).unwrap_err();
    assert!(matches!(&e, RenderError::MalformedAt { excerpt, .. } if excerpt == "{{{{a}}"));
    assert_eq!(
        ok(
            &[("s", "{{a_1}}/{{b2}}")],
            &[("a_1", Some("p")), ("b2", Some("q"))]
        ),
        "p/q"
    );
    for (text, reference) in [("{{1a}}", "1a"), ("{{a-b}}", "a-b"), ("{{a\n}}", "a\n")] {
        let e = render_prompt(&asm(&[("s", text)], &[("a", Some("x"))])).unwrap_err();
        assert_eq!(
            e,
            RenderError::MalformedName {
                reference: reference.to_string(),
                kind: EntryKind::Section,
                owner: "s".into()
            }
        );
    }
    assert_eq!(ok(&[("s", "v={{a}}")], &[("a", Some("$&$1"))]), "v=$&$1");
}

#[test]
fn r27_to_r31() {
    assert_eq!(
        ok(&[("s", "{{a}} then {{ lone")], &[("a", Some("A"))]),
        "A then {{ lone"
    );
    assert_eq!(
        err(&[("s", "{{ lone then {{a}}")], &[("a", Some("A"))]),
        format!("malformed prompt variable reference at \"{{{{ lone then {{{{a…\" in section \"s\" {MALFORMED_TAIL}")
    );
    assert_eq!(
        err(
            &[("s", "{{zz}}")],
            &[("b", Some("1")), ("a", Some("2")), ("c", None)]
        ),
        "unknown prompt variable \"{{zz}}\" in section \"s\"; registered variables: b, a, c"
    );
    assert_eq!(
        err(&[("x", "{{a}}"), ("y", "{{b}}")], &[("a", Some("A"))]),
        "unknown prompt variable \"{{b}}\" in section \"y\"; registered variables: a"
    );
    let e = render_prompt(&asm(&[("x", "{{b}}"), ("y", "{{c}}")], &[])).unwrap_err();
    assert!(matches!(&e, RenderError::Unknown { owner, .. } if owner == "x"));
}

#[test]
fn r32_excerpt_drops_the_lone_high_surrogate() {
    let e = render_prompt(&asm(&[("s", "{{{😀😀😀😀😀😀😀 }}")], &[])).unwrap_err();
    // The TypeScript DeepSeek Harness gives `{{{` + 6 emoji + "\ud83d" (16 units). We stop
    // before the split pair.
    let RenderError::MalformedAt { excerpt, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(excerpt, "{{{😀😀😀😀😀😀");
    assert_eq!(excerpt.encode_utf16().count(), 15);
}

#[test]
fn r33_to_r36() {
    assert_eq!(
        err(&[("s", "pre {{a}} {{ post }}")], &[("a", Some("A"))]),
        format!(
            "malformed prompt variable reference \"{{{{ post }}}}\" in section \"s\" {NAME_TAIL}"
        )
    );
    assert_eq!(ok(&[("s", "{{")], &[]), "{{");
    assert_eq!(ok(&[("s", "}}{{")], &[]), "}}{{");
    assert_eq!(
        ok(&[("one", "a{{b}}c"), ("two", "d")], &[("b", Some("\n\n"))]),
        "a\n\nc\n\nd"
    );
}

#[test]
fn excerpt_shorter_than_16_units_still_gets_the_ellipsis() {
    let e = err(&[("s", "{{{x}}")], &[]);
    assert!(e.starts_with("malformed prompt variable reference at \"{{{x}}…\""));
}

#[test]
fn c1_to_c4() {
    let a = ctx_asm(&[], &[]);
    assert_eq!(render_context_snapshot(&a).unwrap(), "");
    assert_eq!(render_context_sections(&a).unwrap(), vec![]);

    let a = ctx_asm(&[("earlier", "context 1"), ("later", "context 2")], &[]);
    assert_eq!(
        render_context_snapshot(&a).unwrap(),
        format!("{P}\n\ncontext 1\n\ncontext 2")
    );
    assert_eq!(render_context_sections(&a).unwrap(), a.contexts);

    let a = ctx_asm(&[("empty", "")], &[]);
    assert_eq!(render_context_snapshot(&a).unwrap(), "");
    assert_eq!(render_context_sections(&a).unwrap(), vec![]);

    let a = ctx_asm(
        &[("empty", ""), ("policy", "Mode: {{mode}}.")],
        &[("mode", Some("read-only"))],
    );
    assert_eq!(
        render_context_snapshot(&a).unwrap(),
        format!("{P}\n\nMode: read-only.")
    );
    assert_eq!(
        render_context_sections(&a).unwrap(),
        vec![NamedText::new("policy", "Mode: read-only.")]
    );
}

#[test]
fn c5_to_c7_and_j1() {
    let a = ctx_asm(&[("policy", "Mode: {{missing}}.")], &[]);
    let text =
        "unknown prompt variable \"{{missing}}\" in context \"policy\"; registered variables: (none)";
    assert_eq!(render_context_snapshot(&a).unwrap_err().to_string(), text);
    assert_eq!(render_context_sections(&a).unwrap_err().to_string(), text);

    let a = ctx_asm(&[("a", "{{x}}"), ("b", "b text")], &[("x", Some(""))]);
    assert_eq!(
        render_context_snapshot(&a).unwrap(),
        format!("{P}\n\nb text")
    );
    assert_eq!(
        render_context_sections(&a).unwrap(),
        vec![NamedText::new("b", "b text")]
    );

    let a = ctx_asm(&[("p", "{{{x}}}")], &[]);
    let e = render_context_snapshot(&a).unwrap_err();
    assert!(e.to_string().contains("in context \"p\""), "{e}");
    assert!(matches!(e, RenderError::MalformedAt { .. }));
    assert_eq!(render_context_sections(&a).unwrap_err(), e);

    let j = join_context_sections(&[NamedText::new("a", ""), NamedText::new("b", "")]);
    assert_eq!(j, format!("{P}\n\n\n\n"));
    assert_eq!(join_context_sections(&[]), "");
    assert_eq!(join_context_sections(&[NamedText::new("a", "")]), "");
}

#[test]
fn snapshot_equals_join_of_sections() {
    let a = ctx_asm(
        &[("a", ""), ("b", "x{{v}}"), ("c", "{{e}}"), ("d", "tail")],
        &[("v", Some("1")), ("e", Some(""))],
    );
    assert_eq!(
        render_context_snapshot(&a).unwrap(),
        join_context_sections(&render_context_sections(&a).unwrap())
    );
}

#[test]
fn byte_searches_agree_with_substring_searches() {
    for text in [
        "",
        "{",
        "{{",
        "{{{",
        "a{b{{c",
        "}",
        "}}",
        "}}}",
        "x}}y}}z",
        "}{}{",
        "é{{ü}}ö",
        "{ {",
        "} }",
        "{{a}}{{b}}",
    ] {
        for from in 0..=text.len() {
            if text.is_char_boundary(from) {
                assert_eq!(
                    super::find_open(text, from),
                    text[from..].find("{{").map(|i| i + from),
                    "find_open({text:?}, {from})"
                );
            }
        }
        assert_eq!(
            super::rfind_close(text),
            text.rfind("}}"),
            "rfind_close({text:?})"
        );
    }
}
