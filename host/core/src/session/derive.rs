//! The model request: derived from the log's surface for one route (see [`super::route`]).
//! There is no system state outside the log: the system text is the surface's system nodes,
//! placed where the route's API takes it.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use super::route::{self, Breakpoint, RouteContext, RouteName};
use super::{Event, Session, Surface};
use crate::prompt::ToolSchema;

/// A request body one provider API accepts as it is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The route it was prepared for.
    pub route: RouteName,
    /// The body: `model`, the messages (or input), the tools, the system text where the
    /// route puts it, and the caller's generation options.
    pub body: Map<String, Value>,
    /// Where the body carries prompt-cache breakpoints (`anthropic-messages`).
    pub cache_breakpoints: Vec<Breakpoint>,
}

impl Serialize for ModelRequest {
    /// The body, as it is sent.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.body.serialize(serializer)
    }
}

impl ModelRequest {
    /// The request for `session` as it stands, with `tools`, for `ctx`.
    pub fn derive(session: &Session, tools: &[ToolSchema], ctx: &RouteContext) -> Self {
        Self::derive_from(session.events(), session.surface(), tools, ctx)
    }

    /// The request for `surface`, whose nodes are seqs of `events` (the whole log, or the part
    /// of it a past step saw).
    pub fn derive_from(
        events: &[Event],
        surface: &Surface,
        tools: &[ToolSchema],
        ctx: &RouteContext,
    ) -> Self {
        let items = route::items(events, surface);
        let (body, cache_breakpoints) = route::build(ctx, &items, tools);
        Self {
            route: ctx.name,
            body,
            cache_breakpoints,
        }
    }

    /// The conversation: `messages` (`input` for `openai-responses`).
    pub fn messages(&self) -> &[Value] {
        let key = match self.route {
            RouteName::OpenaiResponses => "input",
            _ => "messages",
        };
        self.body
            .get(key)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The tools, in the route's shape (empty when there are none).
    pub fn tools(&self) -> &[Value] {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
}
