//! The runtime crate's `wasm` folder has no import circle: no module imports a module that
//! imports it back, directly or through others. The graph is read from the sources: every
//! `use` and every path through `super::`, `self::`, `crate::wasm::` or a child module's
//! name is an edge to the module that defines the item, following `pub use` re-exports (so a
//! child that takes a name from its parent's facade depends on the module that defines it,
//! not on the facade).
//!
//! The `oci` folder (now the `prompt-host-oci` crate) names neither `config` nor `host`: it
//! takes plain inputs (references, a lock path, registry settings).
//!
//! The crates split out of the runtime stay off its dependency stacks: read from Cargo.lock,
//! `prompt-host-tokens` and `prompt-host-mcp` reach no wasmtime; `prompt-host-oci` and
//! `prompt-host-peer` reach neither wasmtime nor a tokenizer, and none of them reaches the
//! runtime itself. Read from `cargo tree`: `prompt-host` without its default features
//! compiles no MCP, OCI, tokenizer or HTTP/TLS crate, and `prompt-host-core` no wasmtime.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path below the crate root, e.g. `["wasm", "sandbox", "clock"]`.
type ModPath = Vec<String>;

/// One source file of the folder, its code without comments, strings and test modules.
struct Module {
    file: PathBuf,
    code: String,
}

fn runtime_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/runtime/src")
}

/// Every module of `wasm` (the facade `wasm.rs` and each file under `wasm/`).
fn modules() -> BTreeMap<ModPath, Module> {
    let src = runtime_src();
    let mut out = BTreeMap::new();
    let mut stack = vec![src.join("wasm")];
    out.insert(vec!["wasm".to_string()], read_module(&src.join("wasm.rs")));
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&src).unwrap().with_extension("");
                let key: ModPath = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.insert(key, read_module(&path));
            }
        }
    }
    out
}

fn read_module(path: &Path) -> Module {
    let text = std::fs::read_to_string(path).unwrap();
    Module {
        file: path.to_path_buf(),
        code: strip(&text),
    }
}

/// The code with comments and string literals blanked (bindgen `with:` tables name types
/// in strings only on the left side; the paths they map to are code) and `#[cfg(test)]`
/// modules cut, since a unit test's `use super::*` is the module using itself.
fn strip(text: &str) -> String {
    let text = match test_module_start(text) {
        Some(at) => &text[..at],
        None => text,
    };
    blank(text)
}

/// The code with comments and string literals blanked.
fn blank(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if text[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if text[i..].starts_with("/*") {
            let end = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |e| i + 2 + e + 2);
            i = end;
        } else if bytes[i] == b'"' && !text[..i].ends_with('\'') {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            let ch = text[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Where `text`'s unit-test module starts: a `#[cfg(...test...)]` line followed by
/// `mod tests`.
fn test_module_start(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(") {
        let at = from + at;
        let line_end = text[at..].find('\n').map_or(text.len(), |e| at + e);
        let attr = &text[at..line_end];
        let mut after = text[line_end..].trim_start();
        while after.starts_with("#[") {
            after = after[after.find('\n').unwrap_or(after.len())..].trim_start();
        }
        if attr.contains("test") && after.starts_with("mod tests") {
            return Some(at);
        }
        from = line_end;
    }
    None
}

/// Every path written in `code` that starts with a module keyword or name, as segments:
/// `use` trees are expanded (`use a::{b, c::D}` gives `a::b` and `a::c::D`).
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    // `use` trees first, then every other `x::y` path in the code.
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        expand(&mut out, Vec::new(), after[..end].trim());
        rest = &after[end..];
    }
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts = (chars[i].is_alphabetic() || chars[i] == '_')
            && (i == 0
                || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            segs.push(chars[s..j].iter().collect::<String>());
            if j + 2 < chars.len()
                && chars[j] == ':'
                && chars[j + 1] == ':'
                && (chars[j + 2].is_alphabetic() || chars[j + 2] == '_')
            {
                j += 2;
            } else {
                break;
            }
        }
        if segs.len() > 1 {
            out.push(segs);
        }
        i = j.max(i + 1);
    }
    out
}

/// `code` split into its inline modules (`mod name { … }`), each with its path below the
/// file's module; the file's own code (without them) comes first, with an empty path.
fn inline_modules(code: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut outer = String::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "mod") {
        let after = &rest[at + 3..];
        let name: String = after
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = after.find(['{', ';']) else {
            break;
        };
        if after.as_bytes()[open] == b';' || after[..open].trim() != name {
            outer.push_str(&rest[..at + 3 + open + 1]);
            rest = &after[open + 1..];
            continue;
        }
        outer.push_str(&rest[..at]);
        let body = &after[open + 1..];
        let mut depth = 1;
        let end = body
            .char_indices()
            .find_map(|(k, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(k)
            })
            .unwrap_or(body.len());
        for (mut path, text) in inline_modules(&body[..end]) {
            path.insert(0, name.clone());
            out.push((path, text));
        }
        rest = &body[(end + 1).min(body.len())..];
    }
    outer.push_str(rest);
    out.insert(0, (Vec::new(), outer));
    out
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let at = from + at;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if boundary(before) && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// Expand one `use` tree below `prefix`.
fn expand(out: &mut Vec<Vec<String>>, prefix: Vec<String>, tree: &str) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap()];
        let mut base = prefix;
        base.extend(head);
        let mut depth = 0;
        let mut start = 0;
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(out, base.clone(), &inner[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        expand(out, base, &inner[start..]);
        return;
    }
    let tree = tree.split(" as ").next().unwrap();
    let mut path = prefix;
    path.extend(tree.split("::").map(|s| s.trim().to_string()));
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    out.push(path);
}

/// The module `path` (written in module `from`) leads to, following re-exports; `None`
/// when it leaves `wasm` or names nothing in it.
fn resolve(mods: &BTreeMap<ModPath, Module>, from: &ModPath, path: &[String]) -> Option<ModPath> {
    let mut at: ModPath;
    let mut segs = path;
    match segs.first().map(String::as_str) {
        Some("crate") => {
            if segs.get(1).map(String::as_str) != Some("wasm") {
                return None;
            }
            at = vec!["wasm".into()];
            segs = &segs[2..];
        }
        Some("super") => {
            at = from.clone();
            while segs.first().map(String::as_str) == Some("super") {
                at.pop();
                segs = &segs[1..];
            }
        }
        Some("self") => {
            at = from.clone();
            segs = &segs[1..];
        }
        Some(first) => {
            let mut child = from.clone();
            child.push(first.to_string());
            if !mods.contains_key(&child) {
                return None;
            }
            at = from.clone();
        }
        None => return None,
    }
    if at.first().map(String::as_str) != Some("wasm") {
        return None;
    }
    for (k, seg) in segs.iter().enumerate() {
        let mut child = at.clone();
        child.push(seg.clone());
        if mods.contains_key(&child) {
            at = child;
            continue;
        }
        // `seg` is an item of `at`: defined there, or re-exported from a child.
        return Some(reexport_source(mods, &at, seg, &segs[k + 1..]).unwrap_or(at));
    }
    Some(at)
}

/// Where module `at` takes the name `item` from when it re-exports it (`pub use x::item`).
fn reexport_source(
    mods: &BTreeMap<ModPath, Module>,
    at: &ModPath,
    item: &str,
    _rest: &[String],
) -> Option<ModPath> {
    let code = &mods.get(at)?.code;
    let mut found = None;
    let mut rest = code.as_str();
    while let Some(pos) = find_word(rest, "use") {
        let before = rest[..pos].trim_end();
        let after = &rest[pos + 3..];
        let end = after.find(';')?;
        if before.ends_with("pub") || before.ends_with(')') {
            let mut trees = Vec::new();
            expand(&mut trees, Vec::new(), &after[..end]);
            for tree in trees {
                let alias = after[..end].split(',').find_map(|t| {
                    t.split(" as ")
                        .nth(1)
                        .map(|a| a.trim().trim_matches('}').trim())
                });
                if tree.last().map(String::as_str) == Some(item) || alias == Some(item) {
                    found = resolve(mods, at, &tree);
                }
            }
        }
        rest = &after[end..];
    }
    found.filter(|m| m != at)
}

fn graph(mods: &BTreeMap<ModPath, Module>) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    reasons(mods)
        .into_iter()
        .map(|(from, to)| (from, to.into_keys().collect()))
        .collect()
}

/// The graph with, for each edge, the first path written that makes it.
fn reasons(mods: &BTreeMap<ModPath, Module>) -> BTreeMap<ModPath, BTreeMap<ModPath, String>> {
    let mut edges = BTreeMap::new();
    for (name, module) in mods {
        let mut targets = BTreeMap::new();
        for (inline, code) in inline_modules(&module.code) {
            // Paths in `mod wit { … }` resolve from `name::wit`; the edge is the file's.
            let mut from = name.clone();
            from.extend(inline);
            for path in paths(&code) {
                if let Some(target) = resolve(mods, &from, &path).filter(|t| t != name) {
                    targets.entry(target).or_insert_with(|| path.join("::"));
                }
            }
        }
        edges.insert(name.clone(), targets);
    }
    edges
}

/// A circle through the graph, if there is one.
fn circle(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Option<Vec<ModPath>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        at: &ModPath,
        edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
        marks: &mut BTreeMap<ModPath, Mark>,
        trail: &mut Vec<ModPath>,
    ) -> Option<Vec<ModPath>> {
        marks.insert(at.clone(), Mark::Open);
        trail.push(at.clone());
        for next in edges.get(at).into_iter().flatten() {
            match marks.get(next).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let from = trail.iter().position(|m| m == next).unwrap();
                    let mut c = trail[from..].to_vec();
                    c.push(next.clone());
                    return Some(c);
                }
                Mark::New => {
                    if let Some(c) = visit(next, edges, marks, trail) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        trail.pop();
        marks.insert(at.clone(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for start in edges.keys() {
        if marks.get(start).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(c) = visit(start, edges, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn show(path: &[ModPath]) -> String {
    path.iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[test]
fn the_wasm_folder_has_no_import_circle() {
    let mods = modules();
    assert!(mods.len() > 30, "read {} modules", mods.len());
    let edges = graph(&mods);
    if let Some(c) = circle(&edges) {
        let why = reasons(&mods);
        let steps: Vec<String> = c
            .windows(2)
            .map(|w| {
                let file = mods[&w[0]]
                    .file
                    .strip_prefix(runtime_src())
                    .unwrap_or(&mods[&w[0]].file);
                format!(
                    "{} ({}) uses {}",
                    w[0].join("::"),
                    file.display(),
                    why[&w[0]][&w[1]]
                )
            })
            .collect();
        panic!("import circle: {}\n{}", show(&c), steps.join("\n"));
    }
}

/// The reader sees what it must: the facade re-exports are followed to where an item is
/// defined, and a circle written on purpose is found.
#[test]
fn the_module_graph_reader_finds_edges_and_circles() {
    let mods = modules();
    let edges = graph(&mods);
    let m = |s: &str| -> ModPath { s.split("::").map(String::from).collect() };
    // `code.rs` takes the pin check from `digest.rs`, the settings from `settings.rs`.
    assert!(
        edges[&m("wasm::code")].contains(&m("wasm::digest")),
        "{:?}",
        edges[&m("wasm::code")]
    );
    assert!(edges[&m("wasm::code")].contains(&m("wasm::settings")));
    // The facade depends on what it re-exports.
    assert!(edges[&m("wasm")].contains(&m("wasm::runtime")));
    // Nested `use` trees and `super::super` resolve.
    assert!(edges[&m("wasm::imports::registry")].contains(&m("wasm::declare")));
    assert!(edges[&m("wasm::imports::registry")].contains(&m("wasm::store")));
    // Paths in an inline module (`contract.rs`'s `mod wit { use super::v0_1::… }`)
    // resolve from it.
    assert!(edges[&m("wasm::contract")].contains(&m("wasm::contract::v0_1")));
    assert!(!edges[&m("wasm::contract")].contains(&m("wasm")));
    // A circle written on purpose, through a third module, is found.
    let mut made: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    made.entry(m("wasm::a")).or_default().insert(m("wasm::b"));
    made.entry(m("wasm::b")).or_default().insert(m("wasm::c"));
    made.entry(m("wasm::c")).or_default().insert(m("wasm::a"));
    made.entry(m("wasm::d")).or_default().insert(m("wasm::a"));
    let c = circle(&made).expect("a circle");
    assert_eq!(show(&c), "wasm::a -> wasm::b -> wasm::c -> wasm::a");
    made.get_mut(&m("wasm::c")).unwrap().clear();
    assert_eq!(circle(&made), None);
    // A parent that uses its child, and a child that takes an item defined in the parent,
    // is a circle.
    let text = "use child::Thing;\npub struct Parent;\n";
    let child_text = "use super::Parent;\n";
    let mut mods = BTreeMap::new();
    for (name, code) in [("wasm", text), ("wasm::child", child_text)] {
        mods.insert(
            m(name),
            Module {
                file: PathBuf::from(name),
                code: strip(code),
            },
        );
    }
    let c = circle(&graph(&mods)).expect("parent and child");
    assert_eq!(show(&c), "wasm -> wasm::child -> wasm");
    // …but a child that takes what the parent re-exports from a sibling depends on the
    // sibling only.
    let text = "mod sibling;\nuse child::Thing;\npub(crate) use sibling::Shared;\n";
    mods.insert(
        m("wasm"),
        Module {
            file: PathBuf::from("wasm"),
            code: strip(text),
        },
    );
    mods.insert(
        m("wasm::child"),
        Module {
            file: PathBuf::from("child"),
            code: strip("use super::Shared;\n"),
        },
    );
    mods.insert(
        m("wasm::sibling"),
        Module {
            file: PathBuf::from("sibling"),
            code: strip("pub struct Shared;\n"),
        },
    );
    let edges = graph(&mods);
    assert_eq!(
        edges[&m("wasm::child")],
        BTreeSet::from([m("wasm::sibling")])
    );
    assert_eq!(circle(&edges), None);
    // Comments, strings and unit tests are not imports.
    let code = strip("// use super::x;\nlet s = \"super::y::Z\";\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n");
    assert!(!code.contains("super"), "{code}");
}

/// The OCI crate's source folder (`host/oci/src`, the runtime's `oci` module until it
/// became a crate of its own).
fn oci_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/oci/src")
}

/// Each source file of the OCI crate, keyed by the module path it has as `prompt_host::oci`
/// (`lib.rs` is `oci`, `lock.rs` is `oci::lock`).
fn oci_files() -> BTreeMap<ModPath, PathBuf> {
    let src = oci_src();
    let mut out = BTreeMap::from([(vec!["oci".to_string()], src.join("lib.rs"))]);
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && path != src.join("lib.rs") {
                let rel = path.strip_prefix(&src).unwrap().with_extension("");
                let mut key: ModPath = vec!["oci".to_string()];
                key.extend(
                    rel.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned()),
                );
                out.insert(key, path);
            }
        }
    }
    out
}

/// The module path below the crate root that `path` (written in module `from`) starts
/// with, for paths through `crate::`, `super::` or `self::`; `None` for any other.
fn from_root(from: &ModPath, path: &[String]) -> Option<Vec<String>> {
    let mut at: Vec<String>;
    let mut segs = path;
    match segs.first().map(String::as_str) {
        Some("crate") => {
            at = Vec::new();
            segs = &segs[1..];
        }
        Some("super") => {
            at = from.clone();
            while segs.first().map(String::as_str) == Some("super") {
                at.pop();
                segs = &segs[1..];
            }
        }
        Some("self") => {
            at = from.clone();
            segs = &segs[1..];
        }
        _ => return None,
    }
    at.extend(segs.iter().cloned());
    Some(at)
}

/// Every path in `code` (module `from`, unit tests included) that names a module of
/// `banned` at the crate root, or takes all of the root (`crate::*`).
fn names_of(from: &ModPath, code: &str, banned: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (inline, code) in inline_modules(&blank(code)) {
        let mut here = from.clone();
        here.extend(inline);
        for path in paths(&code) {
            let Some(target) = from_root(&here, &path) else {
                continue;
            };
            let first = target.first().map(String::as_str).unwrap_or("");
            if first == "*" || banned.contains(&first) {
                out.insert(path.join("::"));
            }
        }
    }
    out
}

#[test]
fn the_oci_folder_names_neither_config_nor_host() {
    let files = oci_files();
    assert!(files.len() > 10, "read {} files", files.len());
    let mut found = Vec::new();
    for (module, file) in &files {
        let code = std::fs::read_to_string(file).unwrap();
        for path in names_of(module, &code, &["config", "host"]) {
            let shown = file.strip_prefix(oci_src()).unwrap_or(file);
            found.push(format!("{} uses {path}", shown.display()));
        }
    }
    assert!(
        found.is_empty(),
        "oci takes plain inputs, not the configuration or the host:\n{}",
        found.join("\n")
    );
}

/// The check sees every way of writing the import, and not a mention in a comment or a
/// string, or a path that only ends in `config`.
#[test]
fn the_oci_check_finds_config_however_it_is_written() {
    let m = |s: &str| -> ModPath { s.split("::").map(String::from).collect() };
    let banned = ["config", "host"];
    for (from, code, expected) in [
        (
            "oci",
            "use crate::config::HostConfig;",
            "crate::config::HostConfig",
        ),
        (
            "oci",
            "use crate::{wasm, config::{HostConfig}};",
            "crate::config::HostConfig",
        ),
        (
            "oci",
            "fn f(c: &crate::config::HostConfig) {}",
            "crate::config::HostConfig",
        ),
        (
            "oci::lock",
            "use super::super::config;",
            "super::super::config",
        ),
        ("oci", "use super::host::Host;", "super::host::Host"),
        ("oci", "use crate::*;", "crate::*"),
        (
            "oci",
            "#[cfg(test)]\nmod tests {\n    use crate::config::HostConfig;\n}\n",
            "crate::config::HostConfig",
        ),
    ] {
        assert_eq!(
            names_of(&m(from), code, &banned),
            BTreeSet::from([expected.to_string()]),
            "{code}"
        );
    }
    for (from, code) in [
        (
            "oci",
            "// use crate::config::HostConfig;\nlet s = \"crate::config\";",
        ),
        (
            "oci",
            "use crate::wasm::sha256_hex;\nuse super::RegistrySettings;",
        ),
        ("oci::lock", "use super::config::Lock;"),
        ("oci", "use toml::config::X;"),
    ] {
        assert!(names_of(&m(from), code, &banned).is_empty(), "{code}");
    }
}

/// Every crate `name` can reach in Cargo.lock: all features, targets and versions at once,
/// so an upper bound of what `cargo tree -p name -e normal` shows (dev-dependencies of the
/// workspace's own crates included, which only widens it).
fn lock_closure(name: &str) -> BTreeSet<String> {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    let lock: toml::Value = toml::from_str(&std::fs::read_to_string(lock).unwrap()).unwrap();
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for package in lock["package"].as_array().unwrap() {
        let entry = deps
            .entry(package["name"].as_str().unwrap().to_string())
            .or_default();
        for dep in package
            .get("dependencies")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
        {
            let dep = dep.as_str().unwrap();
            entry.insert(dep.split(' ').next().unwrap().to_string());
        }
    }
    assert!(deps.contains_key(name), "{name} is not in Cargo.lock");
    let mut seen = BTreeSet::new();
    let mut stack = vec![name.to_string()];
    while let Some(at) = stack.pop() {
        if seen.insert(at.clone()) {
            stack.extend(deps.get(&at).into_iter().flatten().cloned());
        }
    }
    seen
}

/// The crates of `closure` whose names contain one of `banned`.
fn banned_in(closure: &BTreeSet<String>, banned: &[&str]) -> Vec<String> {
    closure
        .iter()
        .filter(|c| banned.iter().any(|b| c.contains(b)))
        .cloned()
        .collect()
}

#[test]
fn the_split_crates_stay_off_the_runtime_stacks() {
    for (name, banned) in [
        ("prompt-host-tokens", &["wasmtime"][..]),
        ("prompt-host-mcp", &["wasmtime"][..]),
        (
            "prompt-host-peer",
            &["wasmtime", "tiktoken", "tokenizers"][..],
        ),
        (
            "prompt-host-oci",
            &["wasmtime", "tiktoken", "tokenizers"][..],
        ),
    ] {
        let closure = lock_closure(name);
        let mut found = banned_in(&closure, banned);
        if closure.contains("prompt-host") {
            found.push("prompt-host".to_string());
        }
        assert!(
            found.is_empty(),
            "{name} depends on the runtime's stack: {}",
            found.join(", ")
        );
    }
}

/// The reader sees the runtime's own stack, so an empty answer above means something.
#[test]
fn the_lock_reader_finds_the_runtime_stack() {
    let runtime = lock_closure("prompt-host");
    assert!(!banned_in(&runtime, &["wasmtime"]).is_empty());
    assert!(runtime.contains("prompt-host-tokens"));
    assert!(runtime.contains("prompt-host-oci"));
    assert!(runtime.contains("tiktoken-rs"));
}

/// The crates `cargo tree -e normal` lists with `args` (one package and its features), by
/// name: the dependencies this platform would compile, features resolved. `--offline`: the
/// lock and the local registry cache answer, never the network.
fn cargo_tree(args: &[&str]) -> BTreeSet<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = std::process::Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(["tree", "-e", "normal", "--prefix", "none", "--offline"])
        .args(args)
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    // Each line is `name vX.Y.Z [(path)] [(*)]`.
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// The crates an embedder of Wasm plugins alone compiles without: those of the `mcp`, `oci`,
/// `tokens`, `sqlite` and `postgres` features.
const FEATURE_CRATES: [&str; 14] = [
    "rmcp",
    "oci-client",
    "tokenizers",
    "tiktoken-rs",
    "reqwest",
    "rustls",
    "oauth2",
    "prompt-host-mcp",
    "prompt-host-oci",
    "prompt-host-peer",
    "prompt-host-tokens",
    "rusqlite",
    "tokio-postgres",
    "deadpool-postgres",
];

#[test]
fn the_runtime_without_default_features_compiles_no_network_or_tokenizer_stack() {
    let tree = cargo_tree(&["-p", "prompt-host", "--no-default-features"]);
    // The runtime itself is there: an empty answer would pass the check below for nothing.
    assert!(tree.contains("wasmtime"), "no wasmtime in {tree:?}");
    let found: Vec<&str> = FEATURE_CRATES
        .into_iter()
        .filter(|c| tree.contains(*c))
        .collect();
    assert!(
        found.is_empty(),
        "prompt-host --no-default-features compiles {}",
        found.join(", ")
    );
    // …and the default build has them, so the names above are the crates' real names.
    let default = cargo_tree(&["-p", "prompt-host"]);
    let missing: Vec<&str> = FEATURE_CRATES
        .into_iter()
        .filter(|c| *c != "oci-client" && !default.contains(*c))
        .collect();
    assert!(missing.is_empty(), "the default build lacks {missing:?}");
}

#[test]
fn the_core_compiles_no_wasmtime() {
    let tree = cargo_tree(&["-p", "prompt-host-core"]);
    assert!(tree.contains("prompt-host-core"), "{tree:?}");
    let found = banned_in(&tree, &["wasmtime"]);
    assert!(found.is_empty(), "prompt-host-core compiles {found:?}");
}
