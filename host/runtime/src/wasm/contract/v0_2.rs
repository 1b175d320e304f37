//! Contract 0.2.0: `contributor@0.2.0` may answer "unchanged", and plugins import
//! `control` (is the running call cancelled?). Its other imports are 0.1.0's, served by the
//! same host code.

use wasmtime::component::{InstancePre, Resource};
use wasmtime::Store;

use super::skills::{export as skills, skills_indices};
use super::types::{Answer, AssemblyHandle, ServerInstructions, World};
use super::v0_1::bindings::plugin::prompt_host::plugin::types::{AssembleContext, ToolSet};
use super::v0_1::receive_skills;
use super::v0_1::Wr;
use crate::wasm::store::StoreData;
use bindings::instruction_provider::exports::prompt_host::plugin0_1_0::instructions;
use bindings::instruction_provider::{InstructionProvider, InstructionProviderPre};
use bindings::plugin::{Plugin, PluginPre};

/// Host bindings generated from `wit/0.2.0` (mapped onto 0.1.0's for the interfaces it
/// imports unchanged: one host implementation serves both).
pub mod bindings {
    /// The `plugin` world of 0.2.0: `contributor@0.2.0` (answers may be "unchanged") and the
    /// `control` import.
    pub mod plugin {
        wasmtime::component::bindgen!({
            world: "prompt-host:plugin/plugin@0.2.0",
            path: ["../../wit/0.1.0", "../../wit/0.2.0"],
            with: {
                "prompt-host:plugin/types@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::types,
                "prompt-host:plugin/log@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::log,
                "prompt-host:plugin/registry@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::registry,
                "prompt-host:plugin/assembly@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::assembly,
            },
            imports: { default: trappable },
        });
    }

    /// The `instruction-provider` world of 0.2.0.
    pub mod instruction_provider {
        wasmtime::component::bindgen!({
            world: "prompt-host:plugin/instruction-provider@0.2.0",
            path: ["../../wit/0.1.0", "../../wit/0.2.0"],
            with: {
                "prompt-host:plugin/types@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::types,
                "prompt-host:plugin/log@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::log,
                "prompt-host:plugin/registry@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::registry,
                "prompt-host:plugin/assembly@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::assembly,
                "prompt-host:plugin/control@0.2.0": super::plugin::prompt_host::plugin0_2_0::control,
                "prompt-host:plugin/contributor@0.2.0": super::plugin::exports::prompt_host::plugin0_2_0::contributor,
                "prompt-host:plugin/instructions@0.1.0": crate::wasm::contract::v0_1::bindings::instruction_provider::exports::prompt_host::plugin::instructions,
            },
            imports: { default: trappable },
        });
    }
}

/// A 0.2.0 component's pre-instantiation, by world; an instruction provider's with the
/// indices of its `skills` export when it has one.
pub(crate) enum Pre {
    Plugin(PluginPre<StoreData>),
    Instructions(
        InstructionProviderPre<StoreData>,
        Option<skills::GuestIndices>,
    ),
}

impl Pre {
    pub(super) fn new(world: World, pre: InstancePre<StoreData>) -> wasmtime::Result<Self> {
        Ok(match world {
            World::Plugin => Self::Plugin(PluginPre::new(pre)?),
            World::InstructionProvider => {
                let skills = skills_indices(&pre)?;
                Self::Instructions(InstructionProviderPre::new(pre)?, skills)
            }
        })
    }

    pub(super) fn instantiate(&self, store: &mut Store<StoreData>) -> wasmtime::Result<Exports> {
        Ok(match self {
            Self::Plugin(pre) => Exports::Plugin(pre.instantiate(store)?),
            Self::Instructions(pre, None) => Exports::Instructions(pre.instantiate(store)?, None),
            Self::Instructions(pre, Some(indices)) => {
                let instance = pre.instance_pre().instantiate(&mut *store)?;
                let provider = InstructionProvider::new(&mut *store, &instance)?;
                let skills = indices.load(&mut *store, &instance)?;
                Exports::Instructions(provider, Some(skills))
            }
        })
    }
}

/// A 0.2.0 instance's exports, by world (an instruction provider's with its `skills`).
pub(crate) enum Exports {
    Plugin(Plugin),
    Instructions(InstructionProvider, Option<skills::Guest>),
}

macro_rules! contributor {
    ($self:expr, |$g:ident| $call:expr) => {
        match $self {
            Exports::Plugin(p) => {
                let $g = p.prompt_host_plugin0_2_0_contributor();
                $call
            }
            Exports::Instructions(p, _) => {
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

answers!(bindings::plugin::exports::prompt_host::plugin0_2_0::contributor);
answers!(bindings::instruction_provider::exports::prompt_host::plugin0_2_0::contributor);

impl Exports {
    pub(super) fn init(&self, s: &mut Store<StoreData>, config: &str) -> Wr<()> {
        contributor!(self, |g| g.call_init(s, config))
    }

    pub(super) fn section_text(
        &self,
        s: &mut Store<StoreData>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        answer!(self, |g| g.call_section_text(s, name, ctx))
    }

    pub(super) fn context_text(
        &self,
        s: &mut Store<StoreData>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        answer!(self, |g| g.call_context_text(s, name, ctx))
    }

    pub(super) fn variable(
        &self,
        s: &mut Store<StoreData>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<Option<String>>> {
        answer!(self, |g| g.call_variable(s, name, ctx))
    }

    pub(super) fn tools(
        &self,
        s: &mut Store<StoreData>,
        key: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<ToolSet>> {
        answer!(self, |g| g.call_tools(s, key, ctx))
    }

    pub(super) fn on_assemble(
        &self,
        s: &mut Store<StoreData>,
        key: &str,
        handle: Resource<AssemblyHandle>,
        ctx: Option<&AssembleContext>,
    ) -> Wr<()> {
        contributor!(self, |g| g.call_on_assemble(s, key, handle, ctx))
    }

    pub(super) fn publish(&self, s: &mut Store<StoreData>, server: &ServerInstructions) -> Wr<()> {
        match self {
            Exports::Instructions(ip, skills) => {
                // Both in one call window: one generation, refused if either refuses.
                if let Some(skills) = skills {
                    if let Err(refused) = receive_skills(skills, &mut *s, server)? {
                        return Ok(Err(refused));
                    }
                }
                ip.prompt_host_plugin0_1_0_instructions()
                    .call_publish(s, &mcp_server(server))
            }
            Exports::Plugin(_) => Err(wasmtime::Error::msg("publish on a plugin-world instance")),
        }
    }
}

/// The record `publish` takes, in the 0.2.0 world's own bindings of `instructions@0.1.0`.
fn mcp_server(server: &ServerInstructions) -> instructions::McpServer {
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
