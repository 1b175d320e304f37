//! Errors of the embedding API. Each names what failed and where (plugin, scope, file).

use thiserror::Error;

use crate::config::ConfigFileError;
#[cfg(feature = "mcp")]
use crate::mcp::McpBridgeError;
use crate::prompt::{AssembleError, ConfigError, RegisterError, RenderError, ScopeError};
use crate::session::AppendError;
use crate::wasm::WasmError;

/// A failure of a [`crate::Host`] operation.
///
/// Exhaustive on purpose: `prompt-host serve` maps every variant to an error kind and its
/// fields (the protocol's `error.data`), and a new variant must not pass that by unnoticed.
#[derive(Debug, Error)]
pub enum HostError {
    /// host.toml was refused.
    #[error(transparent)]
    Config(#[from] ConfigFileError),
    /// The `[prompt]` settings were refused (e.g. `tool_order`).
    #[error("[prompt]: {0}")]
    Prompt(ConfigError),
    /// A registration was refused.
    #[error(transparent)]
    Register(RegisterError),
    /// A scope binding was refused.
    #[error("bind_scope \"{scope}\": {error}")]
    Scope {
        /// The key being bound.
        scope: String,
        /// The core's refusal, with its exact `scope:` text.
        error: ScopeError,
    },
    /// The scope is bound already: a scope is bound once, as a root or under one parent, so
    /// a second `bind_scope` is refused whatever it asks for; nothing changed.
    #[error("bind_scope \"{scope}\": {}", rebound_text(scope, parent.as_deref()))]
    Rebound {
        /// The key being bound.
        scope: String,
        /// The parent it is bound to already; `None` when it is a root scope.
        parent: Option<String>,
    },
    /// A scope key that cannot be declared (empty, or an undeclared parent).
    #[error("bind_scope \"{scope}\": {message}")]
    InvalidScope {
        /// The key being bound.
        scope: String,
        /// Why.
        message: String,
    },
    /// An operation named a plugin id the host does not keep.
    #[error("no plugin with id {id} is loaded")]
    UnknownPlugin {
        /// The id asked for.
        id: u64,
    },
    /// An operation named a scope the host was never told about.
    #[error(transparent)]
    UnknownScope(Box<crate::host::UnknownScope>),
    /// A plugin could not be loaded.
    #[error(transparent)]
    Wasm(WasmError),
    /// An `oci://` plugin that could not be fetched, verified or locked.
    #[cfg(feature = "oci")]
    #[error(transparent)]
    Oci(crate::oci::OciError),
    /// An MCP server could not be connected (the message names server and scope).
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(#[from] McpBridgeError),
    /// A skill's body was not read, or was refused.
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Skill(#[from] crate::mcp::SkillError),
    /// The route a step asked for cannot be prepared (unknown, no model, an option its API
    /// requires missing). Nothing was written.
    #[error(transparent)]
    Route(crate::session::route::RouteError),
    /// The assembly failed.
    #[error("assembly for scope \"{scope}\" failed: {error}")]
    Assemble {
        /// The scope assembled for (`global` when none).
        scope: String,
        /// What failed (boxed: it is the largest error and would bloat every `Result`).
        error: Box<AssembleError>,
    },
    /// Rendering failed.
    #[error("rendering for scope \"{scope}\" failed: {error}{}{}", blamed(blame), hint.as_deref().unwrap_or(""))]
    Render {
        /// The scope rendered for.
        scope: String,
        /// What failed (boxed, like `Assemble`'s).
        error: Box<RenderError>,
        /// Who registered the entries the error names (none when a listener made them).
        blame: Vec<Blame>,
        /// What to do about it, when the host knows (a missing caller fact).
        hint: Option<String>,
    },
    /// A rendering is over a token budget (`[prompt] max_prompt_tokens` or
    /// `max_context_tokens`); the error names its largest parts and who registered them.
    #[cfg(feature = "tokens")]
    #[error("rendering for scope \"{scope}\" failed: {error}")]
    OverTokenBudget {
        /// The scope rendered for.
        scope: String,
        /// The budget, the count and the largest parts.
        error: Box<crate::tokens::OverTokenBudget>,
    },
    /// The `[prompt] tokenizer` of the configuration could not be loaded.
    #[cfg(feature = "tokens")]
    #[error("[prompt] tokenizer")]
    ConfiguredTokenizer(#[source] crate::tokens::TokenizerError),
    /// A tokenizer named for one call could not be loaded, or a tokenizer could not count.
    #[cfg(feature = "tokens")]
    #[error(transparent)]
    Tokenizer(crate::tokens::TokenizerError),
    /// Token counts were asked for with no tokenizer to count them.
    #[cfg(feature = "tokens")]
    #[error(
        "no tokenizer to count tokens with: set [prompt] tokenizer in host.toml or name one \
         (o200k_base, cl100k_base or a path to a tokenizer.json file)"
    )]
    NoTokenizer,
    /// A token budget was set with no `[prompt] tokenizer` to count it.
    #[cfg(feature = "tokens")]
    #[error("{budget}: a token budget needs prompt.tokenizer, the tokenizer that counts it")]
    BudgetNeedsTokenizer {
        /// The budget's key (`prompt.max_prompt_tokens`, `mcp[0].max_instruction_tokens`, …).
        budget: String,
    },
    /// The configuration or a call asked for what this build of prompt-host was compiled
    /// without (an MCP server, an `oci://` plugin, a tokenizer or token budget). Only in a
    /// build without one of the default features, so a server matching every variant of a
    /// default build is not affected.
    #[cfg(not(all(feature = "mcp", feature = "oci", feature = "tokens")))]
    #[error("{entry}: {feature}")]
    MissingFeature {
        /// What asked for it: `[prompt] tokenizer "o200k_base"`, ….
        entry: String,
        /// The feature the build lacks.
        feature: crate::feature::Feature,
    },
    /// An assistant reply or tool result was refused, or a step was taken while tool calls
    /// were open. Nothing was written.
    #[error("session log {path}: {error}")]
    Conversation {
        /// The log file.
        path: String,
        /// What is wrong.
        error: crate::session::ConversationError,
    },
    /// A step's request would count more tokens than `[sessions] max_request_tokens`.
    /// Nothing was written.
    #[cfg(feature = "tokens")]
    #[error("session log {path}: the request would count {} tokens ({}: system prompt {}, tools {}, messages {}), over [sessions] max_request_tokens = {limit}; {}", .tokens.total, .tokens.tokenizer, .tokens.system, .tokens.tools, .tokens.messages, compact_hint(.oldest.as_ref()))]
    OverRequestBudget {
        /// The log.
        path: String,
        /// The request's count.
        tokens: crate::tokens::RequestTokens,
        /// The budget.
        limit: usize,
        /// The oldest range a compaction could replace (keeping the newest turn), if any.
        oldest: Option<crate::session::CompactionRange>,
    },
    /// A compaction was refused. Nothing was written.
    #[error("session log {path}: compaction refused: {error}")]
    Compaction {
        /// The log.
        path: String,
        /// Why.
        error: crate::session::CompactionError,
    },
    /// A past request could not be rebuilt.
    #[error(transparent)]
    Replay(crate::session::ReplayError),
    /// Writing the step to the session log failed. (The error names the log itself; `path`
    /// is kept for callers that report it apart, like serve's error data.)
    #[error("{error}")]
    Session {
        /// The log file.
        path: String,
        /// What failed.
        error: AppendError,
    },
}

/// What an over-budget request's error suggests.
#[cfg(feature = "tokens")]
fn compact_hint(oldest: Option<&crate::session::CompactionRange>) -> String {
    match oldest {
        Some(range) => format!(
            "compact the conversation: the oldest range a compaction could replace is seqs {} to {} (everything before the newest turn)",
            range.start_seq, range.end_seq
        ),
        None => "no range can be compacted (the newest turn alone is over the budget)".into(),
    }
}

/// Who registered an entry that a render error names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blame {
    /// `Section`, `Context` or `Variable`.
    pub kind: crate::prompt::EntryKind,
    /// The entry's name.
    pub name: String,
    /// The plugin and layer that registered it.
    pub owner: crate::prompt::Owner,
}

/// `; section "x" is from plugin "p" (scope s)` for each entry.
fn blamed(blame: &[Blame]) -> String {
    blame
        .iter()
        .map(|b| {
            format!(
                "; {} \"{}\" is from plugin \"{}\" ({})",
                b.kind,
                b.name,
                b.owner.plugin,
                crate::wasm::scope_label(b.owner.scope.as_deref())
            )
        })
        .collect()
}

/// Says what the scope is bound to, after the core's wording for a second bind
/// (`ScopeError::AlreadyBound`).
fn rebound_text(scope: &str, parent: Option<&str>) -> String {
    match parent {
        Some(parent) => format!(
            "scope: scope key is already bound to a parent: \"{scope}\" is a child of \"{parent}\" (a scope is bound once)"
        ),
        None => format!(
            "scope: scope key is already bound: \"{scope}\" is a root scope (a scope is bound once)"
        ),
    }
}
