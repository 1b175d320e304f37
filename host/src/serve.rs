//! JSON-RPC 2.0 over lines: the same operations as the embedding API, for agents written in
//! any language. One request (or batch) per line in, one response per line out; a
//! notification (no `id`) gets no response. Malformed input gets a JSON-RPC error and the
//! server keeps serving.
//!
//! Methods (params are an object):
//! - `bind_scope {scope, parent?}` (a root scope without `parent`; the parent must be bound
//!   already); `dispose_scope {scope}`. Every other method refuses a scope never bound
//!   (or declared by `serve --config`'s host.toml), naming the known ones.
//! - `load_plugin {name, wasm, scope?, config?, limits?, on_error?, quarantine_after?,
//!   sha256?}` → `{id}`
//! - `dispose_plugin {id}` → `{disposed}`; `plugins` → `[{id, name, scope}]`
//! - `assemble {scope?, facts?}` → the assembly JSON of `prompt-host assemble`
//! - `render {scope?, facts?}` → `{prompt, context}`
//! - `step {session, scope?, facts?, in_history?, starts_series?, user?}` → `{request,
//!   commits, starts_series}`; the session log stays open (locked) until `close_session`
//! - `close_session {session}`
//! - `mcp_status {wait_ms?}` → `[{id, server, scope, plugin, state, generations, published,
//!   rejected, failures, live_generation, last_error}]` for every `[[mcp]]` server; with
//!   `wait_ms`, first waits (at most that long, and never past a server's own bound) until
//!   every server has published its first generation or failed, as the one-shot commands do
//!
//! `facts` is an object `{"model": "m1"}` or a list of `[key, value]` pairs.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::host::{Facts, Host, PluginId, StepOptions};
use crate::mcp::McpState;
use crate::session::Session;
use crate::wasm::{Limits, OnError, PluginOptions, PluginSpec};

/// JSON-RPC error codes.
mod code {
    pub const PARSE: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    /// The operation ran and failed (plugin, assembly, render, session errors).
    pub const FAILED: i64 = -32000;
}

/// A request-level failure: a JSON-RPC error object.
#[derive(Debug)]
struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    fn failed(e: impl std::fmt::Display) -> Self {
        Self::new(code::FAILED, e.to_string())
    }
}

/// The server state: the host and the session logs it holds open.
pub struct Server {
    host: Host,
    sessions: HashMap<PathBuf, Session>,
}

impl Server {
    /// Serve `host`.
    pub fn new(host: Host) -> Self {
        Self {
            host,
            sessions: HashMap::new(),
        }
    }

    /// Handle one input line; `None` when nothing is to be written (notifications, blank
    /// lines).
    pub async fn handle_line(&mut self, line: &str) -> Option<String> {
        if line.trim().is_empty() {
            return None;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return Some(error_response(
                    Value::Null,
                    RpcError::new(code::PARSE, format!("parse error: {e}")),
                ))
            }
        };
        match value {
            Value::Array(items) if items.is_empty() => Some(error_response(
                Value::Null,
                RpcError::new(code::INVALID_REQUEST, "invalid request: empty batch"),
            )),
            Value::Array(items) => {
                let mut out = Vec::new();
                for item in items {
                    if let Some(response) = self.handle_value(item).await {
                        out.push(response);
                    }
                }
                (!out.is_empty()).then(|| Value::Array(out).to_string())
            }
            other => self.handle_value(other).await.map(|v| v.to_string()),
        }
    }

    async fn handle_value(&mut self, request: Value) -> Option<Value> {
        let Value::Object(map) = &request else {
            return Some(error_value(
                Value::Null,
                RpcError::new(code::INVALID_REQUEST, "invalid request: expected an object"),
            ));
        };
        let id = map.get("id").cloned();
        let valid_id = matches!(
            id,
            None | Some(Value::Null | Value::String(_) | Value::Number(_))
        );
        if map.get("jsonrpc") != Some(&json!("2.0")) || !valid_id {
            return Some(error_value(
                if valid_id {
                    id.unwrap_or(Value::Null)
                } else {
                    Value::Null
                },
                RpcError::new(
                    code::INVALID_REQUEST,
                    "invalid request: expected \"jsonrpc\": \"2.0\" and a string or number id",
                ),
            ));
        }
        let Some(method) = map.get("method").and_then(Value::as_str) else {
            return Some(error_value(
                id.unwrap_or(Value::Null),
                RpcError::new(
                    code::INVALID_REQUEST,
                    "invalid request: \"method\" must be a string",
                ),
            ));
        };
        let params = map
            .get("params")
            .cloned()
            .unwrap_or(Value::Object(Default::default()));
        let outcome = if params.is_object() {
            self.dispatch(method, params).await
        } else {
            Err(RpcError::new(
                code::INVALID_PARAMS,
                "invalid params: expected an object",
            ))
        };
        // A notification gets no response, whatever happened.
        let id = id?;
        Some(match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => error_value(id, e),
        })
    }

    async fn dispatch(&mut self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "bind_scope" => {
                let p: BindScope = parse(params)?;
                self.host
                    .bind_scope(&p.scope, p.parent.as_deref())
                    .map_err(RpcError::failed)?;
                Ok(json!({}))
            }
            "dispose_scope" => {
                let p: ScopeOnly = parse(params)?;
                self.host.dispose_scope(&p.scope);
                Ok(json!({}))
            }
            "load_plugin" => {
                let p: LoadPlugin = parse(params)?;
                let limits = p.limits.unwrap_or_default();
                limits.validate().map_err(|(key, message)| {
                    RpcError::new(
                        code::INVALID_PARAMS,
                        format!("invalid params: limits.{key}: {message}"),
                    )
                })?;
                if p.quarantine_after == Some(0) {
                    return Err(RpcError::new(
                        code::INVALID_PARAMS,
                        "invalid params: quarantine_after: must be at least 1",
                    ));
                }
                let defaults = PluginOptions::default();
                let spec = PluginSpec {
                    name: p.name,
                    scope: p.scope,
                    config: p.config.unwrap_or_else(|| json!({})),
                    options: PluginOptions {
                        limits,
                        on_error: p.on_error.unwrap_or_default(),
                        quarantine_after: p.quarantine_after.unwrap_or(defaults.quarantine_after),
                    },
                    sha256: p.sha256,
                };
                let loaded = self
                    .host
                    .load_plugin(spec, &p.wasm)
                    .map_err(RpcError::failed)?;
                let id = self.host.attach(loaded);
                Ok(json!({ "id": id.0 }))
            }
            "dispose_plugin" => {
                let p: PluginRef = parse(params)?;
                Ok(json!({ "disposed": self.host.dispose_plugin(PluginId(p.id)) }))
            }
            "plugins" => Ok(Value::Array(
                self.host
                    .plugins()
                    .into_iter()
                    .map(|(id, name, scope)| json!({"id": id.0, "name": name, "scope": scope}))
                    .collect(),
            )),
            "assemble" => {
                let p: Target = parse(params)?;
                let assembly = self
                    .host
                    .assemble(p.scope.as_deref(), p.facts.into_facts()?)
                    .await
                    .map_err(RpcError::failed)?;
                Ok(assembly.to_json())
            }
            "render" => {
                let p: Target = parse(params)?;
                let rendered = self
                    .host
                    .render(p.scope.as_deref(), p.facts.into_facts()?)
                    .await
                    .map_err(RpcError::failed)?;
                Ok(json!({"prompt": rendered.prompt, "context": rendered.context}))
            }
            "step" => self.step(parse(params)?).await,
            "mcp_status" => {
                let p: McpStatusParams = parse(params)?;
                let statuses = match p.wait_ms {
                    Some(ms) => {
                        self.host
                            .wait_mcp_ready(std::time::Duration::from_millis(ms))
                            .await
                    }
                    None => self.host.mcp_status(),
                };
                Ok(Value::Array(
                    statuses
                        .into_iter()
                        .map(|(id, s)| {
                            json!({
                                "id": id.0,
                                "server": s.server,
                                "scope": s.scope,
                                "plugin": s.plugin,
                                "state": match s.state {
                                    McpState::Starting => "starting",
                                    McpState::Up => "up",
                                    McpState::Down => "down",
                                },
                                "generations": s.generations,
                                "published": s.published,
                                "rejected": s.rejected,
                                "failures": s.failures,
                                "live_generation": s.live_generation,
                                "last_error": s.last_error,
                            })
                        })
                        .collect(),
                ))
            }
            "close_session" => {
                let p: SessionRef = parse(params)?;
                Ok(json!({ "closed": self.sessions.remove(&p.session).is_some() }))
            }
            other => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
    }

    async fn step(&mut self, p: Step) -> Result<Value, RpcError> {
        if !self.sessions.contains_key(&p.session) {
            let (session, _) = Session::open(&p.session).map_err(RpcError::failed)?;
            self.sessions.insert(p.session.clone(), session);
        }
        let facts = p.target.facts.into_facts()?;
        let options = StepOptions {
            in_history: p.in_history,
            starts_series: p.starts_series,
            user_texts: p.user,
        };
        let Some(session) = self.sessions.get_mut(&p.session) else {
            return Err(RpcError::failed("session log is not open"));
        };
        let (_, outcome) = self
            .host
            .step(session, p.target.scope.as_deref(), facts, &options)
            .await
            .map_err(RpcError::failed)?;
        let request = serde_json::to_value(&outcome.request).map_err(RpcError::failed)?;
        Ok(json!({
            "request": request,
            "commits": outcome.commits.len(),
            "starts_series": outcome.starts_series,
        }))
    }
}

fn parse<T: for<'de> Deserialize<'de>>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::new(code::INVALID_PARAMS, format!("invalid params: {e}")))
}

fn error_value(id: Value, e: RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}})
}

fn error_response(id: Value, e: RpcError) -> String {
    error_value(id, e).to_string()
}

/// The answer to a request line of `bytes` bytes that was longer than `max` and skipped
/// unread (its id is unknown, hence `null`).
pub fn oversized_request(bytes: usize, max: usize) -> String {
    error_response(
        Value::Null,
        RpcError::new(
            code::INVALID_REQUEST,
            format!(
                "invalid request: the request line has {bytes} bytes, more than the limit of {max} (serve --max-request-bytes)"
            ),
        ),
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BindScope {
    scope: String,
    #[serde(default)]
    parent: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeOnly {
    scope: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadPlugin {
    name: String,
    wasm: PathBuf,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    config: Option<Value>,
    #[serde(default)]
    limits: Option<Limits>,
    #[serde(default)]
    on_error: Option<OnError>,
    #[serde(default)]
    quarantine_after: Option<u32>,
    #[serde(default)]
    sha256: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpStatusParams {
    #[serde(default)]
    wait_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginRef {
    id: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionRef {
    session: PathBuf,
}

/// `facts`: absent, an object of strings, or a list of `[key, value]` pairs.
#[derive(Deserialize, Default)]
#[serde(transparent)]
struct FactsParam(Option<Value>);

impl FactsParam {
    fn into_facts(self) -> Result<Facts, RpcError> {
        let bad = |what: &str| {
            RpcError::new(
                code::INVALID_PARAMS,
                format!(
                    "invalid params: facts must be an object of strings or a list of [key, value] string pairs; {what}"
                ),
            )
        };
        let pairs = match self.0 {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => map
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k, s)),
                    _ => Err(bad(&format!("fact \"{k}\" is not a string"))),
                })
                .collect::<Result<_, _>>()?,
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    Value::Array(pair) => match pair.as_slice() {
                        [Value::String(k), Value::String(v)] => Ok((k.clone(), v.clone())),
                        _ => Err(bad("a pair is not two strings")),
                    },
                    _ => Err(bad("an item is not a pair")),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(bad(&format!("got {other}"))),
        };
        Ok(Facts::from(pairs))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Target {
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    facts: FactsParam,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    session: PathBuf,
    #[serde(flatten)]
    target: Target,
    #[serde(default)]
    in_history: bool,
    #[serde(default)]
    starts_series: bool,
    #[serde(default)]
    user: Vec<String>,
}
