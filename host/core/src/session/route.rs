//! Routes: the provider API a step's request is prepared for, and what that API can take.
//!
//! A route turns the log's surface into the request body one provider API accepts as it is:
//! `chat-completions` (OpenAI's Chat Completions and the servers compatible with it, DeepSeek
//! among them), `anthropic-messages` (Anthropic's Messages API) and `openai-responses`
//! (OpenAI's Responses API). Each declares its [`Capabilities`] — whether it takes
//! system-prompt updates in history, where system text goes, how reasoning is sent back, how
//! a tool error is expressed — and the projection decides from them which `system/message`
//! commits a new rendering needs.
//!
//! What a step resolved ([`RouteContext`]: the route, the model, the caller's generation
//! options, the system-update mode) is logged as `request/context` whenever it changes, so a
//! past step's request is rebuilt from the log alone. A log without any `request/context`
//! was written before routes existed; it reads as `chat-completions` with no model.

use serde::Deserialize;
use serde_json::{Map, Value};
use thiserror::Error;

mod anthropic;
mod chat;
mod items;
pub mod reply;
mod responses;

pub(crate) use items::{items, Item};

/// The provider APIs a request can be prepared for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RouteName {
    /// OpenAI's Chat Completions API and the servers compatible with it.
    ChatCompletions,
    /// Anthropic's Messages API.
    AnthropicMessages,
    /// OpenAI's Responses API.
    OpenaiResponses,
}

/// Written as its name (`"chat-completions"`, …), as requests and the log write it.
impl serde::Serialize for RouteName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl RouteName {
    /// Every route, in the order the documentation lists them.
    pub const ALL: [RouteName; 3] = [
        Self::ChatCompletions,
        Self::AnthropicMessages,
        Self::OpenaiResponses,
    ];

    /// The name as written in requests, host.toml and the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ChatCompletions => "chat-completions",
            Self::AnthropicMessages => "anthropic-messages",
            Self::OpenaiResponses => "openai-responses",
        }
    }

    /// The route called `name`; an unknown name is refused with the list of routes (and the
    /// closest one, for a typo).
    pub fn parse(name: &str) -> Result<Self, RouteError> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == name)
            .ok_or_else(|| RouteError::Unknown {
                name: name.to_string(),
                closest: closest(name),
            })
    }

    /// One tool as this route's requests carry it: `{type:"function", function:{…}}` for
    /// Chat Completions, `{name, description, input_schema}` for Messages, and the flat
    /// function tool of Responses. Token counts of a tool schema measure this shape.
    pub fn tool_json(self, schema: &crate::prompt::ToolSchema) -> Value {
        match self {
            Self::ChatCompletions => chat::tool(schema),
            Self::AnthropicMessages => anthropic::tool(schema),
            Self::OpenaiResponses => responses::tool(schema),
        }
    }

    /// The keys of the request body the route builds itself; a generation option may not
    /// name one.
    pub fn built_keys(self) -> &'static [&'static str] {
        match self {
            Self::ChatCompletions => &["model", "messages", "tools"],
            Self::AnthropicMessages => &["model", "messages", "system", "tools"],
            Self::OpenaiResponses => &["model", "input", "instructions", "tools"],
        }
    }

    /// What the route takes, for `model`.
    pub fn capabilities(self, model: Option<&str>) -> Capabilities {
        match self {
            Self::ChatCompletions => Capabilities {
                // Compatible servers differ: many chat templates refuse a system message
                // that is not the first one. OpenAI itself accepts one anywhere; say so
                // with `system_updates: "in-history"`.
                in_history: false,
                system: SystemPlacement::FirstMessage,
                reasoning: ReasoningForm::ReasoningContent,
                tool_error: ToolErrorForm::StatedInContent,
                cache_breakpoints: 0,
            },
            Self::AnthropicMessages => Capabilities {
                // Mid-conversation system messages: Claude API and Claude Platform on AWS,
                // Claude Opus 4.8 only (platform.claude.com/docs/en/build-with-claude/
                // mid-conversation-system-messages). Elsewhere an update replaces `system`.
                in_history: model.is_some_and(takes_mid_conversation_system),
                system: SystemPlacement::TopLevelSystem,
                reasoning: ReasoningForm::ThinkingBlocks,
                tool_error: ToolErrorForm::IsErrorFlag,
                cache_breakpoints: 4,
            },
            Self::OpenaiResponses => Capabilities {
                // `input` takes `developer` messages at any position.
                in_history: true,
                system: SystemPlacement::Instructions,
                reasoning: ReasoningForm::ReasoningItems,
                tool_error: ToolErrorForm::StatedInContent,
                cache_breakpoints: 0,
            },
        }
    }
}

impl std::fmt::Display for RouteName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RouteName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::parse(&name).map_err(serde::de::Error::custom)
    }
}

/// Whether an Anthropic model takes `role: "system"` messages inside `messages`.
fn takes_mid_conversation_system(model: &str) -> bool {
    model.starts_with("claude-opus-4-8")
}

fn closest(name: &str) -> Option<&'static str> {
    RouteName::ALL
        .into_iter()
        .map(RouteName::as_str)
        .min_by_key(|candidate| edit_distance(name, candidate))
        .filter(|candidate| edit_distance(name, candidate) <= candidate.len() / 3)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            previous = here;
        }
    }
    row[b.len()]
}

/// What a route takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Later system messages are read as the effective prompt (system-prompt updates are
    /// appended in history instead of replacing the first system text).
    pub in_history: bool,
    /// Where the system text goes.
    pub system: SystemPlacement,
    /// How reasoning is sent back, when it is.
    pub reasoning: ReasoningForm,
    /// How a failed tool call's result is marked.
    pub tool_error: ToolErrorForm,
    /// How many prompt-cache breakpoints the request may carry (0: the provider caches on
    /// its own).
    pub cache_breakpoints: usize,
}

/// Where a route puts the system text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SystemPlacement {
    /// A `role: "system"` message, first in `messages`.
    FirstMessage,
    /// The top-level `system` field (text blocks).
    TopLevelSystem,
    /// The top-level `instructions` field.
    Instructions,
}

impl SystemPlacement {
    /// `first-message`, `system` or `instructions`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FirstMessage => "first-message",
            Self::TopLevelSystem => "system",
            Self::Instructions => "instructions",
        }
    }
}

/// How a route sends reasoning back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningForm {
    /// `reasoning_content` on the assistant messages that made tool calls (DeepSeek's
    /// thinking mode requires it; OpenAI's types have no such key, so it is off by default).
    ReasoningContent,
    /// Anthropic `thinking` / `redacted_thinking` blocks, returned unchanged.
    ThinkingBlocks,
    /// Responses `reasoning` items, returned unchanged.
    ReasoningItems,
}

impl ReasoningForm {
    /// `reasoning-content`, `thinking-blocks` or `reasoning-items`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReasoningContent => "reasoning-content",
            Self::ThinkingBlocks => "thinking-blocks",
            Self::ReasoningItems => "reasoning-items",
        }
    }
}

/// How a route marks a failed tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolErrorForm {
    /// The result's text starts `Error: ` (the API has no error flag).
    StatedInContent,
    /// `is_error: true` on the `tool_result` block.
    IsErrorFlag,
}

impl ToolErrorForm {
    /// `stated-in-content` or `is-error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StatedInContent => "stated-in-content",
            Self::IsErrorFlag => "is-error",
        }
    }
}

/// How system-prompt updates reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum SystemUpdates {
    /// Appended in history as new system messages (the first system text stays, so a
    /// provider's prompt cache keeps it).
    InHistory,
    /// The first system text is replaced and later ones cleared.
    Replace,
}

impl SystemUpdates {
    /// `in-history` or `replace`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InHistory => "in-history",
            Self::Replace => "replace",
        }
    }
}

/// Whether recorded reasoning is sent back to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Reasoning {
    /// Sent back, in the route's own form ([`ReasoningForm`]).
    Send,
    /// Left out of requests (it stays in the log).
    Omit,
}

impl Reasoning {
    /// `send` or `omit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::Omit => "omit",
        }
    }
}

/// What a caller asks of a route (serve's and the library's `route`; the command line's
/// `--route` flags). Every field but the name is optional.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct RouteSpec {
    /// The route; `chat-completions` when no route is given.
    pub name: Option<RouteName>,
    /// The model; the `model` fact when `None`.
    pub model: Option<String>,
    /// Generation options passed through as top-level keys of the request (`max_tokens`,
    /// `temperature`, …), logged with the step.
    pub options: Map<String, Value>,
    /// How system-prompt updates reach the model; the route's capability when `None`.
    pub system_updates: Option<SystemUpdates>,
    /// Whether recorded reasoning is sent back; `send` except on `chat-completions`.
    pub reasoning: Option<Reasoning>,
    /// `anthropic-messages`: place prompt-cache breakpoints (on by default).
    pub cache: Option<bool>,
}

impl RouteSpec {
    /// The route `name` with its defaults.
    pub fn new(name: RouteName) -> Self {
        Self {
            name: Some(name),
            ..Self::default()
        }
    }

    /// Sets [`RouteSpec::model`].
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Adds one generation option.
    pub fn option(mut self, key: impl Into<String>, value: Value) -> Self {
        self.options.insert(key.into(), value);
        self
    }

    /// Sets [`RouteSpec::system_updates`].
    pub fn system_updates(mut self, updates: SystemUpdates) -> Self {
        self.system_updates = Some(updates);
        self
    }

    /// Sets [`RouteSpec::reasoning`].
    pub fn reasoning(mut self, reasoning: Reasoning) -> Self {
        self.reasoning = Some(reasoning);
        self
    }

    /// Sets [`RouteSpec::cache`].
    pub fn cache(mut self, on: bool) -> Self {
        self.cache = Some(on);
        self
    }
}

impl RouteSpec {
    /// What continuing with `ctx` (the route in force in a log) asks for: its route,
    /// options and reasoning, and its model unless a `model` fact names another. System
    /// updates are decided per step (the route's capability, or the step's flag).
    pub fn continuing(ctx: &RouteContext, model_fact: Option<&str>) -> Self {
        Self {
            name: Some(ctx.name),
            model: model_fact.map(str::to_string).or_else(|| ctx.model.clone()),
            options: ctx.options.clone(),
            system_updates: None,
            reasoning: Some(ctx.reasoning),
            cache: (ctx.name == RouteName::AnthropicMessages).then_some(ctx.cache),
        }
    }
}

/// A route as an object: its name and what is asked of it.
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "RouteObject"))]
#[serde(deny_unknown_fields)]
struct SpecObject {
    /// The route.
    #[cfg_attr(feature = "schema", schemars(with = "RouteName"))]
    name: String,
    /// The model; the `model` fact when absent.
    #[serde(default)]
    model: Option<String>,
    /// Generation options, top-level keys of the request (`max_tokens`, `temperature`, …).
    #[serde(default)]
    options: Map<String, Value>,
    /// How system-prompt updates reach the model; the route's capability when absent.
    #[serde(default)]
    system_updates: Option<SystemUpdates>,
    /// Whether recorded reasoning is sent back; `send` except on `chat-completions`.
    #[serde(default)]
    reasoning: Option<Reasoning>,
    /// `anthropic-messages`: place prompt-cache breakpoints (on by default).
    #[serde(default)]
    cache: Option<bool>,
}

/// A route name, or an object of the route's name and what is asked of it.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for RouteSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RouteSpec".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let name = generator.subschema_for::<RouteName>();
        let object = generator.subschema_for::<SpecObject>();
        schemars::json_schema!({
            "description": "The provider API a step's request is prepared for: a route name, or an object.",
            "oneOf": [name, object]
        })
    }
}

impl<'de> Deserialize<'de> for RouteSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A route name, or an object (read as such, so its errors name the key).
        let spec = match Value::deserialize(d)? {
            Value::String(name) => RouteSpec::new(
                RouteName::parse(&name).map_err(serde::de::Error::custom)?,
            ),
            object @ Value::Object(_) => {
                let o = SpecObject::deserialize(object).map_err(serde::de::Error::custom)?;
                RouteSpec {
                name: Some(RouteName::parse(&o.name).map_err(serde::de::Error::custom)?),
                model: o.model,
                options: o.options,
                system_updates: o.system_updates,
                reasoning: o.reasoning,
                cache: o.cache,
                }
            }
            other => {
                return Err(serde::de::Error::custom(format!(
                    "a route is a name or an object {{name, model?, options?, system_updates?, reasoning?, cache?}}, not {other}"
                )))
            }
        };
        Ok(spec)
    }
}

/// What a step's request was prepared with, resolved from the caller's [`RouteSpec`] and
/// facts, and logged as `request/context` when it changes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RouteContext {
    /// The route.
    pub name: RouteName,
    /// The model the request names (`chat-completions` may have none).
    pub model: Option<String>,
    /// The caller's generation options, top-level keys of the request.
    pub options: Map<String, Value>,
    /// System-prompt updates are appended in history.
    pub in_history: bool,
    /// Recorded reasoning is sent back.
    pub reasoning: Reasoning,
    /// Prompt-cache breakpoints are placed (`anthropic-messages`).
    pub cache: bool,
}

impl Default for RouteContext {
    /// What a log without `request/context` was prepared with: `chat-completions`, no model,
    /// updates replacing the system text, reasoning left out.
    fn default() -> Self {
        Self {
            name: RouteName::ChatCompletions,
            model: None,
            options: Map::new(),
            in_history: false,
            reasoning: Reasoning::Omit,
            cache: false,
        }
    }
}

/// Why a route could not be prepared. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RouteError {
    /// No route of that name.
    #[error("unknown route \"{name}\"{}; routes: chat-completions, anthropic-messages, openai-responses", closest.map(|c| format!(" (did you mean \"{c}\"?)")).unwrap_or_default())]
    Unknown {
        /// The name given.
        name: String,
        /// The closest route name, for a typo.
        closest: Option<&'static str>,
    },
    /// The route's API requires a model and none was given.
    #[error("route {route} needs a model: give the \"model\" fact or the route's \"model\"")]
    NoModel {
        /// The route.
        route: RouteName,
    },
    /// A generation option the route's API requires is missing.
    #[error("route {route} needs the option \"{key}\" ({why})")]
    MissingOption {
        /// The route.
        route: RouteName,
        /// The option.
        key: &'static str,
        /// Why the API wants it.
        why: &'static str,
    },
    /// A generation option names a key the route builds.
    #[error("route {route}: the option \"{key}\" is built from the log and cannot be given; options are the request's other keys (max_tokens, temperature, …)")]
    BuiltOption {
        /// The route.
        route: RouteName,
        /// The key.
        key: String,
    },
    /// A setting that does not apply to the route.
    #[error("route {route}: {message}")]
    NotApplicable {
        /// The route.
        route: RouteName,
        /// What does not apply.
        message: &'static str,
    },
}

impl RouteContext {
    /// Resolve what a step asked for: `spec` (no route: `chat-completions` with its
    /// defaults), the `model` fact, and the caller's legacy `in_history` flag (which asks for
    /// in-history updates when the spec does not say).
    pub fn resolve(
        spec: Option<&RouteSpec>,
        model_fact: Option<&str>,
        in_history_flag: bool,
    ) -> Result<Self, RouteError> {
        let default = RouteSpec::default();
        let spec = spec.unwrap_or(&default);
        let name = spec.name.unwrap_or(RouteName::ChatCompletions);
        let model = spec
            .model
            .clone()
            .or_else(|| model_fact.map(str::to_string))
            .filter(|m| !m.is_empty());
        if model.is_none() && name != RouteName::ChatCompletions {
            return Err(RouteError::NoModel { route: name });
        }
        if let Some(key) = spec
            .options
            .keys()
            .find(|k| name.built_keys().contains(&k.as_str()))
        {
            return Err(RouteError::BuiltOption {
                route: name,
                key: key.clone(),
            });
        }
        if name == RouteName::AnthropicMessages
            && spec
                .options
                .get("max_tokens")
                .is_none_or(|v| v.as_u64().is_none_or(|n| n == 0))
        {
            return Err(RouteError::MissingOption {
                route: name,
                key: "max_tokens",
                why: "the Messages API requires it: a positive integer",
            });
        }
        if spec.cache.is_some() && name != RouteName::AnthropicMessages {
            return Err(RouteError::NotApplicable {
                route: name,
                message: "\"cache\" places prompt-cache breakpoints, which only anthropic-messages takes (the others cache on their own)",
            });
        }
        let capabilities = name.capabilities(model.as_deref());
        let in_history = match spec.system_updates {
            Some(updates) => updates == SystemUpdates::InHistory,
            None => in_history_flag || capabilities.in_history,
        };
        let reasoning = spec.reasoning.unwrap_or(match name {
            RouteName::ChatCompletions => Reasoning::Omit,
            _ => Reasoning::Send,
        });
        Ok(Self {
            name,
            model,
            options: spec.options.clone(),
            in_history,
            reasoning,
            cache: name == RouteName::AnthropicMessages && spec.cache.unwrap_or(true),
        })
    }

    /// The route's capabilities for this context's model.
    pub fn capabilities(&self) -> Capabilities {
        self.name.capabilities(self.model.as_deref())
    }

    /// The `request/context` data of this context.
    pub fn to_log(&self) -> Value {
        let mut data = Map::new();
        data.insert("route".into(), self.name.as_str().into());
        if let Some(model) = &self.model {
            data.insert("model".into(), model.clone().into());
        }
        if !self.options.is_empty() {
            data.insert("options".into(), Value::Object(self.options.clone()));
        }
        let updates = if self.in_history {
            SystemUpdates::InHistory
        } else {
            SystemUpdates::Replace
        };
        data.insert("systemPromptUpdate".into(), updates.as_str().into());
        data.insert("reasoning".into(), self.reasoning.as_str().into());
        if self.name == RouteName::AnthropicMessages {
            data.insert("cache".into(), self.cache.into());
        }
        Value::Object(data)
    }

    /// The context a `request/context` event logged; `None` for data this build does not
    /// read (another producer's context, say), which then leaves the previous one in force.
    pub fn from_log(data: &Value) -> Option<Self> {
        let name = RouteName::parse(data.get("route")?.as_str()?).ok()?;
        let model = match data.get("model") {
            None => None,
            Some(m) => Some(m.as_str()?.to_string()),
        };
        let options = match data.get("options") {
            None => Map::new(),
            Some(o) => o.as_object()?.clone(),
        };
        let in_history = match data.get("systemPromptUpdate").and_then(Value::as_str) {
            Some("in-history") => true,
            Some("replace") | None => false,
            Some(_) => return None,
        };
        let reasoning = match data.get("reasoning").and_then(Value::as_str) {
            Some("send") => Reasoning::Send,
            Some("omit") | None => Reasoning::Omit,
            Some(_) => return None,
        };
        let cache = data.get("cache").and_then(Value::as_bool).unwrap_or(false);
        Some(Self {
            name,
            model,
            options,
            in_history,
            reasoning,
            cache,
        })
    }
}

/// One prompt-cache breakpoint a request carries (`cache_control` on a block).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Breakpoint {
    /// `system` (the end of the system prompt), `tools` (the last tool, when there is no
    /// system text) or `message` (the latest user turn).
    #[cfg_attr(feature = "schema", schemars(with = "crate::schema::BreakpointPlace"))]
    pub at: &'static str,
    /// The index of the message (`message`) or block (`system`) or tool (`tools`) it is on.
    pub index: usize,
}

/// Build the request body for `ctx` from the surface `items` and the assembled tools.
pub(crate) fn build(
    ctx: &RouteContext,
    items: &[Item<'_>],
    tools: &[crate::prompt::ToolSchema],
) -> (Map<String, Value>, Vec<Breakpoint>) {
    let (mut body, breakpoints) = match ctx.name {
        RouteName::ChatCompletions => (chat::body(ctx, items, tools), Vec::new()),
        RouteName::AnthropicMessages => anthropic::body(ctx, items, tools),
        RouteName::OpenaiResponses => (responses::body(ctx, items, tools), Vec::new()),
    };
    if let Some(model) = &ctx.model {
        body.insert("model".into(), model.clone().into());
    }
    for (key, value) in &ctx.options {
        body.insert(key.clone(), value.clone());
    }
    (body, breakpoints)
}

/// The text a failed tool call's result is stated as, where the API has no error flag.
pub(crate) fn stated_error(text: &str) -> String {
    format!("Error: {text}")
}

#[cfg(test)]
#[path = "route/tests.rs"]
mod tests;
