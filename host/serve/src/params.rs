//! The params of each method, as docs/protocol.md documents them. Unknown keys are refused, so a
//! typo is an error instead of a silently ignored option.

use std::path::PathBuf;

use schemars::JsonSchema;
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

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "EmptyParams")]
pub(super) struct Empty {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "BindScopeParams")]
pub(super) struct BindScope {
    pub scope: String,
    #[serde(default)]
    pub parent: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ScopeOnlyParams")]
pub(super) struct ScopeOnly {
    pub scope: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LoadPluginParams")]
pub(super) struct LoadPlugin {
    /// The plugin's name, in every error about it.
    pub name: String,
    /// A component file; the name of a plugin the server's package ships or
    /// PROMPT_HOST_PLUGIN_PATH holds (^[a-z0-9][a-z0-9_-]{0,63}$: "persona"); or an
    /// oci://REGISTRY/REPOSITORY:TAG or …@sha256:DIGEST reference (fetched into the content
    /// store and verified; a tag host.toml's lock records is taken at its locked digest).
    pub wasm: PathBuf,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub config: Option<Value>,
    #[serde(default)]
    pub limits: Option<Limits>,
    #[serde(default)]
    pub on_error: Option<OnError>,
    /// Consecutive failures after which a `skip` plugin is no longer called.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub quarantine_after: Option<u32>,
    #[serde(default)]
    pub grants: Option<prompt_host::policy::Grants>,
    #[serde(default)]
    pub sha256: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "McpStatusParams")]
pub(super) struct McpStatus {
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

/// A skill's body, read from its MCP server now and checked against the live index.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "McpSkillParams")]
pub(super) struct McpSkill {
    /// The server's name.
    pub server: String,
    /// The scope it was connected into; absent or null = global.
    #[serde(default)]
    pub scope: Option<String>,
    /// The skill's name, as its index lists it.
    pub skill: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ReloadPluginParams")]
pub(super) struct ReloadPlugin {
    pub id: u64,
    pub wasm: PathBuf,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PluginRefParams")]
pub(super) struct PluginRef {
    pub id: u64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SessionRefParams")]
pub(super) struct SessionRef {
    /// Path of the session log.
    pub session: PathBuf,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TargetParams")]
pub(super) struct Target {
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub facts: FactsParam,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RenderParams")]
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
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub(super) enum TokensParam {
    /// `true`: count with `[prompt] tokenizer`; `false`: do not count.
    Asked(bool),
    /// Count with this tokenizer: `o200k_base`, `cl100k_base` or a `tokenizer.json` path.
    Named(#[schemars(length(min = 1))] String),
}

/// Whether counts were asked for, and with which tokenizer (`None`: the configured one).
pub(super) fn tokens_asked(param: &Option<TokensParam>) -> Option<Option<&str>> {
    match param {
        None | Some(TokensParam::Asked(false)) => None,
        Some(TokensParam::Asked(true)) => Some(None),
        Some(TokensParam::Named(name)) => Some(Some(name.as_str())),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "StepParams")]
pub(super) struct Step {
    /// Path of the session log.
    pub session: PathBuf,
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub facts: FactsParam,
    #[serde(default)]
    pub tokens: Option<TokensParam>,
    #[serde(default)]
    pub timings: bool,
    /// The provider API the request is prepared for.
    #[serde(default)]
    #[schemars(with = "Option<RouteSpec>")]
    pub route: Option<Value>,
    #[serde(default)]
    pub in_history: bool,
    #[serde(default)]
    pub starts_series: bool,
    #[serde(default)]
    pub user: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RetryParams")]
pub(super) struct Retry {
    /// Path of the session log.
    pub session: PathBuf,
    #[serde(default)]
    pub facts: FactsParam,
    #[serde(default)]
    pub tokens: Option<TokensParam>,
    #[serde(default)]
    pub timings: bool,
    /// The provider API the request is prepared for.
    #[serde(default)]
    #[schemars(with = "Option<RouteSpec>")]
    pub route: Option<Value>,
    #[serde(default)]
    pub in_history: bool,
    #[serde(default)]
    pub starts_series: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AppendAssistantParams")]
pub(super) struct AppendAssistant {
    /// Path of the session log.
    pub session: PathBuf,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The provider's own reply: a chat completion or its choices[0].message, an Anthropic
    /// Message or its content, a Responses response or its output. Not with text,
    /// reasoning or tool_calls.
    #[serde(default)]
    #[schemars(with = "Option<Reply>")]
    pub reply: Option<Value>,
    /// The route whose provider sent `reply`; the log's route when absent.
    #[serde(default)]
    #[schemars(with = "Option<RouteName>")]
    pub route: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AppendToolResultParams")]
pub(super) struct AppendToolResult {
    /// Path of the session log.
    pub session: PathBuf,
    pub call_id: String,
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
}

/// `compact`: the range (`start_seq` and `end_seq`, or the oldest one that keeps the newest
/// `keep_turns` turns) and the summary that replaces it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CompactParams")]
pub(super) struct Compact {
    /// Path of the session log.
    pub session: PathBuf,
    /// The summary that replaces the range: text the caller's model wrote (at most 1 MiB).
    pub summary: String,
    /// The first surface node replaced.
    #[serde(default)]
    pub start_seq: Option<u64>,
    /// The last surface node replaced.
    #[serde(default)]
    pub end_seq: Option<u64>,
    /// Instead of a range: compact everything after the system prompt but the newest
    /// `keep_turns` turns.
    #[serde(default)]
    pub keep_turns: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RequestParams")]
pub(super) struct Request {
    /// Path of the session log.
    pub session: PathBuf,
    #[serde(default)]
    pub step: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SubscribeParams")]
pub(super) struct Subscribe {
    /// Plugin log lines at this level or more severe.
    #[serde(default)]
    #[schemars(with = "Option<LogLevel>")]
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

/// Caller facts: an object of strings, or a list of [key, value] string pairs.
impl JsonSchema for FactsParam {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Facts".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Caller facts: an object of strings, or a list of [key, value] string pairs.",
            "oneOf": [
                { "type": "object", "additionalProperties": { "type": "string" } },
                {
                    "type": "array",
                    "items": {
                        "type": "array",
                        "prefixItems": [{ "type": "string" }, { "type": "string" }],
                        "minItems": 2,
                        "maxItems": 2
                    }
                }
            ]
        })
    }
}

/// A provider's own reply: an object, or a list (an Anthropic message's content, a
/// Responses output).
#[derive(JsonSchema)]
#[schemars(untagged)]
#[allow(dead_code)] // Described, never built: the reply is read as a JSON value.
pub(super) enum Reply {
    /// A reply object.
    Object(serde_json::Map<String, Value>),
    /// A list of content blocks or output items.
    List(Vec<Value>),
}

/// The levels of `subscribe {log}` ([`super::notify::LOG_LEVELS`], and `off`).
pub(super) struct LogLevel;

impl JsonSchema for LogLevel {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LogLevel".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut levels = vec!["off"];
        levels.extend(super::notify::LOG_LEVELS);
        schemars::json_schema!({ "type": "string", "enum": levels })
    }
}

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
