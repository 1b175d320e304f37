//! Typed helpers over the `registry` import: one function per kind of declaration.
//!
//! They only work while the host runs `init` (or `publish` for an instruction provider); at
//! any other time the host answers `closed`. Each returns the host's [`RegistryError`] so
//! `init` can use `?` (it converts into a [`crate::Error`] that keeps the host's message).

use crate::bindings::api::registry::{
    self, Context, ListenerOptions, Section, TextSource, ToolSource, VariableSource,
};
use crate::{RegistryError, ToolSchema, ToolSet};

/// A section with fixed text, stored by the host: assemblies never call the plugin for it.
pub fn section(name: &str, order: f64, text: &str) -> Result<(), RegistryError> {
    registry::declare_section(&Section {
        name: name.to_owned(),
        order,
        text: TextSource::Fixed(text.to_owned()),
        complete: false,
    })
}

/// A section whose text the host asks [`crate::Plugin::section_text`] for, once per assembly.
pub fn dynamic_section(name: &str, order: f64) -> Result<(), RegistryError> {
    registry::declare_section(&Section {
        name: name.to_owned(),
        order,
        text: TextSource::Dynamic,
        complete: false,
    })
}

/// A fixed section that is the entire system prompt: every other section is left out.
pub fn complete_section(name: &str, order: f64, text: &str) -> Result<(), RegistryError> {
    registry::declare_section(&Section {
        name: name.to_owned(),
        order,
        text: TextSource::Fixed(text.to_owned()),
        complete: true,
    })
}

/// Any section, for the combinations the helpers above do not cover.
pub fn section_raw(section: &Section) -> Result<(), RegistryError> {
    registry::declare_section(section)
}

/// A runtime context with fixed text (rendered into the runtime-context snapshot, never
/// into the system prompt).
pub fn context(name: &str, order: f64, text: &str) -> Result<(), RegistryError> {
    registry::declare_context(&Context {
        name: name.to_owned(),
        order,
        text: TextSource::Fixed(text.to_owned()),
    })
}

/// A runtime context whose text the host asks [`crate::Plugin::context_text`] for.
pub fn dynamic_context(name: &str, order: f64) -> Result<(), RegistryError> {
    registry::declare_context(&Context {
        name: name.to_owned(),
        order,
        text: TextSource::Dynamic,
    })
}

/// A variable with a fixed value; `None` registers it without a value (rendering a
/// reference to it then fails, which is how a plugin reserves a name).
pub fn variable(name: &str, value: Option<&str>) -> Result<(), RegistryError> {
    registry::declare_variable(name, &VariableSource::Fixed(value.map(str::to_owned)))
}

/// A variable whose value the host asks [`crate::Plugin::variable`] for.
pub fn dynamic_variable(name: &str) -> Result<(), RegistryError> {
    registry::declare_variable(name, &VariableSource::Dynamic)
}

/// A fixed tool set, stored by the host: it costs nothing per assembly.
pub fn tools(schemas: Vec<ToolSchema>) -> Result<(), RegistryError> {
    registry::declare_tools(&ToolSource::Fixed(ToolSet::new(schemas)))
}

/// A fixed tool set with explicit known names (see [`ToolSet::with_known_names`]).
pub fn tool_set(set: ToolSet) -> Result<(), RegistryError> {
    registry::declare_tools(&ToolSource::Fixed(set))
}

/// A tool provider whose tools the host asks [`crate::Plugin::tools`] for, under `key`.
pub fn dynamic_tools(key: &str) -> Result<(), RegistryError> {
    registry::declare_tools(&ToolSource::Dynamic(key.to_owned()))
}

/// Suppress runtime contexts for this scope and its descendants while the plugin lives.
pub fn suppress_runtime_context() -> Result<(), RegistryError> {
    registry::suppress_runtime_context()
}

/// An assembly listener with default placement (appended; receives its scope's assemblies
/// and its descendants'). The host calls [`crate::Plugin::on_assemble`] with `key`.
pub fn listener(key: &str) -> Result<(), RegistryError> {
    listener_with(key, false, false)
}

/// An assembly listener placed explicitly: `prepend` runs it before every listener
/// registered without it; `global` makes it receive every assembly whatever its scope.
pub fn listener_with(key: &str, prepend: bool, global: bool) -> Result<(), RegistryError> {
    registry::declare_listener(key, ListenerOptions { prepend, global })
}
