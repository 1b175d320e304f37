//! Contract 0.1.0: `contributor@0.1.0` always answers with a value.

use wasmtime::component::Resource;
use wasmtime::Store;

use super::{Answer, Wr};
use crate::wasm::bindings::instruction_provider::exports::prompt_host::plugin::instructions::McpServer;
use crate::wasm::bindings::instruction_provider::InstructionProvider;
use crate::wasm::bindings::plugin::prompt_host::plugin::types::{AssembleContext, ToolSet};
use crate::wasm::bindings::plugin::Plugin;
use crate::wasm::state::HostState;
use crate::wasm::AssemblyHandle;

/// A 0.1.0 instance's exports, by world.
pub(crate) enum Exports {
    Plugin(Plugin),
    Instructions(InstructionProvider),
}

/// Call the same `contributor` export whatever the world (bindgen gives each world its own
/// export struct, with identical signatures).
macro_rules! contributor {
    ($self:expr, |$g:ident| $call:expr) => {
        match $self {
            Exports::Plugin(p) => {
                let $g = p.prompt_host_plugin_contributor();
                $call
            }
            Exports::Instructions(p) => {
                let $g = p.prompt_host_plugin_contributor();
                $call
            }
        }
    };
}

fn value<T>(r: Wr<T>) -> Wr<Answer<T>> {
    r.map(|inner| inner.map(Answer::Value))
}

impl Exports {
    pub(super) fn init(&self, s: &mut Store<HostState>, config: &str) -> Wr<()> {
        contributor!(self, |g| g.call_init(s, config))
    }

    pub(super) fn section_text(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        value(contributor!(self, |g| g.call_section_text(s, name, ctx)))
    }

    pub(super) fn context_text(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        value(contributor!(self, |g| g.call_context_text(s, name, ctx)))
    }

    pub(super) fn variable(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<Option<String>>> {
        value(contributor!(self, |g| g.call_variable(s, name, ctx)))
    }

    pub(super) fn tools(
        &self,
        s: &mut Store<HostState>,
        key: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<ToolSet>> {
        value(contributor!(self, |g| g.call_tools(s, key, ctx)))
    }

    pub(super) fn on_assemble(
        &self,
        s: &mut Store<HostState>,
        key: &str,
        handle: Resource<AssemblyHandle>,
        ctx: Option<&AssembleContext>,
    ) -> Wr<()> {
        contributor!(self, |g| g.call_on_assemble(s, key, handle, ctx))
    }

    pub(super) fn publish(&self, s: &mut Store<HostState>, server: &McpServer) -> Wr<()> {
        match self {
            Exports::Instructions(ip) => {
                ip.prompt_host_plugin_instructions().call_publish(s, server)
            }
            Exports::Plugin(_) => Err(wasmtime::Error::msg("publish on a plugin-world instance")),
        }
    }
}
