//! The result of `step` and `retry`: what the step did, with the whole request.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::methods::StepAnswer;
use prompt_host::mcp::InstructionsCut;
use prompt_host::projection::HeaderReason;
use prompt_host::prompt::TimingReport;
use prompt_host::session::route::{
    Breakpoint, Reasoning, ReasoningForm, RouteContext, RouteName, SystemPlacement, SystemUpdates,
    ToolErrorForm,
};
use prompt_host::session::{ModelRequest, Usage};
use prompt_host::tokens::{RequestTokens, TokenReport};

/// A step's result as the protocol gives it (`step` in docs/protocol.md), borrowing the
/// outcome: serialised as a line's answer, or into an in-process client's own objects.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "StepResult")]
pub struct StepResultView<'a> {
    /// The step's number in the log.
    pub step: u64,
    /// The request, derived from the log after the step's commits. Null only where an
    /// in-process client takes the request apart ([`StepResultView::without_request`]).
    #[schemars(with = "ModelRequest")]
    pub request: Option<&'a ModelRequest>,
    /// How many events the step committed.
    pub commits: usize,
    /// Whether it started a new request series.
    pub starts_series: bool,
    /// Why it logged a request header; null when it logged none.
    #[schemars(with = "Option<HeaderReason>")]
    pub header: Option<&'static str>,
    /// The route the request was prepared for.
    pub route: RouteView<'a>,
    /// The request's prompt-cache breakpoints, and the usage the log last recorded.
    pub cache: CacheView<'a>,
    /// The rendering's token counts (`tokens` in the params).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<&'a TokenReport>,
    /// The request's tokens as its route sends it (system prompt, tools, messages), counted
    /// with the tokenizer `tokens` asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_tokens: Option<&'a RequestTokens>,
    /// Why a token count asked for (`tokens`, `request_tokens`) is missing: the step was
    /// written, and a count that failed afterwards does not make it an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_error: Option<&'a str>,
    /// Where the step's time went (`timings` in the params).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings: Option<&'a TimingReport>,
    /// The MCP servers the scope sees whose instructions were cut (absent when none was).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub mcp_cuts: &'a [InstructionsCut],
}

/// A step's prompt-cache facts.
#[derive(Serialize, JsonSchema)]
pub struct CacheView<'a> {
    /// Where the request carries prompt-cache breakpoints.
    pub breakpoints: &'a [Breakpoint],
    /// The usage of the last assistant reply in the log.
    pub last_usage: &'a Option<Usage>,
}

/// What a step's request was prepared with: the route, its model, its modes and what the
/// route takes.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Route")]
pub struct RouteView<'a> {
    /// The route.
    pub name: RouteName,
    /// The model; null when none was named.
    pub model: Option<&'a str>,
    /// How system-prompt updates reached the model.
    #[schemars(with = "SystemUpdates")]
    pub system_updates: &'static str,
    /// Whether recorded reasoning was sent back.
    #[schemars(with = "Reasoning")]
    pub reasoning: &'static str,
    /// The generation options, top-level keys of the request.
    pub options: &'a Map<String, Value>,
    /// What the route takes.
    pub capabilities: CapabilitiesView,
}

/// What a route takes.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Capabilities")]
pub struct CapabilitiesView {
    /// Later system messages are read as the effective prompt.
    pub in_history: bool,
    /// Where the system text goes.
    #[schemars(with = "SystemPlacement")]
    pub system: &'static str,
    /// How reasoning is sent back, when it is.
    #[schemars(with = "ReasoningForm")]
    pub reasoning: &'static str,
    /// How a failed tool call's result is marked.
    #[schemars(with = "ToolErrorForm")]
    pub tool_error: &'static str,
    /// How many prompt-cache breakpoints the request may carry.
    pub cache_breakpoints: usize,
}

impl<'a> RouteView<'a> {
    /// The view of `route`.
    pub fn of(route: &'a RouteContext) -> Self {
        let c = route.capabilities();
        Self {
            name: route.name,
            model: route.model.as_deref(),
            system_updates: if route.in_history {
                SystemUpdates::InHistory.as_str()
            } else {
                SystemUpdates::Replace.as_str()
            },
            reasoning: route.reasoning.as_str(),
            options: &route.options,
            capabilities: CapabilitiesView {
                in_history: c.in_history,
                system: c.system.as_str(),
                reasoning: c.reasoning.as_str(),
                tool_error: c.tool_error.as_str(),
                cache_breakpoints: c.cache_breakpoints,
            },
        }
    }
}

impl<'a> StepResultView<'a> {
    /// The result of the step that answered `answer`.
    pub fn of(answer: &'a StepAnswer) -> Self {
        let outcome = &answer.outcome;
        Self {
            tokens: answer.tokens.as_ref(),
            request_tokens: answer.request_tokens.as_ref(),
            tokens_error: answer.tokens_error.as_deref(),
            timings: answer.timings.as_ref(),
            mcp_cuts: &answer.mcp_cuts,
            step: outcome.step,
            request: Some(&outcome.request),
            commits: outcome.commits.len(),
            starts_series: outcome.starts_series,
            header: outcome.header.map(|h| h.as_str()),
            route: RouteView::of(&outcome.route),
            cache: CacheView {
                breakpoints: &outcome.request.cache_breakpoints,
                last_usage: &outcome.last_usage,
            },
        }
    }

    /// The same result with a null `request`: an in-process client hands the request over
    /// on its own, converted only when it is read ([`ModelRequest`] is most of a result).
    pub fn without_request(answer: &'a StepAnswer) -> Self {
        Self {
            request: None,
            ..Self::of(answer)
        }
    }
}
