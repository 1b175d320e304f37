//! Public tool names for MCP tools and the duplicate-name check, with the same naming rule
//! and error text as the MCP client of the TypeScript DeepSeek Harness.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

use super::McpTool;

/// Longest public name left as is; longer (or irregular) names are shortened and hashed.
const MAX_NAME_UNITS: usize = 64;
/// Units kept from the sanitized name before `_` and the 12-hex-digit hash (51 + 1 + 12 = 64).
const KEPT_UNITS: usize = 51;
const HASH_HEX_DIGITS: usize = 12;

/// The name a model sees for the tool `raw` of the MCP server `server`.
///
/// `mcp__<server>__<raw>` when that is at most 64 UTF-16 code units of `[A-Za-z0-9_-]`.
/// Otherwise every UTF-16 code unit outside that class becomes `_` (so an astral character
/// becomes two underscores, as in the TypeScript DeepSeek Harness), the first 51 units are
/// kept, and `_` plus the first 12 hex digits of SHA-256 over `server + "\0" + raw` (UTF-8)
/// is appended. The hash keeps names that sanitize alike (`search.v2`, `search_v2`) distinct.
pub fn public_tool_name(server: &str, raw: &str) -> String {
    let full = format!("mcp__{server}__{raw}");
    let units: Vec<u16> = full.encode_utf16().collect();
    if units.len() <= MAX_NAME_UNITS && units.iter().all(|&u| allowed_unit(u)) {
        return full;
    }
    // Every unit maps to one ASCII character, so counting chars here counts UTF-16 units.
    let mut name: String = units
        .iter()
        .take(KEPT_UNITS)
        .map(|&u| {
            if allowed_unit(u) {
                char::from(u as u8)
            } else {
                '_'
            }
        })
        .collect();
    name.push('_');
    name.push_str(&name_hash(server, raw));
    name
}

/// `[A-Za-z0-9_-]`, judged per UTF-16 code unit.
fn allowed_unit(unit: u16) -> bool {
    u8::try_from(unit).is_ok_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn name_hash(server: &str, raw: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0u8]);
    hasher.update(raw.as_bytes());
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(HASH_HEX_DIGITS);
    for byte in digest.iter().take(HASH_HEX_DIGITS / 2) {
        hex.push_str(&format!("{byte:02x}"));
    }
    hex
}

/// Refuses a tool list in which a raw name repeats, with the TypeScript DeepSeek Harness's
/// text naming the first repeat in list order. A refused list must not replace the previous
/// generation.
pub fn check_unique_tools(server: &str, tools: &[McpTool]) -> Result<(), String> {
    let mut seen = HashSet::with_capacity(tools.len());
    for tool in tools {
        if !seen.insert(tool.name.as_str()) {
            return Err(format!(
                "mcp-client({server}): server listed tool \"{}\" more than once — invalid tool list",
                tool.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> McpTool {
        McpTool {
            name: name.to_owned(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn spec_vectors() {
        let a = |n: usize| "a".repeat(n);
        let cases: Vec<(&str, String, String)> = vec![
            (
                "github",
                "create_issue".into(),
                "mcp__github__create_issue".into(),
            ),
            (
                "web",
                "search.v2".into(),
                "mcp__web__search_v2_2e497e0ea769".into(),
            ),
            ("web", "search_v2".into(), "mcp__web__search_v2".into()),
            ("srv", a(53), format!("mcp__srv__{}", a(53))),
            ("srv", a(54), format!("mcp__srv__{}", a(54))),
            ("fs", a(60), format!("mcp__fs__{}_0885644e3b45", a(42))),
            ("x", "日本".into(), "mcp__x_____a9f6efbf329b".into()),
            ("x", "😀".into(), "mcp__x_____7c4020bf997d".into()),
        ];
        for (server, raw, want) in cases {
            assert_eq!(
                public_tool_name(server, &raw),
                want,
                "({server:?}, {raw:?})"
            );
        }
    }

    #[test]
    fn lengths_at_the_boundary() {
        assert_eq!(public_tool_name("srv", &"a".repeat(53)).len(), 63);
        assert_eq!(public_tool_name("srv", &"a".repeat(54)).len(), 64);
        // One unit over: hashed down to exactly 64.
        assert_eq!(public_tool_name("srv", &"a".repeat(55)).len(), 64);
        assert_eq!(public_tool_name("fs", &"a".repeat(60)).len(), 64);
    }

    #[test]
    fn irregular_names_are_hashed_and_distinct() {
        let dotted = public_tool_name("web", "search.v2");
        let plain = public_tool_name("web", "search_v2");
        assert_ne!(dotted, plain);
        // A hyphen is allowed and left alone.
        assert_eq!(public_tool_name("my-srv", "get-x"), "mcp__my-srv__get-x");
        // Short irregular names are not padded: 12 units + `_` + 12 hex digits.
        assert_eq!(
            public_tool_name("a", "b c"),
            format!("mcp__a__b_c_{}", name_hash("a", "b c"))
        );
    }

    #[test]
    fn duplicate_raw_names_are_refused_with_the_upstream_text() {
        assert_eq!(check_unique_tools("s", &[tool("a"), tool("b")]), Ok(()));
        assert_eq!(check_unique_tools("s", &[]), Ok(()));
        assert_eq!(
            check_unique_tools("s", &[tool("a"), tool("b"), tool("b"), tool("a")]),
            Err(
                "mcp-client(s): server listed tool \"b\" more than once — invalid tool list".into()
            )
        );
        // Raw names that merely share a public name are not duplicates.
        assert_eq!(check_unique_tools("s", &[tool("x.y"), tool("x_y")]), Ok(()));
    }
}
