//! Name rules shared by registration, rendering, invariants and tool ordering.

use std::cmp::Ordering;

/// `scope agent:1` or `global`, as used in every plugin error message.
pub fn scope_label(scope: Option<&str>) -> String {
    match scope {
        Some(s) => format!("scope {s}"),
        None => "global".to_string(),
    }
}

/// Whether `name` matches `^[a-z][a-z0-9_]*$`. `$` anchors at the absolute end, so a
/// trailing newline fails, as in the JavaScript regex of the TypeScript DeepSeek Harness.
pub fn is_variable_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match bytes.split_first() {
        Some((first, rest)) => {
            first.is_ascii_lowercase()
                && rest
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
        }
        None => false,
    }
}

/// Compare two strings by UTF-16 code units, the JavaScript string order. It differs from
/// byte order only between astral characters and U+E000..=U+FFFF.
pub fn utf16_cmp(a: &str, b: &str) -> Ordering {
    // Byte order agrees with UTF-16 order on ASCII-only strings, the common case.
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names() {
        for ok in ["a", "model", "a_1", "b2", "z_"] {
            assert!(is_variable_name(ok), "{ok}");
        }
        for bad in [
            "",
            "Not Valid",
            "Model",
            "1a",
            "a-b",
            "a\n",
            " model",
            "_a",
            "é",
            "a b",
        ] {
            assert!(!is_variable_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn utf16_order_differs_from_bytes() {
        // U+FF5A sorts after an astral character in UTF-16, before it in UTF-8.
        assert_eq!(utf16_cmp("\u{FF5A}", "😀"), Ordering::Greater);
        assert_eq!("\u{FF5A}".cmp("😀"), Ordering::Less);
        assert_eq!(utf16_cmp("a", "b"), Ordering::Less);
        assert_eq!(utf16_cmp("ab", "a"), Ordering::Greater);
    }
}
