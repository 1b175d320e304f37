//! The request bodies the three routes build, as schemas. The routes write them as JSON
//! objects (`session::route::{chat, anthropic, responses}`), in the providers' own shapes;
//! these types say what every body has, and leave the rest to the provider's API (a
//! caller's generation options are top-level keys, so the bodies are open objects). The
//! clients' suites check every body a step returns against them, and the official SDKs
//! take them as they are.
//!
//! Optional keys are marked `skip_serializing_if` for the schema only: nothing serializes
//! these types.

use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::prompt::ToolSchema;

/// `"function"`: the only type of tool and tool call the routes write.
#[derive(JsonSchema)]
pub enum FunctionType {
    /// A function.
    #[schemars(rename = "function")]
    Function,
}

/// chat-completions: `{model?, messages, tools?, ...options}`. The system prompt is the first
/// message.
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct ChatRequest {
    /// The model (absent when neither the route nor the `model` fact names one).
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// The tools, when there are any.
    #[schemars(skip_serializing_if = "Option::is_none", length(min = 1))]
    pub tools: Option<Vec<ChatTool>>,
}

/// The role of a chat-completions message.
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
pub enum ChatRole {
    /// The system prompt.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// A chat-completions message (platform.openai.com/docs/api-reference/chat/create).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ChatMessage {
    /// Who speaks.
    pub role: ChatRole,
    /// Text, content parts, or null (an assistant turn of tool calls only).
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub content: Option<ChatContent>,
    /// The tool call a `tool` message answers.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The calls an assistant turn made.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ChatToolCall>>,
    /// An assistant's refusal.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Only with route reasoning "send" (DeepSeek's thinking mode), on turns that made tool
    /// calls.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

/// A chat-completions message's content.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum ChatContent {
    /// Text.
    Text(String),
    /// Content parts.
    Parts(Vec<Map<String, Value>>),
}

/// A tool call of a chat-completions assistant message.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ChatToolCall {
    /// The call's id.
    pub id: String,
    /// Always `function`.
    #[schemars(rename = "type")]
    pub kind: FunctionType,
    /// The function called.
    pub function: ChatFunctionCall,
}

/// The function a chat-completions tool call calls.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ChatFunctionCall {
    /// The tool's name.
    pub name: String,
    /// JSON text.
    pub arguments: String,
}

/// A chat-completions tool.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ChatTool {
    /// Always `function`.
    #[schemars(rename = "type")]
    pub kind: FunctionType,
    /// The tool.
    pub function: ToolSchema,
}

/// anthropic-messages: `{model, max_tokens, system?, messages, tools?, ...options}`
/// (docs.anthropic.com/en/api/messages).
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct AnthropicRequest {
    /// The model.
    pub model: String,
    /// The most tokens the model may write.
    #[schemars(range(min = 1))]
    pub max_tokens: u64,
    /// The system prompt, as text blocks.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub system: Option<Vec<AnthropicText>>,
    /// The conversation.
    pub messages: Vec<AnthropicMessage>,
    /// The tools, when there are any.
    #[schemars(skip_serializing_if = "Option::is_none", length(min = 1))]
    pub tools: Option<Vec<AnthropicTool>>,
}

/// `"text"`: the type of a system block.
#[derive(JsonSchema)]
pub enum TextType {
    /// Text.
    #[schemars(rename = "text")]
    Text,
}

/// A text block of an Anthropic system prompt.
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct AnthropicText {
    /// Always `text`.
    #[schemars(rename = "type")]
    pub kind: TextType,
    /// The text.
    pub text: String,
    /// A prompt-cache breakpoint.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Map<String, Value>>,
}

/// The role of an Anthropic message.
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
pub enum AnthropicRole {
    /// The user (and tool results).
    User,
    /// The model.
    Assistant,
    /// A system-prompt update in history.
    System,
}

/// An Anthropic message.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AnthropicMessage {
    /// Who speaks.
    pub role: AnthropicRole,
    /// Text, or content blocks.
    pub content: AnthropicContent,
}

/// An Anthropic message's content.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum AnthropicContent {
    /// Text.
    Text(String),
    /// Content blocks, each with its `type`.
    Blocks(Vec<Block>),
}

/// A content block: its `type` and what that type has.
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct Block {
    /// The block's type.
    #[schemars(rename = "type")]
    pub kind: String,
}

/// An Anthropic tool.
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct AnthropicTool {
    /// The tool's name.
    pub name: String,
    /// What it does.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters' JSON Schema.
    pub input_schema: Map<String, Value>,
    /// A prompt-cache breakpoint.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Map<String, Value>>,
}

/// openai-responses: `{model, instructions?, input, tools?, ...options}`
/// (platform.openai.com/docs/api-reference/responses/create).
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct ResponsesRequest {
    /// The model.
    pub model: String,
    /// The system prompt.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The conversation, as items.
    pub input: Vec<Map<String, Value>>,
    /// The tools, when there are any.
    #[schemars(skip_serializing_if = "Option::is_none", length(min = 1))]
    pub tools: Option<Vec<ResponsesTool>>,
}

/// A Responses function tool.
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct ResponsesTool {
    /// Always `function`.
    #[schemars(rename = "type")]
    pub kind: FunctionType,
    /// The tool's name.
    pub name: String,
    /// What it does.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters' JSON Schema.
    pub parameters: Value,
    /// Strict mode (null: the provider's default).
    pub strict: Option<bool>,
}
