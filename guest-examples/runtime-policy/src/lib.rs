//! `runtime-policy`: a runtime context provider. Its `policy` context reports the caller's
//! `sandbox` fact, so the model learns about the sandbox in the runtime-context snapshot
//! rather than in the (cached) system prompt.

use prompt_plugin::{config, declare, AssembleContext, Error, Plugin};
use serde::Deserialize;

const POLICY: &str = "policy";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Render order of the context; 110 by default, where newer versions of the TypeScript
    /// DeepSeek Harness put the sandbox policy.
    #[serde(default = "default_order")]
    order: f64,
    /// Also suppress runtime contexts for this plugin's scope and its descendants.
    #[serde(default)]
    suppress_runtime_context: bool,
}

fn default_order() -> f64 {
    110.0
}

struct RuntimePolicy;

impl Plugin for RuntimePolicy {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config {
            order,
            suppress_runtime_context,
        } = config::parse(config)?;
        declare::dynamic_context(POLICY, order)?;
        if suppress_runtime_context {
            declare::suppress_runtime_context()?;
        }
        Ok(RuntimePolicy)
    }

    fn context_text(&mut self, name: &str, cx: &AssembleContext) -> Result<String, Error> {
        if name != POLICY {
            return Err(Error::invalid_input(format!(
                "no dynamic context \"{name}\""
            )));
        }
        // Empty text contributes nothing, which is what "no sandbox fact" should mean.
        Ok(cx
            .fact("sandbox")
            .map(|mode| format!("Sandbox: {mode}."))
            .unwrap_or_default())
    }
}

prompt_plugin::export_plugin!(RuntimePolicy);
