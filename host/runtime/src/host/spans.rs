//! The `tracing` spans of a step: `prompt_host.step` (or a retry's), `prompt_host.render`
//! and `prompt_host.project` around the core's `prompt_host.assemble` and
//! `prompt_host.plugin_call` spans. Attributes follow the OpenTelemetry GenAI semantic
//! conventions where one applies (`gen_ai.*`) and are namespaced `prompt_host.*` otherwise;
//! no prompt text is an attribute unless the embedder asks for it
//! ([`crate::Host::record_prompt_in_spans`]). Without a subscriber every span is disabled
//! and costs one relaxed atomic load (docs/observability.md).

use tracing::field::Empty;
use tracing::Span;

use crate::projection::StepOutcome;
use crate::session::route::RouteContext;
use crate::Rendered;

/// A count as a span attribute: a signed 64-bit integer, the one integer type OpenTelemetry
/// attributes have (a `u64` or `usize` would reach an exporter as text).
pub(super) fn int<N: TryInto<i64>>(n: N) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// A step (or, with `retry_of`, a retry of step `retry_of`) for `scope` on `route`, with
/// the caller's `provider` fact when given (which, with the model's name and the route,
/// names the provider: [`super::gen_ai_provider`]).
pub(super) fn step(
    route: &RouteContext,
    provider: Option<&str>,
    scope: Option<&str>,
    retry_of: Option<u64>,
) -> Span {
    tracing::info_span!(
        "prompt_host.step",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name =
            &*super::gen_ai_provider::provider_name(provider, route.model.as_deref(), route.name),
        gen_ai.request.model = route.model.as_deref(),
        prompt_host.route = route.name.as_str(),
        prompt_host.scope = scope.unwrap_or("global"),
        prompt_host.retry_of = retry_of.map(int),
        prompt_host.step = Empty,
        prompt_host.commits = Empty,
        prompt_host.prompt.bytes = Empty,
        prompt_host.context.bytes = Empty,
    )
}

/// What a written step adds to its span.
pub(super) fn record_step(span: &Span, rendered: &Rendered, outcome: &StepOutcome) {
    if span.is_disabled() {
        return;
    }
    span.record("prompt_host.step", int(outcome.step));
    span.record("prompt_host.commits", int(outcome.commits.len()));
    span.record("prompt_host.prompt.bytes", int(rendered.prompt.len()));
    span.record("prompt_host.context.bytes", int(rendered.context.len()));
}

/// An assembly and its rendering for `scope`.
pub(super) fn render(scope: Option<&str>) -> Span {
    tracing::info_span!(
        "prompt_host.render",
        prompt_host.scope = scope.unwrap_or("global"),
        prompt_host.sections = Empty,
        prompt_host.tools = Empty,
        prompt_host.prompt.bytes = Empty,
        prompt_host.tokenizer = Empty,
        prompt_host.prompt.tokens = Empty,
        prompt_host.context.tokens = Empty,
        gen_ai.system_instructions = Empty,
        prompt_host.context.text = Empty,
    )
}

/// A rendering's token counts for its span: the tokenizer's name, the prompt's and the
/// runtime context's tokens.
pub(super) struct SpanTokens<'a> {
    pub(super) tokenizer: &'a str,
    pub(super) prompt: usize,
    pub(super) context: usize,
}

/// What a rendering adds to its span: its counts, its token counts when the host has a
/// tokenizer, and with `content` the texts themselves: the system prompt as the GenAI
/// conventions' `gen_ai.system_instructions` (a JSON array of one text part) and the
/// runtime-context snapshot, when there is one.
pub(super) fn record_render(
    span: &Span,
    rendered: &Rendered,
    tokens: Option<SpanTokens<'_>>,
    content: bool,
) {
    if span.is_disabled() {
        return;
    }
    if let Some(tokens) = tokens {
        span.record("prompt_host.tokenizer", tokens.tokenizer);
        span.record("prompt_host.prompt.tokens", int(tokens.prompt));
        span.record("prompt_host.context.tokens", int(tokens.context));
    }
    span.record(
        "prompt_host.sections",
        int(rendered.assembly.sections.len()),
    );
    span.record("prompt_host.tools", int(rendered.assembly.tools.len()));
    span.record("prompt_host.prompt.bytes", int(rendered.prompt.len()));
    if content {
        let parts = serde_json::json!([{ "type": "text", "content": rendered.prompt }]);
        span.record("gen_ai.system_instructions", parts.to_string());
        if !rendered.context.is_empty() {
            span.record("prompt_host.context.text", rendered.context.as_str());
        }
    }
}

/// Projecting a rendering into the session log and writing the step.
pub(super) fn project() -> Span {
    tracing::info_span!("prompt_host.project", prompt_host.commits = Empty)
}
