//! `wit-future`: a well-behaved plugin compiled against `prompt-host:plugin@0.9.0` (a copy
//! of the 0.1.0 contract with only the version changed, in `wit/` beside this crate), a
//! version the host does not implement. The host must refuse it at load, naming the version.

wit_bindgen::generate!({
    world: "plugin",
    path: "wit",
});

use exports::prompt_host::plugin::contributor::Guest;
use prompt_host::plugin::assembly::Assembly;
use prompt_host::plugin::registry;
use prompt_host::plugin::types::{AssembleContext, PluginError, ToolSet};

struct WitV2;

impl Guest for WitV2 {
    fn init(_config: String) -> Result<(), PluginError> {
        registry::declare_section(&registry::Section {
            name: "wit-future".into(),
            order: 1.0,
            text: registry::TextSource::Fixed("declared through 0.9.0".into()),
            complete: false,
        })
        .map_err(|_| PluginError::Failed("declare-section refused".into()))
    }

    fn section_text(_name: String, _cx: AssembleContext) -> Result<String, PluginError> {
        Ok(String::new())
    }

    fn context_text(_name: String, _cx: AssembleContext) -> Result<String, PluginError> {
        Ok(String::new())
    }

    fn variable(_name: String, _cx: AssembleContext) -> Result<Option<String>, PluginError> {
        Ok(None)
    }

    fn tools(_key: String, _cx: AssembleContext) -> Result<ToolSet, PluginError> {
        Ok(ToolSet {
            schemas: Vec::new(),
            known_names: None,
        })
    }

    fn on_assemble(
        _key: String,
        assembly: &Assembly,
        _cx: AssembleContext,
    ) -> Result<(), PluginError> {
        assembly.next()
    }
}

export!(WitV2);
