//! Guest SDK for prompt-host plugins.
//!
//! prompt-host assembles an LLM agent's system prompt, step after step, from sandboxed
//! WebAssembly components. A plugin contributes **sections** (the prompt's text, in `order`),
//! **runtime contexts** (text rendered into a snapshot message at the end of the history),
//! **variables** (referenced from any text as `{{name}}`) and **tools** (JSON-schema
//! definitions beside the prompt), or **listens** to every assembly and changes it. This crate
//! turns the plugin contract, the WIT package `prompt-host:plugin` in the crate's `wit/`, into
//! one trait, [`Plugin`], and one macro, [`export_plugin!`].
//!
//! # A plugin
//!
//! ```no_run
//! use prompt_plugin::{declare, AssembleContext, Error, Plugin};
//!
//! struct Hello;
//!
//! impl Plugin for Hello {
//!     fn init(_config: serde_json::Value) -> Result<Self, Error> {
//!         // Fixed text, stored by the host: assemblies never call the plugin for it.
//!         declare::section("hello:rules", 150.0, "Work in {{cwd}}. Be brief.")?;
//!         // Text the host asks `section_text` for, once per assembly.
//!         declare::dynamic_section("hello:scope", 160.0)?;
//!         Ok(Hello)
//!     }
//!
//!     fn section_text(&mut self, _name: &str, cx: &AssembleContext) -> Result<String, Error> {
//!         let scope = cx.nearest_scope().unwrap_or("global");
//!         Ok(format!("You are serving scope {scope}."))
//!     }
//! }
//!
//! prompt_plugin::export_plugin!(Hello);
//! ```
//!
//! The crate is a `cdylib` (`[lib] crate-type = ["cdylib"]`), built with
//! `cargo build --release --target wasm32-wasip2`: the output is a component the host loads
//! as is. `prompt-host check plugin.wasm` runs its `init` and lists what it declared;
//! `prompt-host new NAME` writes a whole project (a plugin of each kind, this crate vendored,
//! a host.toml to try it, a unit test).
//!
//! # Declaring
//!
//! [`Plugin::init`] runs once per instance. It receives the plugin's `config` table from
//! host.toml as JSON ([`config::parse`] turns it into a type of yours) and declares entries
//! with the functions of [`declare`], which the host accepts only during `init`. Each entry
//! is either:
//!
//! * **fixed**: the text, value or tool set is handed over once and stored by the host;
//!   assemblies never call the plugin for it, so it costs nothing per step;
//! * **dynamic**: the host calls the matching callback of [`Plugin`] once per assembly that
//!   uses the entry — [`Plugin::section_text`], [`Plugin::context_text`],
//!   [`Plugin::variable`], [`Plugin::tools`] — with the entry's name and the
//!   [`AssembleContext`] (the scope chain, nearest first, and the caller's facts).
//!
//! Sections render in ascending `order`: -100 is the harness identity, 0 the persona,
//! 100–199 tool guidance. Names are shared by every plugin of a scope, and a nearer scope's
//! entry shadows a farther one of the same name: prefix yours with the plugin's name.
//! Variable names match `^[a-z][a-z0-9_]*$`; a reference to a variable without a value fails
//! the rendering instead of printing nothing.
//!
//! # Listening
//!
//! A listener ([`declare::listener`]) receives every assembly of its scope as an
//! [`Assembly`] handle in [`Plugin::on_assemble`]. It may read and change sections,
//! contexts, tools and variables through the handle, paying only for what it touches, and
//! calls [`Assembly::next`] to run the listeners inside it; not calling it short-circuits
//! them.
//!
//! # Errors, logs, cancellation
//!
//! Callbacks return [`Error`]: [`Error::invalid_input`] when the input (usually the config)
//! is wrong, [`Error::failed`] when the plugin could not do its work. The host reports
//! either with the plugin, export and scope named. A panic traps the instance; the host
//! replaces it, so return errors instead. [`log`] writes lines into the host's log,
//! attributed to the plugin and capped per instance. A long callback checks [`cancelled`] to
//! stop early when the caller has given up.
//!
//! # Contract versions
//!
//! The crate builds against `prompt-host:plugin@0.2.0` by default: a dynamic answer equal to
//! the instance's previous answer for the same entry is sent as "unchanged", so a steady
//! assembly copies nothing out of the plugin (the SDK compares for you), and [`cancelled`]
//! works. A plugin that calls [`keep_for`] is a `@0.3.0` component, which needs a host that
//! implements 0.3.0; one that does not stays a 0.2.0 component. The cargo feature `wit-0-1`
//! builds against `@0.1.0` instead, for hosts that predate 0.2.0. Plugin code is the same
//! for every version.
//!
//! # Testing
//!
//! The crate also compiles for the machine you build on, so `cargo test` runs a plugin's
//! unit tests natively: call its callbacks on a value built by hand, with an
//! [`AssembleContext`] built by hand. What calls into the host — the functions of
//! [`declare`] and [`log`], the [`Assembly`] handle, [`cancelled`] — only works inside it;
//! `prompt-host check` and `prompt-host render` try those.
//!
//! # MCP instruction providers
//!
//! A plugin that also implements [`InstructionProvider`] and is exported with
//! [`export_instruction_provider!`] receives what an MCP server said about itself
//! ([`McpServer`]) and decides, by declaring sections and tools, what reaches the prompt.
//! Exported with [`export_skills_provider!`] instead, it also receives the server's skills
//! index ([`McpSkill`], the MCP Skills extension) in
//! [`InstructionProvider::receive_skills`], right before each `publish`.

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
pub use bindings::api::skills::McpSkill;
pub use bindings::api::types::{AssembleContext, NamedText, PluginError, ToolSchema, ToolSet};

/// Let the host reuse the answer the running callback gives, without calling again, for
/// every assembly that starts within `duration`, whatever its context (contract 0.3.0,
/// `freshness.keep-for`). Call it from [`Plugin::section_text`], [`Plugin::context_text`],
/// [`Plugin::variable`] or [`Plugin::tools`] for a value that does not depend on the
/// context and changes on a clock of its own — a document fetched over the network and
/// revalidated every few minutes — and the host calls once per refresh instead of once per
/// assembly. With [`Version::Context`] for the same entry, the answer is reused only while
/// the context also stays the same. The host calls again sooner when it replaces the
/// instance or the plugin is reloaded. Does nothing under contract 0.1.0 (feature
/// `wit-0-1`); elsewhere, calling it makes the plugin a 0.3.0 component.
pub fn keep_for(duration: std::time::Duration) {
    #[cfg(not(feature = "wit-0-1"))]
    {
        let nanoseconds = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        bindings::api::freshness::keep_for(nanoseconds);
    }
    #[cfg(feature = "wit-0-1")]
    {
        let _ = duration;
    }
}

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

/// Export `$ty` (an [`InstructionProvider`]) as this component's `contributor`,
/// `instructions` and `skills` (contract 0.3.0's, which a provider of any contract version
/// may add), and receives each server's skills index in
/// [`InstructionProvider::receive_skills`].
#[macro_export]
macro_rules! export_skills_provider {
    ($ty:ty) => {
        const _: () = {
            type __PromptPluginExport = $crate::__private::Export<$ty>;
            $crate::bindings::plugin::__export_plugin_world!(
                __PromptPluginExport with_types_in $crate::bindings::plugin
            );
            $crate::bindings::instructions::__export_instructions_world!(
                __PromptPluginExport with_types_in $crate::bindings::instructions
            );
            $crate::bindings::skills::__export_skills_world!(
                __PromptPluginExport with_types_in $crate::bindings::skills
            );
        };
    };
}
