//! Keeping repository text from referencing prompt variables. The host renders `{{name}}`
//! strictly in runtime contexts too, and git allows `{{` in a branch name, so such a branch
//! would fail the whole render. A space goes between two adjacent `{` or `}`: `feat{{x}}`
//! becomes `feat{ {x} }`, which the renderer leaves alone.

/// `text` with a space between every two adjacent `{` and every two adjacent `}`, whatever
/// the run length.
pub fn neutralise(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if matches!(c, '{' | '}') && chars.peek() == Some(&c) {
            out.push(' ');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_double_brace_survives() {
        assert_eq!(neutralise("{{cwd}}"), "{ {cwd} }");
        assert_eq!(neutralise("{{{x}}}"), "{ { {x} } }");
        assert_eq!(neutralise("fn f() { g() }"), "fn f() { g() }");
        assert_eq!(neutralise("}{"), "}{");
        for text in ["{{{{", "}}}}}", "a{{b}}c{{", "日{{本}}"] {
            let out = neutralise(text);
            assert!(!out.contains("{{") && !out.contains("}}"), "{out}");
        }
    }
}
