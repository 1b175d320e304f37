//! Token counts and budgets of a [`Host`]: the `[prompt] tokenizer`, tokenizers named per
//! call (each loaded once), the report of a rendering, and the token budgets every render
//! is checked against.

use super::*;
use crate::prompt::cache_prefix::section_spans;
use crate::prompt::NamedText;
use crate::session::route::RouteName;
use crate::tokens::{self, BudgetError, TokenBudgeted, TokenReport, Tokenizer};

/// How many tokenizers named per call a host keeps loaded (a `tokenizer.json` can hold tens
/// of megabytes); the one named longest ago goes first.
pub const MAX_NAMED_TOKENIZERS: usize = 4;

/// The tokenizers a host counts with.
pub(super) struct Tokenizers {
    /// `[prompt] tokenizer`, loaded when the host was made.
    configured: Option<Arc<Tokenizer>>,
    /// Named per call, newest last.
    named: Mutex<Vec<Arc<Tokenizer>>>,
}

impl Tokenizers {
    /// The tokenizer `prompt` names, loaded now: a wrong name or an unreadable file fails
    /// the host's start, not its first render.
    pub(super) fn configured(prompt: &PromptConfig) -> Result<Self, HostError> {
        // A budget nothing can count would fail every render; it fails the start instead
        // (host.toml refuses it too, naming the file).
        let budgets = [
            ("prompt.max_prompt_tokens", prompt.max_prompt_tokens),
            ("prompt.max_context_tokens", prompt.max_context_tokens),
        ];
        if prompt.tokenizer.is_none() {
            if let Some((key, _)) = budgets.iter().find(|(_, limit)| limit.is_some()) {
                return Err(HostError::BudgetNeedsTokenizer {
                    budget: (*key).to_owned(),
                });
            }
        }
        let configured = prompt
            .tokenizer
            .as_deref()
            .map(|spec| Tokenizer::load(spec, None).map(Arc::new))
            .transpose()
            .map_err(HostError::ConfiguredTokenizer)?;
        Ok(Self {
            configured,
            named: Mutex::new(Vec::new()),
        })
    }
}

impl Host {
    /// The `[prompt] tokenizer`, when one is set.
    pub fn tokenizer(&self) -> Option<&Arc<Tokenizer>> {
        self.tokenizers.configured.as_ref()
    }

    /// The tokenizer `name` names (`o200k_base`, `cl100k_base` or a `tokenizer.json` path,
    /// relative to the working directory), or the `[prompt] tokenizer` when `None`. A named
    /// tokenizer is loaded once and kept (the four named last), so a
    /// count per step does not read its file per step.
    pub fn tokenizer_named(&self, name: Option<&str>) -> Result<Arc<Tokenizer>, HostError> {
        let configured = self.tokenizers.configured.as_ref();
        let Some(name) = name else {
            return configured.cloned().ok_or(HostError::NoTokenizer);
        };
        if let Some(tokenizer) = configured.filter(|t| t.name() == name) {
            return Ok(Arc::clone(tokenizer));
        }
        let lock = || {
            self.tokenizers
                .named
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(found) = lock().iter().find(|t| t.name() == name) {
            return Ok(Arc::clone(found));
        }
        // Loaded without the lock: a large file does not hold up counts with the others.
        let loaded = Arc::new(Tokenizer::load(name, None).map_err(HostError::Tokenizer)?);
        let mut named = lock();
        if let Some(found) = named.iter().find(|t| t.name() == name) {
            return Ok(Arc::clone(found));
        }
        if named.len() >= MAX_NAMED_TOKENIZERS {
            named.remove(0);
        }
        named.push(Arc::clone(&loaded));
        Ok(loaded)
    }

    /// What `rendered` (made for `scope`) costs in tokens: the prompt, each section, the
    /// runtime context and each tool schema, counted with `tokenizer` (the host's own,
    /// [`Host::tokenizer_named`], or any other). Tool schemas are counted as the host holds
    /// them; [`Host::token_report_as`] counts them as a route's requests carry them.
    pub fn token_report(
        &self,
        rendered: &Rendered,
        scope: Option<&str>,
        tokenizer: &Tokenizer,
    ) -> Result<TokenReport, HostError> {
        self.token_report_as(rendered, scope, tokenizer, None)
    }

    /// [`Host::token_report`] with each tool schema counted in the shape `route`'s requests
    /// carry it (a step's report uses the step's route); `None` counts the schema itself.
    pub fn token_report_as(
        &self,
        rendered: &Rendered,
        scope: Option<&str>,
        tokenizer: &Tokenizer,
        route: Option<RouteName>,
    ) -> Result<TokenReport, HostError> {
        let max_bytes = self.registry.config().max_prompt_bytes;
        tokens::token_report(tokenizer, rendered, max_bytes, route).map_err(|e| match e {
            tokens::TokenReportError::Render(source) => self.render_error(scope, source),
            tokens::TokenReportError::Tokenizer(source) => HostError::Tokenizer(source),
        })
    }

    /// The token counts of `rendered` for its span, with `[prompt] tokenizer`; `None`
    /// without one, or when a count fails.
    pub(super) fn span_tokens<'a>(&'a self, rendered: &Rendered) -> Option<spans::SpanTokens<'a>> {
        let tokenizer = self.tokenizer()?;
        Some(spans::SpanTokens {
            tokenizer: tokenizer.name(),
            prompt: tokenizer.count(&rendered.prompt).ok()?,
            context: tokenizer.count(&rendered.context).ok()?,
        })
    }

    /// Check `rendered` against `[prompt] max_prompt_tokens` and `max_context_tokens`.
    /// Nothing is counted when neither is set; the counts are remembered by text, so a
    /// prompt that did not change since the last step is not counted again.
    pub fn check_token_budgets(
        &self,
        rendered: &Rendered,
        scope: Option<&str>,
    ) -> Result<(), HostError> {
        let config = self.registry.config();
        let budgets = [
            (TokenBudgeted::Prompt, config.max_prompt_tokens),
            (TokenBudgeted::Context, config.max_context_tokens),
        ];
        if budgets.iter().all(|(_, limit)| limit.is_none()) {
            return Ok(());
        }
        // `Tokenizers::configured` refused a token budget without a tokenizer.
        let tokenizer = self.tokenizer_named(None)?;
        for (budgeted, limit) in budgets {
            let Some(limit) = limit else { continue };
            let (text, kind) = match budgeted {
                TokenBudgeted::Prompt => (&rendered.prompt, EntryKind::Section),
                TokenBudgeted::Context => (&rendered.context, EntryKind::Context),
            };
            let parts = || match budgeted {
                TokenBudgeted::Prompt => prompt_parts(rendered, config.max_prompt_bytes),
                TokenBudgeted::Context => rendered.context_sections.clone(),
            };
            let owner_of = |name: &str| self.registry.owner_of(kind, name, scope);
            match tokens::check_budget(&tokenizer, budgeted, limit, text, parts, owner_of) {
                Ok(_) => {}
                Err(BudgetError::Over(error)) => {
                    return Err(HostError::OverTokenBudget {
                        scope: scope_label(scope),
                        error,
                    })
                }
                Err(BudgetError::Tokenizer(error)) => return Err(HostError::Tokenizer(error)),
            }
        }
        Ok(())
    }
}

/// Why a step's request was refused before it was written.
pub(super) enum RequestOver {
    /// Over `[sessions] max_request_tokens`.
    Budget {
        tokens: crate::tokens::RequestTokens,
        limit: usize,
    },
    /// The count failed, or there is nothing to count with.
    Error(HostError),
}

impl RequestOver {
    /// The host's error for the step on `session` (whose newest turn is kept by the
    /// compaction the error suggests).
    pub(super) fn into_error(self, path: String, session: &Session) -> HostError {
        match self {
            RequestOver::Budget { tokens, limit } => HostError::OverRequestBudget {
                path,
                tokens,
                limit,
                oldest: crate::session::oldest_compactable(session, 1),
            },
            RequestOver::Error(error) => error,
        }
    }
}

impl Host {
    /// Count a step's request against `[sessions] max_request_tokens` (nothing is counted
    /// without one).
    pub(super) fn check_request_budget(
        &self,
        request: &crate::session::ModelRequest,
    ) -> Result<(), RequestOver> {
        let Some(limit) = self.max_request_tokens else {
            return Ok(());
        };
        let tokenizer = self.tokenizer_named(None).map_err(|_| {
            RequestOver::Error(HostError::BudgetNeedsTokenizer {
                budget: "sessions.max_request_tokens".into(),
            })
        })?;
        let tokens = tokens::count_request(&tokenizer, request)
            .map_err(|e| RequestOver::Error(HostError::Tokenizer(e)))?;
        if tokens.total > limit {
            return Err(RequestOver::Budget { tokens, limit });
        }
        Ok(())
    }

    /// What `request` counts, as its route sends it, with `tokenizer`.
    pub fn request_tokens(
        &self,
        request: &crate::session::ModelRequest,
        tokenizer: &Tokenizer,
    ) -> Result<crate::tokens::RequestTokens, HostError> {
        tokens::count_request(tokenizer, request).map_err(HostError::Tokenizer)
    }
}

/// Each section's text as it lands in the rendered prompt.
fn prompt_parts(rendered: &Rendered, max_bytes: usize) -> Vec<NamedText> {
    // The assembly rendered within this budget a moment ago, so it renders again; should it
    // not, the error still gives the count and the budget, with no parts named.
    let Ok((prompt, spans)) = section_spans(&rendered.assembly, max_bytes) else {
        return Vec::new();
    };
    spans
        .iter()
        .map(|span| NamedText {
            name: span.name.clone(),
            text: prompt[span.start..span.end].to_string(),
        })
        .collect()
}
