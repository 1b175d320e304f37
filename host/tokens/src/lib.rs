//! Token counts: what each part of the prompt costs in a model's tokens, not only in bytes.
//!
//! Two kinds of tokenizer: OpenAI's BPE encodings (`o200k_base`, `cl100k_base`, their ranks
//! compiled in by `tiktoken-rs`) and any Hugging Face `tokenizer.json` given by path (the
//! DeepSeek tokenizers among them), run by the `tokenizers` crate. Text is counted as plain
//! text: a special-token spelling such as `<|endoftext|>` in a plugin's output counts as the
//! ordinary tokens it is made of, as the model would see it inside a message, never as a
//! control token. No special tokens are added (no BOS): a count is the text's own.
//!
//! Per-part counts can differ from the count of the joined prompt: a BPE merge may span the
//! separator between two sections. [`TokenReport`] gives both, so budgets can use the total.
//!
//! No text makes counting fail or panic; both tokenizers' crates split text with fancy-regex,
//! which gives up on a piece of about a million characters. The BPE encodings are counted
//! exactly, always: tiktoken's own pieces (found without fancy-regex's backtracking, `bpe`)
//! and tiktoken's own merges, so a count equals tiktoken's wherever tiktoken can count, and
//! is the encoding's definition where it cannot. A `tokenizer.json` counts a text with a run
//! of more than [`MAX_TOKENIZER_JSON_RUN`] characters (all whitespace, or all not) in parts
//! cut inside that run (`hf`); any other text exactly as Hugging Face `tokenizers` does.
//!
//! A crate of its own, on `prompt-host-core` alone: the two tokenizers' crates are the
//! heaviest part of the host's dependency tree after wasmtime, and nothing here needs a
//! WebAssembly runtime, MCP or HTTP. The `prompt-host` crate re-exports it as
//! `prompt_host::tokens`.

use std::path::{Path, PathBuf};

mod bpe;
mod budget;
mod cache;
mod cuts;
mod hf;
mod request;

pub use budget::{
    check as check_budget, BudgetError, Contributor, OverTokenBudget, TokenBudgeted, LARGEST_NAMED,
};
pub use cache::{CacheStats, MAX_CACHED_BYTES, MAX_CACHED_TEXTS};
pub use hf::MAX_RUN as MAX_TOKENIZER_JSON_RUN;
pub use request::{count_request, RequestTokens};

use serde::Serialize;
use thiserror::Error;

use prompt_host_core::prompt::cache_prefix::section_spans;
use prompt_host_core::prompt::{RenderError, Rendered};
use prompt_host_core::session::route::RouteName;

/// Why a tokenizer could not be loaded or could not count.
#[derive(Debug, Error)]
pub enum TokenizerError {
    /// A built-in BPE encoding failed to build from its compiled-in ranks.
    #[error("cannot build the {name} encoding")]
    Builtin {
        /// The encoding's name.
        name: &'static str,
        /// What failed.
        #[source]
        source: anyhow::Error,
    },
    /// A `tokenizer.json` could not be read or parsed.
    #[error("cannot load tokenizer file {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A name that is neither a built-in encoding nor a path to a `.json` file.
    #[error(
        "unknown tokenizer \"{0}\": expected o200k_base, cl100k_base or a path to a tokenizer.json file"
    )]
    Unknown(String),
    /// The tokenizer refused a text.
    #[error("{tokenizer} cannot encode a text")]
    Encode {
        /// The tokenizer's name.
        tokenizer: String,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The largest `tokenizer.json` read (the big vocabularies' files are 10–35 MB).
pub const MAX_TOKENIZER_FILE_BYTES: u64 = 256 << 20;

enum Engine {
    Bpe(Box<bpe::Encoding>),
    Hf(Box<tokenizers::Tokenizer>),
}

/// A loaded tokenizer: counts the tokens of a text, remembering the counts of recent texts
/// (see [`CacheStats`]).
pub struct Tokenizer {
    name: String,
    engine: Engine,
    cache: cache::CountCache,
}

/// Whether a tokenizer name is a path to a `tokenizer.json` file (every other name is a
/// built-in encoding, or unknown).
pub fn is_file_spec(spec: &str) -> bool {
    spec.ends_with(".json")
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("name", &self.name)
            .finish()
    }
}

impl Tokenizer {
    /// Load `spec`: `o200k_base`, `cl100k_base`, or a path to a `tokenizer.json` (relative
    /// paths against `base` when given).
    pub fn load(spec: &str, base: Option<&Path>) -> Result<Self, TokenizerError> {
        let builtin = |name: &'static str, built: anyhow::Result<bpe::Encoding>| {
            built
                .map(|bpe| Tokenizer {
                    name: name.to_string(),
                    engine: Engine::Bpe(Box::new(bpe)),
                    cache: cache::CountCache::new(),
                })
                .map_err(|source| TokenizerError::Builtin { name, source })
        };
        match spec {
            "o200k_base" => builtin("o200k_base", bpe::Encoding::o200k_base()),
            "cl100k_base" => builtin("cl100k_base", bpe::Encoding::cl100k_base()),
            _ if is_file_spec(spec) => {
                let path = match base {
                    Some(dir) if Path::new(spec).is_relative() => dir.join(spec),
                    _ => PathBuf::from(spec),
                };
                // Opened once, non-blocking, and only if it is a regular file: a FIFO or a
                // device given as a tokenizer is refused, never waited on or read forever.
                let bytes = prompt_host_core::fsutil::read_regular(&path, MAX_TOKENIZER_FILE_BYTES)
                    .map_err(|source| TokenizerError::File {
                        path: path.clone(),
                        source: Box::new(source),
                    })?;
                let tokenizer = tokenizers::Tokenizer::from_bytes(&bytes)
                    .map_err(|source| TokenizerError::File { path, source })?;
                Ok(Tokenizer {
                    name: spec.to_string(),
                    engine: Engine::Hf(Box::new(tokenizer)),
                    cache: cache::CountCache::new(),
                })
            }
            _ => Err(TokenizerError::Unknown(spec.to_string())),
        }
    }

    /// The name it was loaded by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of tokens of `text`, counted as plain text (remembered: the same text is
    /// counted once while the cache keeps it).
    pub fn count(&self, text: &str) -> Result<usize, TokenizerError> {
        self.cache.count(text, |text| self.count_afresh(text))
    }

    /// Whether a text never has more tokens than bytes: true of the byte-level BPE
    /// encodings; a `tokenizer.json` promises nothing (byte fallback can add a token).
    pub fn at_most_one_token_per_byte(&self) -> bool {
        matches!(self.engine, Engine::Bpe(_))
    }

    /// How the count cache has done.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// The number of tokens of `text`, counted by the tokenizer itself (no cache).
    pub fn count_afresh(&self, text: &str) -> Result<usize, TokenizerError> {
        match &self.engine {
            Engine::Bpe(bpe) => bpe.count(text).map_err(|e| TokenizerError::Encode {
                tokenizer: self.name.clone(),
                source: e.into(),
            }),
            Engine::Hf(tokenizer) => {
                hf::count(tokenizer, text).map_err(|source| TokenizerError::Encode {
                    tokenizer: self.name.clone(),
                    source,
                })
            }
        }
    }
}

/// The tokens of one named part of the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PartTokens {
    /// The section, context or tool name.
    pub name: String,
    /// Its bytes.
    pub bytes: usize,
    /// Its tokens, counted alone.
    pub tokens: usize,
}

/// What a rendering costs in tokens: the whole and every part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenReport {
    /// The tokenizer's name.
    pub tokenizer: String,
    /// Tokens of the whole system prompt, counted as one text (what a request pays).
    pub prompt: usize,
    /// The sum of the sections' own counts; differs from `prompt` where tokens span the
    /// separators between sections.
    pub sections_sum: usize,
    /// Each non-empty section, in render order, as it lands in the prompt.
    pub sections: Vec<PartTokens>,
    /// Tokens of the runtime-context snapshot as one text.
    pub context: usize,
    /// Each non-empty runtime context's text.
    pub contexts: Vec<PartTokens>,
    /// Each tool: as compact JSON of the shape `tools_as` sends it in, else of its name,
    /// description and parameters.
    pub tools: Vec<PartTokens>,
    /// The route whose request shape the tools were counted in (a step's route); absent
    /// when they were counted as the schema the host holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_as: Option<RouteName>,
}

/// Why a token report could not be made.
#[derive(Debug, Error)]
pub enum TokenReportError {
    /// The prompt did not render.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// The tokenizer failed.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
}

/// Count `rendered` (its prompt checked again within `max_bytes`, as it rendered); each tool
/// schema as `tools_as` sends it, or as the schema the host holds when no route is given.
pub fn token_report(
    tokenizer: &Tokenizer,
    rendered: &Rendered,
    max_bytes: usize,
    tools_as: Option<RouteName>,
) -> Result<TokenReport, TokenReportError> {
    let assembly = &rendered.assembly;
    let (prompt, spans) = section_spans(assembly, max_bytes)?;
    let part = |name: &str, text: &str| -> Result<PartTokens, TokenizerError> {
        Ok(PartTokens {
            name: name.to_string(),
            bytes: text.len(),
            tokens: tokenizer.count(text)?,
        })
    };
    let sections = spans
        .iter()
        .map(|span| part(&span.name, &prompt[span.start..span.end]))
        .collect::<Result<Vec<_>, _>>()?;
    let contexts = rendered
        .context_sections
        .iter()
        .filter(|c| !c.text.is_empty())
        .map(|c| part(&c.name, &c.text))
        .collect::<Result<Vec<_>, _>>()?;
    let tools = assembly
        .tools
        .iter()
        .map(|tool| {
            let schema = match tools_as {
                Some(route) => route.tool_json(tool),
                None => serde_json::json!({
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": &*tool.parameters,
                }),
            };
            part(&tool.name, &schema.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TokenReport {
        tokenizer: tokenizer.name().to_string(),
        prompt: tokenizer.count(&prompt)?,
        sections_sum: sections.iter().map(|s| s.tokens).sum(),
        sections,
        context: tokenizer.count(&rendered.context)?,
        contexts,
        tools,
        tools_as,
    })
}
