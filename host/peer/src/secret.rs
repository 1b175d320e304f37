//! A [`Secret`] value sent to a peer (an MCP server's header, an OAuth client secret, a
//! registry's password) that never shows itself: `Debug` and `Display` say `<redacted>`, so
//! a secret cannot reach a log line, an error message or a status through formatting; and
//! [`resolve_secret`], which reads `${env:NAME}` references in an operator's configuration.

use std::fmt;

/// A secret value. Read it with [`Secret::expose`], only where it is sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the request that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `value` with every `${env:NAME}` replaced by `lookup(NAME)`. Any other `${` is refused
/// (a typo must not be sent as text), as is a variable that is not set; the error names the
/// variable, never a value.
pub fn resolve_secret(
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err("an unclosed `${`: write ${env:NAME}".into());
        };
        let reference = &after[..end];
        let Some(name) = reference.strip_prefix("env:") else {
            return Err(format!(
                "`${{{}}}` is not a reference this host knows: write ${{env:NAME}}",
                shown(reference)
            ));
        };
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            return Err(format!(
                "`${{env:{}}}`: expected a variable name of letters, digits and _",
                shown(name)
            ));
        }
        match lookup(name) {
            Some(v) => out.push_str(&v),
            None => return Err(format!("the environment variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A reference as written, shortened and printable (it is the operator's text, not a
/// secret, but may be long or hold control characters).
fn shown(text: &str) -> String {
    text.chars()
        .take(40)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cr3t".to_owned())
    }

    #[test]
    fn references_are_replaced_and_the_rest_kept() {
        assert_eq!(
            resolve_secret("Bearer ${env:TOKEN}", env).unwrap(),
            "Bearer s3cr3t"
        );
        assert_eq!(
            resolve_secret("${env:TOKEN}${env:TOKEN}", env).unwrap(),
            "s3cr3ts3cr3t"
        );
        assert_eq!(resolve_secret("plain $ text", env).unwrap(), "plain $ text");
    }

    #[test]
    fn a_bad_reference_is_refused_naming_it_and_never_a_value() {
        assert_eq!(
            resolve_secret("Bearer ${env:MISSING}", env).unwrap_err(),
            "the environment variable MISSING is not set"
        );
        assert_eq!(
            resolve_secret("${TOKEN}", env).unwrap_err(),
            "`${TOKEN}` is not a reference this host knows: write ${env:NAME}"
        );
        assert_eq!(
            resolve_secret("${env:TOK EN}", env).unwrap_err(),
            "`${env:TOK EN}`: expected a variable name of letters, digits and _"
        );
        assert_eq!(
            resolve_secret("x ${env:TOKEN", env).unwrap_err(),
            "an unclosed `${`: write ${env:NAME}"
        );
    }

    #[test]
    fn a_secret_never_formats_its_value() {
        let s = Secret::new("s3cr3t");
        assert_eq!(
            format!("{s} {s:?} {:?}", vec![s.clone()]),
            "<redacted> Secret(<redacted>) [Secret(<redacted>)]"
        );
        assert_eq!(s.expose(), "s3cr3t");
    }
}
