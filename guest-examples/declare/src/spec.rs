//! The declare plugin's config, parsed up front into plain types so `init` validates all of
//! it before declaring anything the host would have to roll back.

use prompt_plugin::serde_json::{Map, Value};
use prompt_plugin::{Error, NamedText, ToolSchema};

/// Where a declared text or value comes from.
pub enum Source {
    /// Fixed text, stored by the host.
    Fixed(String),
    /// Dynamic: the plugin returns this template, expanded per call.
    Dynamic(String),
    /// Dynamic, and every call fails with this message.
    Fail(String),
}

/// A section to declare.
pub struct SectionSpec {
    pub name: String,
    pub order: f64,
    pub text: Source,
    pub complete: bool,
}

/// A runtime context to declare.
pub struct ContextSpec {
    pub name: String,
    pub order: f64,
    pub text: Source,
}

/// A variable to declare: `Fixed(None)` is "registered, no value".
pub enum VariableValue {
    Fixed(Option<String>),
    Dynamic(Option<String>),
    Fail(String),
}

/// A variable to declare.
pub struct VariableSpec {
    pub name: String,
    pub value: VariableValue,
}

/// One tool provider to declare.
pub struct ToolsSpec {
    pub schemas: Vec<ToolSchema>,
    pub known_names: Option<Vec<String>>,
    /// `Some(key)` for a dynamic provider.
    pub dynamic: Option<String>,
}

/// One step of the scripted listener.
pub enum Step {
    PushSection(NamedText),
    InsertSection(u32, NamedText),
    SetSection(NamedText),
    SetTextAt(Texts, u32, String),
    SetAll(Texts, Vec<NamedText>),
    RecordFind(Texts, String),
    RemoveSection(String),
    PushContext(NamedText),
    SetContext(NamedText),
    RemoveContext(String),
    PushTool(ToolSchema),
    RemoveTool(String),
    SetVariable(String, Option<String>),
    Record(String),
    Next,
    Clear,
    Fail(String),
}

/// Which texts a by-position step works on.
#[derive(Clone, Copy)]
pub enum Texts {
    Sections,
    Contexts,
}

/// The listener to declare.
pub struct ListenerSpec {
    pub key: String,
    pub prepend: bool,
    pub global: bool,
    pub steps: Vec<Step>,
}

/// The whole config.
pub struct Spec {
    pub sections: Vec<SectionSpec>,
    pub contexts: Vec<ContextSpec>,
    pub variables: Vec<VariableSpec>,
    pub tools: Vec<ToolsSpec>,
    pub suppress_runtime_context: bool,
    /// Dynamic values without `${call}` are versioned by the context and kept by the host
    /// until it changes (contract 0.2.0), instead of answered "unchanged" on every call.
    pub keep_until_context_changes: bool,
    pub listener: Option<ListenerSpec>,
}

fn bad(path: &str, message: &str) -> Error {
    Error::invalid_input(format!("invalid config: {path}: {message}"))
}

fn object<'a>(
    value: &'a Value,
    path: &str,
    allowed: &[&str],
) -> Result<&'a Map<String, Value>, Error> {
    let map = value
        .as_object()
        .ok_or_else(|| bad(path, "expected an object"))?;
    if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(
            path,
            &format!(
                "unknown key \"{key}\" (expected one of: {})",
                allowed.join(", ")
            ),
        ));
    }
    Ok(map)
}

fn string(value: &Value, path: &str) -> Result<String, Error> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| bad(path, "expected a string"))
}

fn opt_string(value: &Value, path: &str) -> Result<Option<String>, Error> {
    if value.is_null() {
        Ok(None)
    } else {
        string(value, path).map(Some)
    }
}

fn required<'a>(map: &'a Map<String, Value>, key: &str, path: &str) -> Result<&'a Value, Error> {
    map.get(key)
        .ok_or_else(|| bad(path, &format!("missing \"{key}\"")))
}

fn flag(map: &Map<String, Value>, key: &str, path: &str) -> Result<bool, Error> {
    match map.get(key) {
        None => Ok(false),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| bad(&format!("{path}.{key}"), "expected true or false")),
    }
}

fn list<'a>(map: &'a Map<String, Value>, key: &str) -> Result<&'a [Value], Error> {
    match map.get(key) {
        None => Ok(&[]),
        Some(v) => v
            .as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| bad(key, "expected a list")),
    }
}

/// A finite number, or `"NaN"`/`"inf"`/`"-inf"` so tests can reach the host's finite check
/// (JSON has no non-finite numbers).
fn order(value: &Value, path: &str) -> Result<f64, Error> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| bad(path, "number out of range")),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "inf" | "+inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(bad(
                path,
                "expected a number or one of \"NaN\", \"inf\", \"-inf\"",
            )),
        },
        _ => Err(bad(
            path,
            "expected a number or one of \"NaN\", \"inf\", \"-inf\"",
        )),
    }
}

/// `"text"` = fixed, `{"dynamic": "template"}` = dynamic, `{"fail": "message"}` = dynamic
/// that fails.
fn source(value: &Value, path: &str) -> Result<Source, Error> {
    if let Some(text) = value.as_str() {
        return Ok(Source::Fixed(text.to_owned()));
    }
    let map = object(value, path, &["dynamic", "fail"])?;
    match (map.get("dynamic"), map.get("fail")) {
        (Some(t), None) => Ok(Source::Dynamic(string(t, &format!("{path}.dynamic"))?)),
        (None, Some(m)) => Ok(Source::Fail(string(m, &format!("{path}.fail"))?)),
        _ => Err(bad(
            path,
            "expected a string, {\"dynamic\": text} or {\"fail\": message}",
        )),
    }
}

fn named_text(value: &Value, path: &str) -> Result<NamedText, Error> {
    let map = object(value, path, &["name", "text"])?;
    Ok(NamedText::new(
        string(required(map, "name", path)?, &format!("{path}.name"))?,
        string(required(map, "text", path)?, &format!("{path}.text"))?,
    ))
}

/// A tool: `parameters` may be any JSON (serialised) or a string (passed verbatim, so a test
/// can hand the host JSON that does not parse). Default: an empty object schema.
pub fn tool(value: &Value, path: &str) -> Result<ToolSchema, Error> {
    let map = object(value, path, &["name", "description", "parameters"])?;
    let parameters = match map.get("parameters") {
        None => r#"{"type":"object","properties":{}}"#.to_owned(),
        Some(Value::String(raw)) => raw.clone(),
        Some(v) => v.to_string(),
    };
    Ok(ToolSchema {
        name: string(required(map, "name", path)?, &format!("{path}.name"))?,
        description: match map.get("description") {
            None => String::new(),
            Some(d) => string(d, &format!("{path}.description"))?,
        },
        parameters,
    })
}

fn section(value: &Value, path: &str) -> Result<SectionSpec, Error> {
    let map = object(value, path, &["name", "order", "text", "complete"])?;
    Ok(SectionSpec {
        name: string(required(map, "name", path)?, &format!("{path}.name"))?,
        order: order(required(map, "order", path)?, &format!("{path}.order"))?,
        text: source(required(map, "text", path)?, &format!("{path}.text"))?,
        complete: flag(map, "complete", path)?,
    })
}

fn context(value: &Value, path: &str) -> Result<ContextSpec, Error> {
    let map = object(value, path, &["name", "order", "text"])?;
    Ok(ContextSpec {
        name: string(required(map, "name", path)?, &format!("{path}.name"))?,
        order: order(required(map, "order", path)?, &format!("{path}.order"))?,
        text: source(required(map, "text", path)?, &format!("{path}.text"))?,
    })
}

fn variable(value: &Value, path: &str) -> Result<VariableSpec, Error> {
    let map = object(value, path, &["name", "value", "dynamic", "fail"])?;
    let name = string(required(map, "name", path)?, &format!("{path}.name"))?;
    let value = match (map.get("value"), map.get("dynamic"), map.get("fail")) {
        (Some(v), None, None) => VariableValue::Fixed(opt_string(v, &format!("{path}.value"))?),
        (None, Some(v), None) => VariableValue::Dynamic(opt_string(v, &format!("{path}.dynamic"))?),
        (None, None, Some(m)) => VariableValue::Fail(string(m, &format!("{path}.fail"))?),
        _ => {
            return Err(bad(
                path,
                "expected exactly one of \"value\", \"dynamic\", \"fail\"",
            ))
        }
    };
    Ok(VariableSpec { name, value })
}

fn tools(value: &Value, path: &str, index: usize) -> Result<ToolsSpec, Error> {
    let map = object(value, path, &["schemas", "known_names", "dynamic", "key"])?;
    let schemas = match required(map, "schemas", path)?.as_array() {
        Some(items) => items
            .iter()
            .enumerate()
            .map(|(i, t)| tool(t, &format!("{path}.schemas[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        None => return Err(bad(&format!("{path}.schemas"), "expected a list")),
    };
    let known_names = match map.get("known_names") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .enumerate()
                .map(|(i, n)| string(n, &format!("{path}.known_names[{i}]")))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => {
            return Err(bad(
                &format!("{path}.known_names"),
                "expected a list or null",
            ))
        }
    };
    let dynamic = if flag(map, "dynamic", path)? {
        Some(match map.get("key") {
            Some(k) => string(k, &format!("{path}.key"))?,
            None => format!("tools:{index}"),
        })
    } else {
        None
    };
    Ok(ToolsSpec {
        schemas,
        known_names,
        dynamic,
    })
}

fn step(value: &Value, path: &str) -> Result<Step, Error> {
    let map = value.as_object().filter(|m| m.len() == 1).ok_or_else(|| {
        bad(
            path,
            "expected an object with exactly one key naming the step",
        )
    })?;
    let Some((kind, arg)) = map.iter().next() else {
        return Err(bad(path, "empty step"));
    };
    let at = format!("{path}.{kind}");
    let yes = |arg: &Value| match arg {
        Value::Bool(true) => Ok(()),
        _ => Err(bad(&at, "expected true")),
    };
    Ok(match kind.as_str() {
        "push_section" => Step::PushSection(named_text(arg, &at)?),
        "insert_section" => {
            let map = object(arg, &at, &["index", "name", "text"])?;
            let index = required(map, "index", &at)?
                .as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| bad(&format!("{at}.index"), "expected a non-negative integer"))?;
            let text = NamedText::new(
                string(required(map, "name", &at)?, &format!("{at}.name"))?,
                string(required(map, "text", &at)?, &format!("{at}.text"))?,
            );
            Step::InsertSection(index, text)
        }
        "set_section" => Step::SetSection(named_text(arg, &at)?),
        "set_section_at" | "set_context_at" => {
            let texts = if kind == "set_section_at" {
                Texts::Sections
            } else {
                Texts::Contexts
            };
            let map = object(arg, &at, &["index", "text"])?;
            let index = required(map, "index", &at)?
                .as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| bad(&format!("{at}.index"), "expected a non-negative integer"))?;
            Step::SetTextAt(
                texts,
                index,
                string(required(map, "text", &at)?, &format!("{at}.text"))?,
            )
        }
        "set_sections" | "set_contexts" => {
            let texts = if kind == "set_sections" {
                Texts::Sections
            } else {
                Texts::Contexts
            };
            let items = arg
                .as_array()
                .ok_or_else(|| bad(&at, "expected an array of {\"name\", \"text\"}"))?;
            let all = items
                .iter()
                .enumerate()
                .map(|(i, item)| named_text(item, &format!("{at}[{i}]")))
                .collect::<Result<_, _>>()?;
            Step::SetAll(texts, all)
        }
        "record_find" => Step::RecordFind(Texts::Sections, string(arg, &at)?),
        "record_find_contexts" => Step::RecordFind(Texts::Contexts, string(arg, &at)?),
        "remove_section" => Step::RemoveSection(string(arg, &at)?),
        "push_context" => Step::PushContext(named_text(arg, &at)?),
        "set_context" => Step::SetContext(named_text(arg, &at)?),
        "remove_context" => Step::RemoveContext(string(arg, &at)?),
        "push_tool" => Step::PushTool(tool(arg, &at)?),
        "remove_tool" => Step::RemoveTool(string(arg, &at)?),
        "set_variable" => {
            let map = object(arg, &at, &["name", "value"])?;
            Step::SetVariable(
                string(required(map, "name", &at)?, &format!("{at}.name"))?,
                opt_string(required(map, "value", &at)?, &format!("{at}.value"))?,
            )
        }
        "record_sections" | "record_contexts" | "record_tools" | "record_variables"
        | "record_context" => {
            yes(arg)?;
            Step::Record(kind["record_".len()..].to_owned())
        }
        "next" => {
            yes(arg)?;
            Step::Next
        }
        "clear" => {
            yes(arg)?;
            Step::Clear
        }
        "fail" => Step::Fail(string(arg, &at)?),
        other => return Err(bad(path, &format!("unknown step \"{other}\""))),
    })
}

fn listener(value: &Value) -> Result<ListenerSpec, Error> {
    let path = "listener";
    let map = object(value, path, &["key", "prepend", "global", "steps"])?;
    let key = match map.get("key") {
        None => "declare".to_owned(),
        Some(k) => string(k, "listener.key")?,
    };
    let steps = match map.get("steps") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| step(s, &format!("listener.steps[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(bad("listener.steps", "expected a list")),
    };
    Ok(ListenerSpec {
        key,
        prepend: flag(map, "prepend", path)?,
        global: flag(map, "global", path)?,
        steps,
    })
}

/// Parse the whole config; any problem is `invalid-input` naming where it is.
pub fn parse(config: &Value) -> Result<Spec, Error> {
    let map = object(
        config,
        "config",
        &[
            "sections",
            "contexts",
            "variables",
            "tools",
            "suppress_runtime_context",
            "keep_until_context_changes",
            "listener",
        ],
    )?;
    let each = |key: &str| list(map, key).map(|items| items.iter().enumerate());
    Ok(Spec {
        sections: each("sections")?
            .map(|(i, v)| section(v, &format!("sections[{i}]")))
            .collect::<Result<_, _>>()?,
        contexts: each("contexts")?
            .map(|(i, v)| context(v, &format!("contexts[{i}]")))
            .collect::<Result<_, _>>()?,
        variables: each("variables")?
            .map(|(i, v)| variable(v, &format!("variables[{i}]")))
            .collect::<Result<_, _>>()?,
        tools: each("tools")?
            .map(|(i, v)| tools(v, &format!("tools[{i}]"), i))
            .collect::<Result<_, _>>()?,
        suppress_runtime_context: flag(map, "suppress_runtime_context", "config")?,
        keep_until_context_changes: flag(map, "keep_until_context_changes", "config")?,
        listener: map.get("listener").map(listener).transpose()?,
    })
}
