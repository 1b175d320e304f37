//! The protocol's JSON Schema, generated from its types: `cargo run -p prompt-host-serve
//! --example schema > protocol/prompt-host.schema.json` writes it, and CI regenerates it and
//! fails when the file differs.
//!
//! Params are described as the server reads them (schemars' deserialize contract: a key
//! with a default may be left out), results and notifications as it writes them (its
//! serialize contract: a key is always there unless it is skipped when empty). A type that
//! reads differently from how it is written (`Grants`: every key optional in params, always
//! written in results) keeps its name in results and gets the suffix `In` in params.

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

use super::envelope::{CancelParams, ErrorObject, Failure, Success};
use super::notifications;
use super::results::{
    Appended, AssemblyView, Closed, Described, Disposed, Done, Loaded, McpStatusView, PluginEntry,
    Reloaded, RenderResult, Replayed, SkillBodyView,
};
use super::step_result::StepResultView;
use super::{METHODS, PROTOCOL_VERSION};
use crate::params;

/// The schema document, as `protocol/prompt-host.schema.json` holds it.
pub fn document() -> Value {
    let mut reads = generator(SchemaSettings::draft2020_12().for_deserialize());
    let mut writes = generator(SchemaSettings::draft2020_12().for_serialize());

    let params = method_params(&mut reads);
    let results = method_results(&mut writes);
    let notifications = notifications::each(&mut writes);
    let success = writes.subschema_for::<Success>();
    let failure = writes.subschema_for::<Failure>();
    writes.subschema_for::<ErrorObject>();

    let mut defs = writes.take_definitions(true);
    let read_defs = reads.take_definitions(true);
    let renamed = merge(&mut defs, read_defs);
    let mut params = Value::Object(params);
    rename_refs(&mut params, &renamed);

    defs.insert("Notification".into(), notification(notifications));
    defs.insert(
        "params".into(),
        json!({
            "description": "The params object of each method.",
            "type": "object",
            "properties": params,
        }),
    );
    defs.insert(
        "results".into(),
        json!({
            "description": "The result of each method.",
            "type": "object",
            "properties": results,
        }),
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("urn:prompt-host:protocol:{PROTOCOL_VERSION}"),
        "title": format!("prompt-host serve protocol {PROTOCOL_VERSION} (JSON-RPC 2.0 over lines); see docs/protocol.md"),
        "description": "A message from the server is a Success, a Failure or a Notification. The result of a Success is described by $defs/results/properties/<method>; the params of a request by $defs/params/properties/<method>. Generated from the server's types (cargo run -p prompt-host-serve --example schema); do not edit.",
        "oneOf": [
            success,
            failure,
            { "$ref": "#/$defs/Notification" },
            { "type": "array", "items": { "oneOf": [success, failure] } },
        ],
        "$defs": sorted(defs),
    })
}

/// The document as the file holds it: two-space indents, a final newline.
pub fn text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
    text.push('\n');
    text
}

fn generator(settings: SchemaSettings) -> SchemaGenerator {
    settings
        .with_transform(RecursiveTransform(tidy))
        .into_generator()
}

/// Two changes to what schemars writes. An object whose keys are all known (none, for `{}`)
/// refuses others, as the server does (params) and as a client may rely on (results); an
/// open object says so (`additionalProperties: true`). And a number's Rust width (`"format": "uint64"`) is left
/// out: it is no format JSON Schema defines, and validators in strict mode refuse unknown
/// formats (`minimum: 0` says what a client needs).
fn tidy(schema: &mut Schema) {
    let object = schema.get("properties").is_some()
        || schema.get("type").and_then(serde_json::Value::as_str) == Some("object");
    if object && schema.get("additionalProperties").is_none() {
        schema.insert("additionalProperties".into(), false.into());
    }
    let rust_width = schema
        .get("format")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|f| {
            f.starts_with("uint") || f.starts_with("int") || f == "float" || f == "double"
        });
    if rust_width {
        schema.remove("format");
    }
}

fn method_params(g: &mut SchemaGenerator) -> Map<String, Value> {
    let mut each = |method: &str| -> Schema {
        match method {
            "describe" | "scopes" | "plugins" => g.subschema_for::<params::Empty>(),
            "bind_scope" => g.subschema_for::<params::BindScope>(),
            "dispose_scope" => g.subschema_for::<params::ScopeOnly>(),
            "load_plugin" => g.subschema_for::<params::LoadPlugin>(),
            "reload_plugin" => g.subschema_for::<params::ReloadPlugin>(),
            "dispose_plugin" => g.subschema_for::<params::PluginRef>(),
            "assemble" => g.subschema_for::<params::Target>(),
            "render" => g.subschema_for::<params::Render>(),
            "step" => g.subschema_for::<params::Step>(),
            "retry" => g.subschema_for::<params::Retry>(),
            "append_assistant" => g.subschema_for::<params::AppendAssistant>(),
            "append_tool_result" => g.subschema_for::<params::AppendToolResult>(),
            "request" => g.subschema_for::<params::Request>(),
            "compact" => g.subschema_for::<params::Compact>(),
            "close_session" => g.subschema_for::<params::SessionRef>(),
            "mcp_status" => g.subschema_for::<params::McpStatus>(),
            "mcp_skill" => g.subschema_for::<params::McpSkill>(),
            "subscribe" => g.subschema_for::<params::Subscribe>(),
            "$/cancelRequest" => g.subschema_for::<CancelParams>(),
            other => unreachable!("no params type for method {other}"),
        }
    };
    METHODS
        .iter()
        .map(|m| (m.to_string(), each(m).to_value()))
        .collect()
}

fn method_results(g: &mut SchemaGenerator) -> Map<String, Value> {
    let mut each = |method: &str| -> Schema {
        match method {
            "describe" => g.subschema_for::<Described>(),
            "bind_scope" | "dispose_scope" | "subscribe" | "$/cancelRequest" => {
                g.subschema_for::<Done>()
            }
            "scopes" => g.subschema_for::<Vec<String>>(),
            "load_plugin" => g.subschema_for::<Loaded>(),
            "reload_plugin" => g.subschema_for::<Reloaded>(),
            "dispose_plugin" => g.subschema_for::<Disposed>(),
            "plugins" => g.subschema_for::<Vec<PluginEntry<'static>>>(),
            "assemble" => g.subschema_for::<AssemblyView<'static>>(),
            "render" => g.subschema_for::<RenderResult<'static>>(),
            "step" | "retry" => g.subschema_for::<StepResultView<'static>>(),
            "append_assistant" | "append_tool_result" => g.subschema_for::<Appended>(),
            "request" => g.subschema_for::<Replayed<'static>>(),
            "compact" => g.subschema_for::<prompt_host::session::Compacted>(),
            "close_session" => g.subschema_for::<Closed>(),
            "mcp_status" => g.subschema_for::<Vec<McpStatusView<'static>>>(),
            "mcp_skill" => g.subschema_for::<SkillBodyView<'static>>(),
            other => unreachable!("no result type for method {other}"),
        }
    };
    METHODS
        .iter()
        .map(|m| (m.to_string(), each(m).to_value()))
        .collect()
}

/// A notification: one of the methods, each with its params.
fn notification(each: Vec<(&'static str, Schema)>) -> Value {
    let variants: Vec<Value> = each
        .into_iter()
        .map(|(method, params)| {
            json!({
                "type": "object",
                "required": ["jsonrpc", "method", "params"],
                "additionalProperties": false,
                "properties": {
                    "jsonrpc": { "const": "2.0" },
                    "method": { "const": method },
                    "params": params,
                },
            })
        })
        .collect();
    json!({
        "description": "A notification the client subscribed to (no id).",
        "oneOf": variants,
    })
}

/// Add the params' definitions to the results'; a name both have with different schemas is
/// renamed `<name>In` on the params' side. The renames made, old name to new.
fn merge(defs: &mut Map<String, Value>, reads: Map<String, Value>) -> Vec<(String, String)> {
    let mut renamed = Vec::new();
    let mut pending = Vec::new();
    for (name, schema) in reads {
        match defs.get(&name) {
            Some(same) if *same == schema => {}
            Some(_) => {
                let new = format!("{name}In");
                renamed.push((name, new.clone()));
                pending.push((new, schema));
            }
            None => pending.push((name, schema)),
        }
    }
    for (name, mut schema) in pending {
        rename_refs(&mut schema, &renamed);
        defs.insert(name, schema);
    }
    renamed
}

/// Point every `$ref` to a renamed definition at its new name.
fn rename_refs(value: &mut Value, renamed: &[(String, String)]) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref") {
                for (old, new) in renamed {
                    if target.strip_prefix("#/$defs/") == Some(old.as_str()) {
                        *target = format!("#/$defs/{new}");
                    }
                }
            }
            map.values_mut().for_each(|v| rename_refs(v, renamed));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_refs(v, renamed)),
        _ => {}
    }
}

/// Definitions by name, so the file's order does not depend on the order types were met.
fn sorted(defs: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<(String, Value)> = defs.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}
