//! The params of each method, as docs/protocol.md documents them. Unknown keys are refused, so a
//! typo is an error instead of a silently ignored option.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use super::RpcError;
use prompt_host::host::Facts;
use prompt_host::host::HostError;
use prompt_host::policy::{Limits, OnError};
use prompt_host::session::route::{RouteName, RouteSpec};
use prompt_host::session::{ToolCall, Usage};

/// Deserialize `params` as `T`, or an `invalid params` error naming what is wrong.
pub(super) fn parse<T: for<'de> Deserialize<'de>>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params).map_err(|e| RpcError::params(e.to_string()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Empty {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BindScope {
    pub scope: String,
    #[serde(default)]
    pub parent: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScopeOnly {
    pub scope: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LoadPlugin {
    pub name: String,
    pub wasm: PathBuf,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub config: Option<Value>,
    #[serde(default)]
    pub limits: Option<Limits>,
    #[serde(default)]
    pub on_error: Option<OnError>,
    #[serde(default)]
    pub quarantine_after: Option<u32>,
    #[serde(default)]
    pub grants: Option<prompt_host::policy::Grants>,
    #[serde(default)]
    pub sha256: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpStatus {
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReloadPlugin {
    pub id: u64,
    pub wasm: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PluginRef {
    pub id: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SessionRef {
    pub session: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Target {
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub facts: FactsParam,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Render {
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub facts: FactsParam,
    #[serde(default)]
    pub tokens: Option<TokensParam>,
    #[serde(default)]
    pub timings: bool,
}

/// `tokens`: `true` counts with the `[prompt] tokenizer`, a name counts with that tokenizer
/// (`o200k_base`, `cl100k_base` or a `tokenizer.json` path), `false` does not count.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum TokensParam {
    Asked(bool),
    Named(String),
}

/// Whether counts were asked for, and with which tokenizer (`None`: the configured one).
pub(super) fn tokens_asked(param: &Option<TokensParam>) -> Option<Option<&str>> {
    match param {
        None | Some(TokensParam::Asked(false)) => None,
        Some(TokensParam::Asked(true)) => Some(None),
        Some(TokensParam::Named(name)) => Some(Some(name.as_str())),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Step {
    pub session: PathBuf,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub facts: FactsParam,
    #[serde(default)]
    pub tokens: Option<TokensParam>,
    #[serde(default)]
    pub timings: bool,
    #[serde(default)]
    pub route: Option<Value>,
    #[serde(default)]
    pub in_history: bool,
    #[serde(default)]
    pub starts_series: bool,
    #[serde(default)]
    pub user: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Retry {
    pub session: PathBuf,
    #[serde(default)]
    pub facts: FactsParam,
    #[serde(default)]
    pub tokens: Option<TokensParam>,
    #[serde(default)]
    pub timings: bool,
    #[serde(default)]
    pub route: Option<Value>,
    #[serde(default)]
    pub in_history: bool,
    #[serde(default)]
    pub starts_series: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AppendAssistant {
    pub session: PathBuf,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The provider's own reply (instead of text, reasoning and tool calls).
    #[serde(default)]
    pub reply: Option<Value>,
    /// The route whose provider sent `reply`; the log's route when absent.
    #[serde(default)]
    pub route: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AppendToolResult {
    pub session: PathBuf,
    pub call_id: String,
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Request {
    pub session: PathBuf,
    #[serde(default)]
    pub step: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Subscribe {
    #[serde(default)]
    pub log: Option<String>,
    #[serde(default)]
    pub plugins: bool,
    #[serde(default)]
    pub registry: bool,
    #[serde(default)]
    pub mcp: bool,
}

/// `facts`: absent, an object of strings, or a list of `[key, value]` pairs.
#[derive(Deserialize, Default)]
#[serde(transparent)]
pub(super) struct FactsParam(Option<Value>);

impl FactsParam {
    /// The facts, or an `invalid params` error saying which one is wrong.
    pub fn into_facts(self) -> Result<Facts, RpcError> {
        let bad = |what: &str| {
            RpcError::params(format!(
                "facts must be an object of strings or a list of [key, value] string pairs; {what}"
            ))
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

/// A step's `route`: an unknown route name is a failed operation of kind `route` (so a
/// caller can tell a typo from malformed params); any other fault is bad params.
pub(super) fn route_spec(value: Option<Value>) -> Result<Option<RouteSpec>, RpcError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let name = match &value {
        Value::String(name) => Some(name.as_str()),
        Value::Object(o) => o.get("name").and_then(Value::as_str),
        _ => None,
    };
    if let Some(name) = name {
        route_name(name)?;
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| RpcError::params(format!("route: {e}")))
}

/// A route named by the caller (`append_assistant`'s `route`).
pub(super) fn route_name(name: &str) -> Result<RouteName, RpcError> {
    RouteName::parse(name).map_err(|e| HostError::Route(e).into())
}
