//! The public name of an MCP tool: what the model calls it by, under the same rule as in the
//! TypeScript DeepSeek Harness. Pure, so it is tested natively.

use sha2::{Digest, Sha256};

/// Longest public name kept unchanged, in UTF-16 units.
const MAX_UNITS: usize = 64;
/// UTF-16 units kept from the normalised name before the hash suffix (51 + 1 + 12 = 64).
const KEEP_UNITS: usize = 51;
/// Hex characters of the SHA-256 kept in the suffix.
const HASH_CHARS: usize = 12;

fn allowed(unit: u16) -> bool {
    matches!(unit, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A | 0x5F | 0x2D) // [0-9A-Za-z_-]
}

/// `mcp__<server>__<raw>`, or — when that contains a character outside `[A-Za-z0-9_-]` or is
/// longer than 64 UTF-16 units — its first 51 units with every unit outside the class replaced
/// by `_` (so an astral character becomes two), then `_` and the first 12 hex characters of
/// SHA-256 over the UTF-8 bytes of `server + "\0" + raw`. Lengths count UTF-16 units, as
/// JavaScript string lengths do in the TypeScript DeepSeek Harness.
pub fn public_tool_name(server: &str, raw: &str) -> String {
    let candidate = format!("mcp__{server}__{raw}");
    let units: Vec<u16> = candidate.encode_utf16().collect();
    if units.len() <= MAX_UNITS && units.iter().all(|&u| allowed(u)) {
        return candidate;
    }
    let mut name: String = units
        .iter()
        .take(KEEP_UNITS)
        .map(|&u| if allowed(u) { char::from(u as u8) } else { '_' })
        .collect();
    let digest = Sha256::digest(format!("{server}\0{raw}").as_bytes());
    name.push('_');
    for byte in digest.iter().take(HASH_CHARS / 2) {
        name.push_str(&format!("{byte:02x}"));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::public_tool_name;

    /// The public-name vectors: names kept as they are, sanitised and hashed names, the
    /// 64-unit boundary and non-ASCII names (the host's `mcp::names` checks the same ones).
    #[test]
    fn spec_vectors() {
        assert_eq!(
            public_tool_name("github", "create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(
            public_tool_name("web", "search.v2"),
            "mcp__web__search_v2_2e497e0ea769"
        );
        assert_eq!(public_tool_name("web", "search_v2"), "mcp__web__search_v2");
        let a53 = "a".repeat(53);
        assert_eq!(public_tool_name("srv", &a53), format!("mcp__srv__{a53}"));
        assert_eq!(public_tool_name("srv", &a53).len(), 63);
        let a54 = "a".repeat(54);
        assert_eq!(public_tool_name("srv", &a54), format!("mcp__srv__{a54}"));
        assert_eq!(public_tool_name("srv", &a54).len(), 64);
        let fs = public_tool_name("fs", &"a".repeat(60));
        assert_eq!(fs, format!("mcp__fs__{}_0885644e3b45", "a".repeat(42)));
        assert_eq!(fs.len(), 64);
        assert_eq!(public_tool_name("x", "日本"), "mcp__x_____a9f6efbf329b");
        assert_eq!(public_tool_name("x", "😀"), "mcp__x_____7c4020bf997d");
    }

    #[test]
    fn hashed_names_fit_the_limit() {
        let long = public_tool_name("server", &"é".repeat(200));
        assert_eq!(long.encode_utf16().count(), 64);
        assert!(long
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}
