//! A model request counted as its route sends it: the system prompt (chat-completions'
//! system messages, Anthropic's `system` blocks, Responses' `instructions`), the tool list,
//! and the messages (each message or input item as its JSON text, which is what the
//! provider reads: keys and structure cost tokens too). An estimate with the deployment's
//! tokenizer, made before the request leaves, so a request that cannot fit is found here
//! rather than by the provider's 400.

use serde::Serialize;
use serde_json::Value;

use prompt_host_core::session::route::RouteName;
use prompt_host_core::session::ModelRequest;

use super::{Tokenizer, TokenizerError};

/// A request's tokens, by part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct RequestTokens {
    /// The tokenizer that counted.
    pub tokenizer: String,
    /// The system prompt's text.
    pub system: usize,
    /// The tool list, as JSON.
    pub tools: usize,
    /// The messages (or input items), each as JSON.
    pub messages: usize,
    /// The sum.
    pub total: usize,
}

/// Count `request` with `tokenizer`. Each message is counted apart, so the counts of the
/// messages a conversation keeps are remembered from step to step (the tokenizer's cache).
pub fn count_request(
    tokenizer: &Tokenizer,
    request: &ModelRequest,
) -> Result<RequestTokens, TokenizerError> {
    let mut system = 0;
    let mut messages = 0;
    let mut texts = |value: &Value| -> Result<usize, TokenizerError> {
        match value {
            Value::String(text) => tokenizer.count(text),
            Value::Array(items) => items.iter().try_fold(0, |sum, item| {
                let text = item.get("text").and_then(Value::as_str);
                Ok(sum + text.map_or(Ok(0), |t| tokenizer.count(t))?)
            }),
            _ => Ok(0),
        }
    };
    match request.route {
        RouteName::AnthropicMessages => {
            if let Some(blocks) = request.body.get("system") {
                system += texts(blocks)?;
            }
        }
        RouteName::OpenaiResponses => {
            if let Some(instructions) = request.body.get("instructions") {
                system += texts(instructions)?;
            }
        }
        _ => {}
    }
    for message in request.messages() {
        let role = message.get("role").and_then(Value::as_str);
        if matches!(role, Some("system" | "developer"))
            && request.route == RouteName::ChatCompletions
        {
            system += message.get("content").map_or(Ok(0), &mut texts)?;
        } else {
            messages += tokenizer.count(&message.to_string())?;
        }
    }
    let tools = match request.tools() {
        [] => 0,
        tools => tokenizer.count(&Value::Array(tools.to_vec()).to_string())?,
    };
    Ok(RequestTokens {
        tokenizer: tokenizer.name().to_string(),
        system,
        tools,
        messages,
        total: system + tools + messages,
    })
}
