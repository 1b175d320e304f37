//! JSON-RPC errors: the codes, and the structured `data` every failed operation carries
//! (`kind`, and when known `plugin`, `export`, `scope`, `section`, `context`, `variable`,
//! `tool_provider`, `listener`, `session`), so a client can act on an error without parsing
//! its message.

use serde_json::{json, Map, Value};

use prompt_host::host::HostError;
use prompt_host::prompt::{AssembleError, EntryKind, RenderError};
use prompt_host::session::AppendError;
use prompt_host::wasm::WasmError;

/// JSON-RPC error codes.
pub mod code {
    /// The line is not JSON.
    pub const PARSE: i64 = -32700;
    /// Not a JSON-RPC 2.0 request (or a line over the size limit).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The operation ran and failed (plugin, assembly, render, session errors).
    pub const FAILED: i64 = -32000;
    /// The host failed inside while serving the request (a panic caught at the request's
    /// boundary); the server goes on.
    pub const INTERNAL: i64 = -32603;
    /// The request was cancelled (`$/cancelRequest`), as in the Language Server Protocol.
    pub const CANCELLED: i64 = -32800;
}

/// A request-level failure: a JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i64,
    /// One paragraph.
    pub message: String,
    /// Structured fields (`kind`, …), when the operation failed.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Bad params, with the `kind` `invalid-params`.
    pub fn params(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            code: code::INVALID_PARAMS,
            data: Some(json!({"kind": "invalid-params"})),
            message: format!("invalid params: {message}"),
        }
    }

    /// A failed operation of `kind` (no further fields).
    pub fn failed(kind: &str, message: impl Into<String>) -> Self {
        Self {
            code: code::FAILED,
            message: message.into(),
            data: Some(json!({ "kind": kind })),
        }
    }

    /// The error object of a response.
    pub fn to_value(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

impl From<HostError> for RpcError {
    fn from(e: HostError) -> Self {
        let data = host_error_data(&e);
        let cancelled = data["kind"] == "cancelled";
        Self {
            code: if cancelled {
                code::CANCELLED
            } else {
                code::FAILED
            },
            message: message(&e),
            data: Some(data),
        }
    }
}

/// The error's text. A tokenizer's errors keep their causes as sources (the file, then why
/// it could not be read), which a one-line message spells out; a host.toml error is told
/// without the snippet of the line it points at.
fn message(e: &HostError) -> String {
    // A message is one paragraph: a host.toml parse error leaves out its snippet.
    if let HostError::Config(config) = e {
        return config.one_line();
    }
    let mut text = e.to_string();
    if let HostError::ConfiguredTokenizer(_) | HostError::Tokenizer(_) = e {
        let mut source = std::error::Error::source(e);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
    }
    text
}

/// The structured fields of a host error.
fn host_error_data(e: &HostError) -> Value {
    let mut d = Map::new();
    // Numbers of the error (a token budget's), added after the strings.
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut put = |key: &str, value: Option<&str>| {
        if let Some(value) = value {
            d.insert(key.to_string(), Value::String(value.to_string()));
        }
    };
    let kind = match e {
        HostError::Config(_) | HostError::Prompt(_) => "config",
        HostError::Register(_) => "registration",
        HostError::Scope { scope, .. }
        | HostError::Rebound { scope, .. }
        | HostError::InvalidScope { scope, .. } => {
            put("scope", Some(scope));
            "scope"
        }
        HostError::UnknownScope(unknown) => {
            put("scope", Some(&unknown.scope));
            put("suggestion", unknown.suggestion.as_deref());
            "unknown-scope"
        }
        HostError::Wasm(w) => {
            wasm_fields(w, &mut put);
            "plugin"
        }
        HostError::Mcp(_) => "mcp",
        HostError::Skill(_) => "mcp-skill",
        HostError::Oci(o) => {
            if let prompt_host::oci::OciError::Plugin { plugin, .. } = o {
                put("plugin", Some(plugin));
            }
            "oci"
        }
        HostError::UnknownPlugin { .. } => "unknown-plugin",
        HostError::Assemble {
            scope,
            error: source,
        } => {
            put("scope", Some(scope));
            assemble_fields(source, &mut put)
        }
        HostError::Render {
            scope,
            error: source,
            blame,
            ..
        } => {
            put("scope", Some(scope));
            let (kind, name, variable) = render_names(source);
            put(entry_key(kind), Some(name));
            put("variable", variable);
            // The plugin that registered the entry the error is about.
            if let Some(b) = blame.first() {
                put("plugin", Some(&b.owner.plugin));
            }
            "render"
        }
        HostError::OverTokenBudget { scope, error } => {
            put("scope", Some(scope));
            put("budget", Some(error.budgeted.key()));
            put("tokenizer", Some(&error.tokenizer));
            // The largest part, and the plugin that registered it.
            if let Some(largest) = error.largest.first() {
                put(entry_key(error.budgeted.part_kind()), Some(&largest.name));
                put("plugin", largest.owner.as_ref().map(|o| o.plugin.as_str()));
            }
            counts = vec![("limit", error.limit), ("tokens", error.tokens)];
            "token-budget"
        }
        HostError::OverRequestBudget {
            path,
            tokens,
            limit,
            oldest,
        } => {
            put("session", Some(path));
            put("budget", Some("max_request_tokens"));
            put("tokenizer", Some(&tokens.tokenizer));
            counts = vec![("limit", *limit), ("tokens", tokens.total)];
            if let Some(range) = oldest {
                counts.push(("start_seq", range.start_seq as usize));
                counts.push(("end_seq", range.end_seq as usize));
            }
            "token-budget"
        }
        HostError::ConfiguredTokenizer(_) | HostError::Tokenizer(_) | HostError::NoTokenizer => {
            "tokenizer"
        }
        HostError::BudgetNeedsTokenizer { budget } => {
            put("budget", Some(budget));
            "tokenizer"
        }
        HostError::Conversation { path, .. } => {
            put("session", Some(path));
            "conversation"
        }
        HostError::Compaction { path, .. } => {
            put("session", Some(path));
            "compaction"
        }
        HostError::Replay(_) => "replay",
        HostError::Route(_) => "route",
        HostError::Session { path, error } => {
            put("session", Some(path));
            if let AppendError::Conflict {
                expected, actual, ..
            } = error
            {
                counts = vec![
                    ("expected", *expected as usize),
                    ("actual", *actual as usize),
                ];
                "conflict"
            } else {
                "session"
            }
        }
    };
    for (key, count) in counts {
        d.insert(key.into(), Value::from(count));
    }
    d.insert("kind".into(), Value::String(kind.into()));
    Value::Object(d)
}

fn wasm_fields(e: &WasmError, put: &mut impl FnMut(&str, Option<&str>)) {
    match e {
        WasmError::Call {
            plugin,
            export,
            scope,
            ..
        } => {
            put("plugin", Some(plugin));
            put("export", Some(export));
            put("scope", scope.as_deref());
        }
        WasmError::Engine { plugin, scope, .. }
        | WasmError::Register { plugin, scope, .. }
        | WasmError::Grant { plugin, scope, .. } => {
            put("plugin", Some(plugin));
            put("scope", scope.as_deref());
        }
        WasmError::Read { plugin, .. }
        | WasmError::NotAComponent { plugin, .. }
        | WasmError::Invalid { plugin, .. }
        | WasmError::WitVersion { plugin, .. }
        | WasmError::WrongWorld { plugin, .. }
        | WasmError::PinMismatch { plugin, .. }
        | WasmError::Unsupported { plugin, .. } => put("plugin", Some(plugin)),
        WasmError::Cache { .. } | WasmError::Runtime { .. } => {}
    }
}

fn assemble_fields(e: &AssembleError, put: &mut impl FnMut(&str, Option<&str>)) -> &'static str {
    match e {
        AssembleError::Provider {
            kind,
            name,
            plugin,
            error,
            ..
        } => {
            put("plugin", Some(plugin));
            put("export", error.export);
            put(entry_key(*kind), name.as_deref());
            "plugin"
        }
        AssembleError::Invariant { plugin, .. } => {
            put("plugin", Some(plugin));
            "invariant"
        }
        AssembleError::ReservedToolName { plugin } => {
            put("plugin", Some(plugin));
            "assembly"
        }
        AssembleError::Cancelled(_) => "cancelled",
        _ => "assembly",
    }
}

fn render_names(e: &RenderError) -> (EntryKind, &str, Option<&str>) {
    let (kind, owner) = e.entry();
    let variable = match e {
        RenderError::OverBudget { .. } => e.variable(),
        _ => e.reference(),
    };
    (kind, owner, variable)
}

/// The data key an entry's name goes under.
fn entry_key(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Section => "section",
        EntryKind::Context => "context",
        EntryKind::Variable => "variable",
        EntryKind::ToolProvider => "tool_provider",
        EntryKind::Listener => "listener",
        EntryKind::Suppressor => "suppressor",
    }
}
