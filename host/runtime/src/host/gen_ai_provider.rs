//! `gen_ai.provider.name` of a step: who serves the model, as the OpenTelemetry GenAI
//! semantic conventions name providers. The route alone says only which API the request is
//! shaped for, and most providers speak Chat Completions: a DeepSeek model on
//! `chat-completions` is DeepSeek's, not OpenAI's. What the step knows decides, most
//! specific first:
//!
//! 1. the caller's `provider` fact, as a well-known value when it names one (`DeepSeek`,
//!    `mistral`, `xai` …), else as given when it is a plain name (a custom value, which the
//!    conventions allow);
//! 2. the model's name, by the family it belongs to (`deepseek-…`, `claude-…`, `gpt-…`,
//!    `gemini-…`, `mistral-…`, `grok-…`, `command-…`, `sonar…`), the last `/` segment read
//!    (`deepseek/deepseek-chat`);
//! 3. the route: `anthropic` for `anthropic-messages`, `openai` for the others.

use std::borrow::Cow;

use crate::session::route::RouteName;

/// The conventions' well-known values, and the other spellings of each a caller may use.
const KNOWN: &[(&str, &[&str])] = &[
    ("anthropic", &["claude"]),
    (
        "aws.bedrock",
        &["bedrock", "aws", "amazon-bedrock", "aws-bedrock"],
    ),
    ("azure.ai.inference", &["azure-ai-inference"]),
    (
        "azure.ai.openai",
        &["azure", "azure-openai", "azure_openai"],
    ),
    ("cohere", &[]),
    ("deepseek", &["deep-seek", "deep_seek"]),
    (
        "gcp.gemini",
        &["gemini", "google", "google-ai-studio", "ai-studio"],
    ),
    ("gcp.gen_ai", &[]),
    (
        "gcp.vertex_ai",
        &["vertex", "vertex-ai", "vertex_ai", "vertexai"],
    ),
    ("groq", &[]),
    ("ibm.watsonx.ai", &["watsonx", "ibm"]),
    ("mistral_ai", &["mistral", "mistralai", "mistral-ai"]),
    ("openai", &["open-ai", "open_ai"]),
    ("perplexity", &["pplx"]),
    ("x_ai", &["xai", "x-ai", "x.ai", "grok"]),
];

/// Model families: a model whose name starts with the prefix is the provider's.
const FAMILIES: &[(&str, &str)] = &[
    ("deepseek", "deepseek"),
    ("claude", "anthropic"),
    ("gpt-", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("gemini", "gcp.gemini"),
    ("mistral", "mistral_ai"),
    ("mixtral", "mistral_ai"),
    ("codestral", "mistral_ai"),
    ("magistral", "mistral_ai"),
    ("devstral", "mistral_ai"),
    ("ministral", "mistral_ai"),
    ("pixtral", "mistral_ai"),
    ("grok", "x_ai"),
    ("command", "cohere"),
    ("sonar", "perplexity"),
];

/// The longest custom value taken from the `provider` fact.
const MAX_CUSTOM: usize = 64;

/// The provider of a step of `model` on `route`, with the caller's `provider` fact when
/// given.
pub(super) fn provider_name(
    fact: Option<&str>,
    model: Option<&str>,
    route: RouteName,
) -> Cow<'static, str> {
    if let Some(named) = fact.and_then(from_fact) {
        return named;
    }
    if let Some(family) = model.and_then(from_model) {
        return Cow::Borrowed(family);
    }
    Cow::Borrowed(match route {
        RouteName::AnthropicMessages => "anthropic",
        // Chat Completions and Responses are OpenAI's APIs.
        _ => "openai",
    })
}

/// The `provider` fact as a well-known value, or as a custom one when it is a plain name
/// (ASCII letters, digits, `.`, `_`, `-`): a fact is the caller's text, and what reaches a
/// trace backend's attribute stays a name.
fn from_fact(fact: &str) -> Option<Cow<'static, str>> {
    let lower = fact.trim().to_ascii_lowercase();
    let known = KNOWN
        .iter()
        .find(|(name, aliases)| *name == lower || aliases.contains(&lower.as_str()));
    if let Some((name, _)) = known {
        return Some(Cow::Borrowed(*name));
    }
    let plain = !lower.is_empty()
        && lower.len() <= MAX_CUSTOM
        && lower
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    plain.then_some(Cow::Owned(lower))
}

/// The provider of a model's family, read from the name's last `/` segment.
fn from_model(model: &str) -> Option<&'static str> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    FAMILIES
        .iter()
        .find(|(prefix, _)| {
            // `o1`, `o3`, `o4` are names of their own (`o3-mini`), not prefixes of words.
            let short = prefix.len() == 2;
            name.starts_with(prefix)
                && (!short || name.len() == 2 || name.as_bytes().get(2).is_some_and(|b| *b == b'-'))
        })
        .map(|(_, provider)| *provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_names_its_provider_whatever_api_it_is_reached_through() {
        let chat = RouteName::ChatCompletions;
        for (model, provider) in [
            ("deepseek-chat", "deepseek"),
            ("deepseek-v4", "deepseek"),
            ("DeepSeek-R1", "deepseek"),
            ("deepseek/deepseek-v4-flash", "deepseek"),
            ("claude-sonnet-4-5", "anthropic"),
            ("gpt-4o", "openai"),
            ("o3-mini", "openai"),
            ("o1", "openai"),
            ("gemini-2.5-pro", "gcp.gemini"),
            ("mistral-large-latest", "mistral_ai"),
            ("grok-4", "x_ai"),
            ("command-r-plus", "cohere"),
            ("sonar-pro", "perplexity"),
            // Not a family: the route's API.
            ("m1", "openai"),
            ("omni-9", "openai"),
        ] {
            assert_eq!(provider_name(None, Some(model), chat), provider, "{model}");
        }
        // DeepSeek's Anthropic-compatible API is still DeepSeek.
        assert_eq!(
            provider_name(None, Some("deepseek-chat"), RouteName::AnthropicMessages),
            "deepseek"
        );
        assert_eq!(
            provider_name(None, Some("m1"), RouteName::AnthropicMessages),
            "anthropic"
        );
        assert_eq!(
            provider_name(None, None, RouteName::OpenaiResponses),
            "openai"
        );
    }

    #[test]
    fn the_provider_fact_wins_as_a_well_known_value_or_a_plain_name() {
        let chat = RouteName::ChatCompletions;
        for (fact, provider) in [
            ("DeepSeek", "deepseek"),
            ("mistral", "mistral_ai"),
            ("xai", "x_ai"),
            (" Azure ", "azure.ai.openai"),
            ("openrouter", "openrouter"),
            ("together.ai", "together.ai"),
        ] {
            assert_eq!(
                provider_name(Some(fact), Some("deepseek-chat"), chat),
                provider,
                "{fact}"
            );
        }
        // Not a name: the model decides.
        for fact in ["", "evil\u{1b}[2J", "a b", &"x".repeat(65)] {
            assert_eq!(
                provider_name(Some(fact), Some("deepseek-chat"), chat),
                "deepseek",
                "{fact:?}"
            );
        }
    }
}
