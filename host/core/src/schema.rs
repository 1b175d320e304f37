//! JSON Schemas of the core's values as `prompt-host serve` sends and takes them (the crate
//! feature `schema`): the protocol's schema (`protocol/prompt-host.schema.json`) is generated
//! from these and the server's own types, never written by hand.
//!
//! Most types derive their schema beside their `serde` derive. What is here is what a derive
//! cannot say: the names a `&'static str` field takes, the route names (written by hand as
//! their `as_str`), and the request bodies, which the routes build as JSON objects (see
//! [`request_bodies`]).

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use crate::projection::step::HeaderReason;
use crate::session::route::{ReasoningForm, RouteName, SystemPlacement, ToolErrorForm};
use crate::session::ModelRequest;

pub mod request_bodies;

/// A schema that takes exactly these strings.
pub fn strings(values: impl IntoIterator<Item = &'static str>) -> Schema {
    let values: Vec<&str> = values.into_iter().collect();
    json_schema!({ "type": "string", "enum": values })
}

/// Declares a named schema of a fixed set of strings: a field written as `&'static str`
/// takes it with `#[schemars(with = "...")]`.
macro_rules! string_set {
    ($(#[$doc:meta])* $name:ident = [$($value:expr),+ $(,)?]) => {
        $(#[$doc])*
        pub struct $name;

        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                strings([$($value),+])
            }
        }
    };
}

string_set! {
    /// The kinds of entry a timing names (`EntryKind::as_str`; a suppressor is not timed).
    TimedKind = ["section", "context", "variable", "tool provider", "listener"]
}

string_set! {
    /// The phases of a step a timing names (`Timings::phase`'s callers).
    PhaseName = ["assemble", "render", "commit"]
}

string_set! {
    /// Where a prompt-cache breakpoint sits (the `anthropic-messages` route).
    BreakpointPlace = ["system", "tools", "message"]
}

/// Declares the schema of an enum written as its `as_str`: the strings of `$all`, which lists
/// every variant.
macro_rules! as_str_schema {
    ($ty:ident, $all:expr) => {
        #[doc = concat!("Written as [`", stringify!($ty), "::as_str`].")]
        impl JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                strings($all.map($ty::as_str))
            }
        }
    };
}

as_str_schema!(RouteName, RouteName::ALL);
as_str_schema!(
    HeaderReason,
    [
        HeaderReason::Initial,
        HeaderReason::Resume,
        HeaderReason::Change,
        HeaderReason::Series,
    ]
);
as_str_schema!(
    SystemPlacement,
    [
        SystemPlacement::FirstMessage,
        SystemPlacement::TopLevelSystem,
        SystemPlacement::Instructions,
    ]
);
as_str_schema!(
    ReasoningForm,
    [
        ReasoningForm::ReasoningContent,
        ReasoningForm::ThinkingBlocks,
        ReasoningForm::ReasoningItems,
    ]
);
as_str_schema!(
    ToolErrorForm,
    [ToolErrorForm::StatedInContent, ToolErrorForm::IsErrorFlag]
);

/// The body as it is sent: one of the three routes' bodies.
impl JsonSchema for ModelRequest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Request".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let chat = generator.subschema_for::<request_bodies::ChatRequest>();
        let anthropic = generator.subschema_for::<request_bodies::AnthropicRequest>();
        let responses = generator.subschema_for::<request_bodies::ResponsesRequest>();
        json_schema!({
            "description": "A request body one provider API accepts as it is, derived from the log for the step's route. It has no state outside the log: the system text is the log's system nodes, placed where the route's API takes it.",
            "anyOf": [chat, anthropic, responses]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_name_schema_lists_every_route() {
        let schema = RouteName::json_schema(&mut SchemaGenerator::default());
        assert_eq!(
            schema.get("enum"),
            Some(&serde_json::json!([
                "chat-completions",
                "anthropic-messages",
                "openai-responses"
            ]))
        );
    }
}
