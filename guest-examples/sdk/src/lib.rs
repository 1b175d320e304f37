//! Guest SDK for prompt-host plugins.
//!
//! A plugin is a `cdylib` built for `wasm32-wasip2` that implements [`Plugin`] and calls
//! [`export_plugin!`]:
//!
//! ```ignore
//! use prompt_plugin::{declare, Error, Plugin};
//!
//! struct Hello;
//!
//! impl Plugin for Hello {
//!     fn init(_config: serde_json::Value) -> Result<Self, Error> {
//!         declare::section("hello", 150.0, "Say hello in {{cwd}}.")?;
//!         Ok(Hello)
//!     }
//! }
//!
//! prompt_plugin::export_plugin!(Hello);
//! ```
//!
//! The SDK wraps the bindings wit-bindgen generates from `wit/` (package
//! `prompt-host:plugin@0.2.0`, or `@0.1.0` with the feature `wit-0-1`); the generated
//! types are re-exported here so plugins never name
//! the generated module paths.

#![warn(missing_docs)]

#[cfg(not(feature = "wit-0-1"))]
mod answers;
#[doc(hidden)]
pub mod bindings;
pub mod config;
pub mod declare;
mod error;
pub mod log;
mod plugin;
mod types;
mod versions;

pub use plugin::{InstructionProvider, Plugin};
pub use types::tool;
pub use versions::{Entry, Version};

pub use bindings::api::assembly::Assembly;
pub use bindings::api::instructions::{McpServer, McpTool};
pub use bindings::api::registry::{
    self, Context as ContextDecl, ListenerOptions, RegistryError, Section as SectionDecl,
    TextSource, ToolSource, VariableSource,
};
pub use bindings::api::types::{AssembleContext, NamedText, PluginError, ToolSchema, ToolSet};

/// Whether the caller cancelled the assembly the running callback belongs to. A plugin
/// doing long work checks it to stop early and return an error; the host interrupts a
/// cancelled call at its next epoch tick anyway. Always false under contract 0.1.0 (feature
/// `wit-0-1`), which has no way to ask.
pub fn cancelled() -> bool {
    #[cfg(not(feature = "wit-0-1"))]
    {
        bindings::api::control::cancelled()
    }
    #[cfg(feature = "wit-0-1")]
    {
        false
    }
}

/// What plugin callbacks return on failure: `invalid-input` or `failed`, both with a message.
pub type Error = PluginError;

/// Re-exported so plugins (and the export macros) use the SDK's copy of `serde_json`.
pub use serde_json;

/// Implementation details of the export macros. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::plugin::Export;
}

/// Export `$ty` (a [`Plugin`]) as this component's `contributor`: the component implements
/// the `plugin` world. Invoke it once, in the plugin's `cdylib` crate.
#[macro_export]
macro_rules! export_plugin {
    ($ty:ty) => {
        const _: () = {
            type __PromptPluginExport = $crate::__private::Export<$ty>;
            $crate::bindings::plugin::__export_plugin_world!(
                __PromptPluginExport with_types_in $crate::bindings::plugin
            );
        };
    };
}

/// Export `$ty` (an [`InstructionProvider`]) as this component's `contributor` and
/// `instructions`: the component implements the `instruction-provider` world.
#[macro_export]
macro_rules! export_instruction_provider {
    ($ty:ty) => {
        const _: () = {
            type __PromptPluginExport = $crate::__private::Export<$ty>;
            $crate::bindings::plugin::__export_plugin_world!(
                __PromptPluginExport with_types_in $crate::bindings::plugin
            );
            $crate::bindings::instructions::__export_instructions_world!(
                __PromptPluginExport with_types_in $crate::bindings::instructions
            );
        };
    };
}
