//! The route flags of `step` and `assistant`: which provider API the request is prepared
//! for (or the reply came from), its model and its generation options.

use clap::Args;
use prompt_host::session::route::{Reasoning, RouteName, RouteSpec, SystemUpdates};
use serde_json::Value;

/// How `step` prepares its request.
#[derive(Debug, Clone, Args)]
pub struct RouteArgs {
    /// The provider API: chat-completions, anthropic-messages or openai-responses (default:
    /// the route of the log's newest step; chat-completions for a new log).
    #[arg(long, value_name = "NAME", value_parser = parse_route)]
    pub route: Option<RouteName>,
    /// The model the request names (default: the `model` fact).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// A generation option `KEY=VALUE` passed through as a top-level key of the request
    /// (repeatable); VALUE is read as JSON when it is JSON (`max_tokens=1024`,
    /// `stop=["x"]`), as a string otherwise.
    #[arg(long = "option", value_name = "K=V", value_parser = parse_option)]
    pub options: Vec<(String, Value)>,
    /// How system-prompt updates reach the model: in-history or replace (default: what the
    /// route takes).
    #[arg(long, value_name = "MODE", value_parser = parse_updates)]
    pub system_updates: Option<SystemUpdates>,
    /// Whether recorded reasoning is sent back: send or omit (default: omit on
    /// chat-completions, send elsewhere).
    #[arg(long, value_name = "MODE", value_parser = parse_reasoning)]
    pub reasoning: Option<Reasoning>,
    /// anthropic-messages: no prompt-cache breakpoints.
    #[arg(long)]
    pub no_cache: bool,
}

impl RouteArgs {
    /// The route asked for; `None` when no route flag was given (the log's route goes on).
    pub fn spec(&self) -> Option<RouteSpec> {
        let given = self.route.is_some()
            || self.model.is_some()
            || !self.options.is_empty()
            || self.system_updates.is_some()
            || self.reasoning.is_some()
            || self.no_cache;
        if !given {
            return None;
        }
        let mut spec = match self.route {
            Some(name) => RouteSpec::new(name),
            None => RouteSpec::default(),
        };
        spec.model = self.model.clone();
        for (key, value) in &self.options {
            spec = spec.option(key.clone(), value.clone());
        }
        spec.system_updates = self.system_updates;
        spec.reasoning = self.reasoning;
        if self.no_cache {
            spec = spec.cache(false);
        }
        Some(spec)
    }
}

/// A route name.
pub fn parse_route(text: &str) -> Result<RouteName, String> {
    RouteName::parse(text).map_err(|e| e.to_string())
}

fn parse_option(text: &str) -> Result<(String, Value), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => {
            let value = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
            Ok((k.to_string(), value))
        }
        _ => Err(format!("expected KEY=VALUE, got \"{text}\"")),
    }
}

fn parse_updates(text: &str) -> Result<SystemUpdates, String> {
    match text {
        "in-history" => Ok(SystemUpdates::InHistory),
        "replace" => Ok(SystemUpdates::Replace),
        _ => Err(format!("expected in-history or replace, got \"{text}\"")),
    }
}

fn parse_reasoning(text: &str) -> Result<Reasoning, String> {
    match text {
        "send" => Ok(Reasoning::Send),
        "omit" => Ok(Reasoning::Omit),
        _ => Err(format!("expected send or omit, got \"{text}\"")),
    }
}
