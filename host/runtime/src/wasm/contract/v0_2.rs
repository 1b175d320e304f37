//! Contract 0.2.0: `contributor@0.2.0` may answer "unchanged", and plugins import
//! `control` (is the running call cancelled?). Its other imports are 0.1.0's, served by the
//! same host code.

use wasmtime::component::Resource;
use wasmtime::Store;

use super::{Answer, Wr};
use crate::wasm::bindings::instruction_provider::exports::prompt_host::plugin::instructions::McpServer;
use crate::wasm::bindings::instruction_provider_v2::exports::prompt_host::plugin0_1_0::instructions;
use crate::wasm::bindings::instruction_provider_v2::InstructionProvider;
use crate::wasm::bindings::plugin::prompt_host::plugin::types::{AssembleContext, ToolSet};
use crate::wasm::bindings::plugin_v2::prompt_host::plugin0_2_0::control;
use crate::wasm::bindings::plugin_v2::Plugin;
use crate::wasm::state::HostState;
use crate::wasm::AssemblyHandle;

/// A 0.2.0 instance's exports, by world.
pub(crate) enum Exports {
    Plugin(Plugin),
    Instructions(InstructionProvider),
}

macro_rules! contributor {
    ($self:expr, |$g:ident| $call:expr) => {
        match $self {
            Exports::Plugin(p) => {
                let $g = p.prompt_host_plugin0_2_0_contributor();
                $call
            }
            Exports::Instructions(p) => {
                let $g = p.prompt_host_plugin0_2_0_contributor();
                $call
            }
        }
    };
}

/// Call an answering export: each world's bindings have answer types of their own (same
/// shape), turned into [`Answer`] inside each arm.
macro_rules! answer {
    ($self:expr, |$g:ident| $call:expr) => {
        contributor!($self, |$g| $call.map(|r| r.map(IntoAnswer::into_answer)))
    };
}

/// A generated answer variant, as an [`Answer`].
trait IntoAnswer<T> {
    fn into_answer(self) -> Answer<T>;
}

/// Implement [`IntoAnswer`] for the answer types of one world's bindings.
macro_rules! answers {
    ($m:path) => {
        const _: () = {
            use $m as c;
            impl IntoAnswer<String> for c::TextAnswer {
                fn into_answer(self) -> Answer<String> {
                    match self {
                        c::TextAnswer::Text(t) => Answer::Value(t),
                        c::TextAnswer::Unchanged => Answer::Unchanged,
                    }
                }
            }
            impl IntoAnswer<Option<String>> for c::ValueAnswer {
                fn into_answer(self) -> Answer<Option<String>> {
                    match self {
                        c::ValueAnswer::Value(v) => Answer::Value(v),
                        c::ValueAnswer::Unchanged => Answer::Unchanged,
                    }
                }
            }
            impl IntoAnswer<ToolSet> for c::ToolsAnswer {
                fn into_answer(self) -> Answer<ToolSet> {
                    match self {
                        c::ToolsAnswer::Tools(set) => Answer::Value(set),
                        c::ToolsAnswer::Unchanged => Answer::Unchanged,
                    }
                }
            }
        };
    };
}

answers!(crate::wasm::bindings::plugin_v2::exports::prompt_host::plugin0_2_0::contributor);
answers!(
    crate::wasm::bindings::instruction_provider_v2::exports::prompt_host::plugin0_2_0::contributor
);

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
        answer!(self, |g| g.call_section_text(s, name, ctx))
    }

    pub(super) fn context_text(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        answer!(self, |g| g.call_context_text(s, name, ctx))
    }

    pub(super) fn variable(
        &self,
        s: &mut Store<HostState>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<Option<String>>> {
        answer!(self, |g| g.call_variable(s, name, ctx))
    }

    pub(super) fn tools(
        &self,
        s: &mut Store<HostState>,
        key: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<ToolSet>> {
        answer!(self, |g| g.call_tools(s, key, ctx))
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
            Exports::Instructions(ip) => ip
                .prompt_host_plugin0_1_0_instructions()
                .call_publish(s, &mcp_server(server)),
            Exports::Plugin(_) => Err(wasmtime::Error::msg("publish on a plugin-world instance")),
        }
    }
}

/// The same record, in the 0.2.0 world's own bindings of `instructions@0.1.0`.
fn mcp_server(server: &McpServer) -> instructions::McpServer {
    instructions::McpServer {
        name: server.name.clone(),
        instructions: server.instructions.clone(),
        tools: server
            .tools
            .iter()
            .map(|t| instructions::McpTool {
                name: t.name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
            })
            .collect(),
    }
}

impl control::Host for HostState {
    fn cancelled(&mut self) -> wasmtime::Result<bool> {
        Ok(self.signal.as_ref().is_some_and(|s| s.is_cancelled()))
    }

    fn keep_until_context_changes(&mut self) -> wasmtime::Result<()> {
        // Read by the dynamic-entry providers after the call; other calls ignore it.
        self.keep_answer = true;
        Ok(())
    }
}
