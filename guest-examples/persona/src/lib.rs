//! `persona`: a persona pack. Loaded into a scope, its `deployment:persona` section shadows
//! the deployment persona there (nearer scopes shadow farther ones by name).

use prompt_plugin::{config, declare, Error, Plugin};
use serde::Deserialize;

/// The section name the host's own persona uses; sharing it is what makes this a shadow.
const PERSONA_SECTION: &str = "deployment:persona";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The persona text (may reference variables such as `{{model}}`).
    text: String,
    /// Render order; the persona band is 0.
    #[serde(default)]
    order: f64,
}

struct Persona;

impl Plugin for Persona {
    fn init(config: serde_json::Value) -> Result<Self, Error> {
        let Config { text, order } = config::parse(config)?;
        declare::section(PERSONA_SECTION, order, &text)?;
        Ok(Persona)
    }
}

prompt_plugin::export_plugin!(Persona);
