//! The exports of a plugin instance, whatever contract version it was built against. One
//! module per version holds that version's glue (`v0_1`, `v0_2`); the rest of the runtime
//! calls through [`Bindings`] and sees one shape: a dynamic answer is a value or, from
//! 0.2.0 on, "unchanged".

use wasmtime::component::Resource;
use wasmtime::Store;

use super::bindings::instruction_provider::exports::prompt_host::plugin::instructions::McpServer;
use super::bindings::plugin::prompt_host::plugin::types::{AssembleContext, PluginError, ToolSet};
use super::runtime::{Pre, WitVersion};
use super::state::HostState;
use super::AssemblyHandle;

mod v0_1;
mod v0_2;

/// What one export call returned: `wasmtime`'s error is a trap, the inner one the plugin's.
pub(crate) type Wr<T> = wasmtime::Result<Result<T, PluginError>>;

/// A dynamic entry's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer<T> {
    /// The value for this assembly.
    Value(T),
    /// The same value as this instance's previous answer for the entry (0.2.0 only).
    Unchanged,
}

impl<T> Answer<T> {
    /// Bytes the answer hands to the host, by `size` of a value.
    pub(crate) fn bytes(&self, size: impl FnOnce(&T) -> usize) -> usize {
        match self {
            Self::Value(v) => size(v),
            Self::Unchanged => 0,
        }
    }
}

/// The export bindings of one instance, by contract version and world.
pub(crate) enum Bindings {
    V0_1(v0_1::Exports),
    V0_2(v0_2::Exports),
}

impl Bindings {
    /// Instantiate `pre` in `store`.
    pub(crate) fn instantiate(pre: &Pre, store: &mut Store<HostState>) -> wasmtime::Result<Self> {
        Ok(match pre {
            Pre::Plugin(pre) => Self::V0_1(v0_1::Exports::Plugin(pre.instantiate(store)?)),
            Pre::Instructions(pre) => {
                Self::V0_1(v0_1::Exports::Instructions(pre.instantiate(store)?))
            }
            Pre::PluginV2(pre) => Self::V0_2(v0_2::Exports::Plugin(pre.instantiate(store)?)),
            Pre::InstructionsV2(pre) => {
                Self::V0_2(v0_2::Exports::Instructions(pre.instantiate(store)?))
            }
        })
    }

    /// The contract version of the instance.
    pub(crate) fn version(&self) -> WitVersion {
        match self {
            Self::V0_1(_) => WitVersion::V0_1_0,
            Self::V0_2(_) => WitVersion::V0_2_0,
        }
    }

    pub(crate) fn init(&self, s: &mut Store<HostState>, config: &str) -> Wr<()> {
        match self {
            Self::V0_1(e) => e.init(s, config),
            Self::V0_2(e) => e.init(s, config),
        }
    }

    pub(crate) fn section_text(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        match self {
            Self::V0_1(e) => e.section_text(s, name, ctx),
            Self::V0_2(e) => e.section_text(s, name, ctx),
        }
    }

    pub(crate) fn context_text(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        match self {
            Self::V0_1(e) => e.context_text(s, name, ctx),
            Self::V0_2(e) => e.context_text(s, name, ctx),
        }
    }

    pub(crate) fn variable(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<Option<String>>> {
        match self {
            Self::V0_1(e) => e.variable(s, name, ctx),
            Self::V0_2(e) => e.variable(s, name, ctx),
        }
    }

    pub(crate) fn tools(
        &self,
        s: &mut Store<HostState>,
        key: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<ToolSet>> {
        match self {
            Self::V0_1(e) => e.tools(s, key, ctx),
            Self::V0_2(e) => e.tools(s, key, ctx),
        }
    }

    pub(crate) fn on_assemble(
        &self,
        s: &mut Store<HostState>,
        key: &str,
        handle: Resource<AssemblyHandle>,
        ctx: Option<&AssembleContext>,
    ) -> Wr<()> {
        match self {
            Self::V0_1(e) => e.on_assemble(s, key, handle, ctx),
            Self::V0_2(e) => e.on_assemble(s, key, handle, ctx),
        }
    }

    /// `instructions.publish`; a trap-like error for a plugin-world instance.
    pub(crate) fn publish(&self, s: &mut Store<HostState>, server: &McpServer) -> Wr<()> {
        match self {
            Self::V0_1(e) => e.publish(s, server),
            Self::V0_2(e) => e.publish(s, server),
        }
    }
}
