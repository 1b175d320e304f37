//! The JSON-RPC 2.0 frame around every answer, and the error object with its `data`. The
//! server writes these frames itself (`crate::envelope`, `crate::error`); the types here
//! say what it writes, for the schema.

use schemars::JsonSchema;
use serde_json::Value;

/// `"2.0"`.
#[derive(JsonSchema)]
pub enum Version {
    /// JSON-RPC 2.0.
    #[schemars(rename = "2.0")]
    V2,
}

/// A request's id, as the client gave it.
#[derive(JsonSchema)]
#[schemars(untagged)]
pub enum Id {
    /// A string id.
    Text(String),
    /// A number id.
    Number(serde_json::Number),
}

/// A request answered: its result is its method's (`$defs/results/properties/<method>`).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Success {
    /// Always `2.0`.
    pub jsonrpc: Version,
    /// The request's id.
    pub id: Id,
    /// The method's result.
    pub result: Value,
}

/// A request that failed, or a line that was not one.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Failure {
    /// Always `2.0`.
    pub jsonrpc: Version,
    /// The request's id; null when the line had none that could be read.
    pub id: Option<Id>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// The JSON-RPC codes (`crate::code`).
#[derive(JsonSchema)]
#[schemars(extend("enum" = [-32700, -32600, -32601, -32602, -32000, -32603, -32800]))]
pub struct Code(pub i64);

/// A JSON-RPC error object.
#[derive(JsonSchema)]
#[schemars(rename = "Error", deny_unknown_fields)]
pub struct ErrorObject {
    /// The JSON-RPC code.
    pub code: Code,
    /// One paragraph.
    pub message: String,
    /// What a client can act on without parsing the message.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub data: Option<ErrorData>,
}

/// What failed.
#[derive(JsonSchema)]
#[schemars(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// A plugin's call failed.
    Plugin,
    /// A template did not render.
    Render,
    /// A plugin broke an invariant of the assembly.
    Invariant,
    /// The assembly failed.
    Assembly,
    /// A scope was bound wrongly.
    Scope,
    /// No such scope.
    UnknownScope,
    /// A session log could not be opened, read or written.
    Session,
    /// Another writer appended to a shared session first; nothing was written.
    Conflict,
    /// A conversation event was refused.
    Conversation,
    /// A compaction's range or summary was refused; nothing was written.
    Compaction,
    /// A step could not be derived again.
    Replay,
    /// No such plugin.
    UnknownPlugin,
    /// The configuration is wrong.
    Config,
    /// A plugin's registration was refused.
    Registration,
    /// An MCP server failed.
    Mcp,
    /// An MCP server's skill was not read, or its body was not what the index promised.
    McpSkill,
    /// A registry failed.
    Oci,
    /// The request was cancelled.
    Cancelled,
    /// The host failed inside.
    Internal,
    /// The params do not fit the method.
    InvalidParams,
    /// No such method.
    MethodNotFound,
    /// The line was over the size limit.
    RequestTooLarge,
    /// Too many session logs are open.
    TooManySessions,
    /// An unknown route.
    Route,
    /// A token budget was exceeded.
    TokenBudget,
    /// A tokenizer could not be loaded or used.
    Tokenizer,
}

/// The budget a token-budget error names.
#[derive(JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum BudgetName {
    /// `[prompt] max_prompt_tokens`.
    MaxPromptTokens,
    /// `[prompt] max_context_tokens`.
    MaxContextTokens,
    /// `[sessions] max_request_tokens`.
    MaxRequestTokens,
}

/// The structured fields of an error: its kind, and what it is about when that is known.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ErrorData {
    /// What failed.
    pub kind: ErrorKind,
    /// The plugin.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The plugin's export that was called.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
    /// The scope.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The section.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// The runtime context.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The variable.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// The tool provider.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub tool_provider: Option<String>,
    /// The listener.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub listener: Option<String>,
    /// The session log.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The name meant, when one is close.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// Every method (`method-not-found`).
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub methods: Option<Vec<String>>,
    /// The size of what was refused.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The limit it was over.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// The budget exceeded.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetName>,
    /// The tokenizer.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// The tokens counted.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// `token-budget` of a request: the first node of the oldest range a compaction could
    /// replace.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub start_seq: Option<u64>,
    /// `token-budget` of a request: the last node of that range.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub end_seq: Option<u64>,
    /// `conflict`: the seq this server would have written.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    /// `conflict`: the session's next seq in the store.
    #[schemars(skip_serializing_if = "Option::is_none")]
    pub actual: Option<u64>,
}

/// The params of `$/cancelRequest`.
#[derive(JsonSchema)]
pub struct CancelParams {
    /// The id of the request to cancel.
    pub id: Id,
}
