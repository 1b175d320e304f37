//! A [`Host`] built without the `tokens` feature counts no tokens: a tokenizer or a token
//! budget in its `[prompt]` settings is refused when it is made, so no rendering is ever
//! over a budget nobody counts.

use super::{spans, Host, HostError, PromptConfig, Rendered};
use crate::feature::Feature;

/// Refuse `[prompt] tokenizer`, `max_prompt_tokens` and `max_context_tokens`.
pub(super) fn refuse_token_settings(prompt: &PromptConfig) -> Result<(), HostError> {
    match crate::config::token_setting(prompt) {
        Some((key, value)) => Err(HostError::MissingFeature {
            entry: format!("{key} = {value}"),
            feature: Feature::Tokens,
        }),
        None => Ok(()),
    }
}

/// A step's request refused before it was written (this build counts nothing).
pub(super) struct RequestOver(HostError);

impl RequestOver {
    pub(super) fn into_error(self, _path: String, _session: &crate::session::Session) -> HostError {
        self.0
    }
}

impl Host {
    /// No count: a `max_request_tokens` set on this build is refused at the step.
    pub(super) fn check_request_budget(
        &self,
        _request: &crate::session::ModelRequest,
    ) -> Result<(), RequestOver> {
        match self.max_request_tokens {
            None => Ok(()),
            Some(limit) => Err(RequestOver(HostError::MissingFeature {
                entry: format!("sessions.max_request_tokens = {limit}"),
                feature: Feature::Tokens,
            })),
        }
    }

    /// No counts for the span.
    pub(super) fn span_tokens(&self, _rendered: &Rendered) -> Option<spans::SpanTokens<'_>> {
        None
    }

    /// No budget to check: [`refuse_token_settings`] refused them all.
    pub fn check_token_budgets(
        &self,
        _rendered: &Rendered,
        _scope: Option<&str>,
    ) -> Result<(), HostError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wasm::RuntimeConfig;

    /// The refusal of `prompt`, which must be refused.
    fn refusal(prompt: PromptConfig) -> String {
        match Host::new(prompt, RuntimeConfig::default()) {
            Ok(_) => panic!("a host that cannot count tokens was made with token settings"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_tokenizer_or_a_token_budget_is_refused_naming_the_feature() {
        let mut prompt = PromptConfig::default();
        prompt.tokenizer = Some("o200k_base".into());
        assert_eq!(
            refusal(prompt),
            "prompt.tokenizer = \"o200k_base\": this build of prompt-host has no tokenizer \
             support (the crate feature \"tokens\")"
        );
        let mut prompt = PromptConfig::default();
        prompt.max_prompt_tokens = Some(1000);
        let e = refusal(prompt);
        assert!(
            e.starts_with("prompt.max_prompt_tokens = 1000: ") && e.contains("\"tokens\""),
            "{e}"
        );
    }
}
