//! The protocol is written once, as the server's types: `protocol/prompt-host.schema.json` is
//! what they generate (regenerate it with `cargo run -p prompt-host-serve --example schema >
//! protocol/prompt-host.schema.json`), and docs/protocol.md's heading of each method names
//! the method's params and result keys as the schema has them, optional ones with `?`.

use std::collections::BTreeMap;
use std::path::Path;

use prompt_host_serve::protocol::{schema, METHODS};
use serde_json::Value;

fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn the_schema_file_is_what_the_types_generate() {
    let generated = schema::text();
    // PROMPT_HOST_BLESS=1 writes it, as for the golden files (no build of its own).
    if std::env::var_os("PROMPT_HOST_BLESS").is_some() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../protocol/prompt-host.schema.json");
        std::fs::write(path, &generated).unwrap();
    }
    let file = repo_file("protocol/prompt-host.schema.json");
    assert!(
        file == generated,
        "protocol/prompt-host.schema.json is not what the server's types generate; regenerate it: \
         PROMPT_HOST_BLESS=1 scripts/test -p prompt-host-tests --test integration -- docs::protocol_schema, \
         or cargo run -p prompt-host-serve --example schema > protocol/prompt-host.schema.json"
    );
}

/// The object schema `schema` stands for: `$ref`s followed, an array's items taken.
fn object<'a>(doc: &'a Value, mut schema: &'a Value) -> &'a Value {
    loop {
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            let name = target.trim_start_matches("#/$defs/");
            schema = &doc["$defs"][name];
        } else if schema.get("type").and_then(Value::as_str) == Some("array") {
            schema = &schema["items"];
        } else {
            return schema;
        }
    }
}

/// Each key of an object schema, and whether it may be left out.
fn keys(schema: &Value) -> BTreeMap<String, bool> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|p| {
            p.keys()
                .map(|k| (k.clone(), !required.contains(&k.as_str())))
                .collect()
        })
        .unwrap_or_default()
}

/// The keys a heading lists between braces: `{a, b?, c?: [T]}` → a, b? and c?.
fn listed(braces: &str) -> BTreeMap<String, bool> {
    braces
        .trim_start_matches('[')
        .trim_start_matches('{')
        .trim_end_matches(']')
        .trim_end_matches('}')
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|k| {
            let name = k.split(':').next().unwrap_or(k).trim();
            match name.strip_suffix('?') {
                Some(name) => (name.to_string(), true),
                None => (name.to_string(), false),
            }
        })
        .collect()
}

/// docs/protocol.md's method headings: method → (params text, result text).
fn headings() -> BTreeMap<String, (String, String)> {
    let doc = repo_file("docs/protocol.md");
    let mut found = BTreeMap::new();
    for line in doc.lines() {
        let Some(rest) = line.strip_prefix("### `") else {
            continue;
        };
        let (call, result) = rest.split_once(" → ").unwrap_or((rest, ""));
        let call = call.trim_end_matches('`');
        let (method, params) = call.split_once(' ').unwrap_or((call, "{}"));
        let result = result.trim().trim_matches('`').to_string();
        found.insert(method.to_string(), (params.to_string(), result));
    }
    found
}

#[test]
fn the_protocol_doc_lists_every_method_with_the_schemas_keys() {
    let doc = schema::document();
    let headings = headings();
    let documented: Vec<&str> = headings.keys().map(String::as_str).collect();
    let mut methods: Vec<&str> = METHODS
        .iter()
        .copied()
        .filter(|m| *m != "$/cancelRequest")
        .collect();
    methods.sort_unstable();
    assert_eq!(
        documented, methods,
        "docs/protocol.md's method headings are not the server's methods (`$/cancelRequest` is \
         described under Transport)"
    );
    let mut wrong = Vec::new();
    for (method, (params, result)) in &headings {
        let schema_params = keys(object(&doc, &doc["$defs"]["params"]["properties"][method]));
        if listed(params) != schema_params {
            wrong.push(format!(
                "{method}: the heading lists params {params}, the schema has {schema_params:?}"
            ));
        }
        // A result written as keys is checked; one named by its type (`Assembly`, "same as
        // `step`") is the schema's to describe.
        if result.starts_with('{') || result.starts_with("[{") {
            let schema_result = keys(object(&doc, &doc["$defs"]["results"]["properties"][method]));
            if listed(result) != schema_result {
                wrong.push(format!(
                    "{method}: the heading lists result {result}, the schema has {schema_result:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "docs/protocol.md:\n{}", wrong.join("\n"));
}

#[test]
fn a_key_missing_from_a_heading_is_found() {
    let listed_keys = listed("{session, scope?, user?: [string]}");
    assert_eq!(
        listed_keys,
        BTreeMap::from([
            ("session".to_string(), false),
            ("scope".to_string(), true),
            ("user".to_string(), true),
        ])
    );
    assert_ne!(listed("{session}"), listed_keys);
}

/// `describe` lists the notifications the schema describes, no more and no fewer.
#[test]
fn the_schema_describes_every_notification_describe_lists() {
    let doc = schema::document();
    let described: Vec<&str> = doc["$defs"]["Notification"]["oneOf"]
        .as_array()
        .expect("Notification is a oneOf")
        .iter()
        .filter_map(|v| v["properties"]["method"]["const"].as_str())
        .collect();
    assert_eq!(
        described,
        prompt_host_serve::protocol::notifications::NOTIFICATIONS
    );
}
