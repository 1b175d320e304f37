//! Configuration of the prompt core.

use serde::{Deserialize, Serialize};

/// The `[prompt]` table of host.toml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct PromptConfig {
    /// Register `harness:identity` at order -100.
    pub include_harness_identity: bool,
    /// The identity text; `None` = the default sentence,
    /// [`DEFAULT_IDENTITY`](crate::prompt::DEFAULT_IDENTITY).
    pub identity: Option<String>,
    /// When false, a permanent global runtime-context suppressor is registered.
    pub include_runtime_context: bool,
    /// Template text of the always-registered `deployment:persona` section.
    pub persona: String,
    /// Tool order with exactly one `<unlisted-tools>` rest entry; `None` = plain order.
    pub tool_order: Option<Vec<String>>,
    /// The most bytes one rendered system prompt may hold (an extension: plugin texts and
    /// variable values are untrusted, and a template can repeat a large value many times).
    pub max_prompt_bytes: usize,
    /// The most bytes one runtime-context snapshot may hold.
    pub max_context_bytes: usize,
    /// The tokenizer counts are made with: `o200k_base`, `cl100k_base`, or a path to a
    /// `tokenizer.json` (host.toml resolves a relative path against its own directory).
    /// The core only carries the name; the host loads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// The most tokens one rendered system prompt may hold, counted with `tokenizer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_prompt_tokens: Option<usize>,
    /// The most tokens one runtime-context snapshot may hold, counted with `tokenizer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_context_tokens: Option<usize>,
}

/// Default of [`PromptConfig::max_prompt_bytes`]: 8 MiB, about two million tokens, far past
/// any model's context window.
pub const DEFAULT_MAX_PROMPT_BYTES: usize = 8 << 20;
/// Default of [`PromptConfig::max_context_bytes`]: 8 MiB.
pub const DEFAULT_MAX_CONTEXT_BYTES: usize = 8 << 20;

impl Default for PromptConfig {
    fn default() -> Self {
        Self {
            include_harness_identity: true,
            identity: None,
            include_runtime_context: true,
            persona: String::new(),
            tool_order: None,
            max_prompt_bytes: DEFAULT_MAX_PROMPT_BYTES,
            max_context_bytes: DEFAULT_MAX_CONTEXT_BYTES,
            tokenizer: None,
            max_prompt_tokens: None,
            max_context_tokens: None,
        }
    }
}

impl PromptConfig {
    /// Sets [`PromptConfig::include_harness_identity`].
    pub fn include_harness_identity(mut self, value: bool) -> Self {
        self.include_harness_identity = value;
        self
    }

    /// Sets [`PromptConfig::identity`].
    pub fn identity(mut self, value: impl Into<String>) -> Self {
        self.identity = Some(value.into());
        self
    }

    /// Sets [`PromptConfig::include_runtime_context`].
    pub fn include_runtime_context(mut self, value: bool) -> Self {
        self.include_runtime_context = value;
        self
    }

    /// Sets [`PromptConfig::persona`].
    pub fn persona(mut self, value: impl Into<String>) -> Self {
        self.persona = value.into();
        self
    }

    /// Sets [`PromptConfig::tool_order`].
    pub fn tool_order(mut self, value: Vec<String>) -> Self {
        self.tool_order = Some(value);
        self
    }

    /// Sets [`PromptConfig::max_prompt_bytes`].
    pub fn max_prompt_bytes(mut self, value: usize) -> Self {
        self.max_prompt_bytes = value;
        self
    }

    /// Sets [`PromptConfig::max_context_bytes`].
    pub fn max_context_bytes(mut self, value: usize) -> Self {
        self.max_context_bytes = value;
        self
    }

    /// Sets [`PromptConfig::tokenizer`].
    pub fn tokenizer(mut self, value: impl Into<String>) -> Self {
        self.tokenizer = Some(value.into());
        self
    }

    /// Sets [`PromptConfig::max_prompt_tokens`].
    pub fn max_prompt_tokens(mut self, value: usize) -> Self {
        self.max_prompt_tokens = Some(value);
        self
    }

    /// Sets [`PromptConfig::max_context_tokens`].
    pub fn max_context_tokens(mut self, value: usize) -> Self {
        self.max_context_tokens = Some(value);
        self
    }
}
