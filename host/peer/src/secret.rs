//! A [`Secret`] value sent to a peer (an MCP server's header, an OAuth client secret, a
//! registry's password) that never shows itself: `Debug` and `Display` say `<redacted>`, so
//! a secret cannot reach a log line, an error message or a status through formatting.

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

#[cfg(test)]
mod tests {
    use super::*;

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
