//! Contract 0.1.0: `contributor@0.1.0` always answers with a value. Its bindings are the
//! WIT interfaces the host implements for every version (see [`super::wit`]).

use wasmtime::component::{InstancePre, Resource};
use wasmtime::Store;

use super::skills::{export as skills, skills_indices};
use super::types::{Answer, AssemblyHandle, ServerInstructions, World};
use crate::wasm::store::StoreData;
use bindings::instruction_provider::exports::prompt_host::plugin::instructions;
use bindings::instruction_provider::{InstructionProvider, InstructionProviderPre};
use bindings::plugin::prompt_host::plugin::types::{AssembleContext, PluginError, ToolSet};
use bindings::plugin::{Plugin, PluginPre};

/// What one export call returned: `wasmtime`'s error is a trap, the inner one the plugin's.
pub(crate) type Wr<T> = wasmtime::Result<Result<T, PluginError>>;

/// Host bindings generated from `wit/0.1.0` (and nothing else).
pub mod bindings {
    /// The `plugin` world of 0.1.0: every prompt contributor.
    pub mod plugin {
        wasmtime::component::bindgen!({
            world: "prompt-host:plugin/plugin@0.1.0",
            path: "../../wit/0.1.0",
            with: {
                "prompt-host:plugin/assembly.assembly": crate::wasm::contract::types::AssemblyHandle,
            },
            imports: { default: trappable },
        });
    }

    /// The `instruction-provider` world of 0.1.0: a plugin that also publishes MCP server
    /// instructions.
    pub mod instruction_provider {
        wasmtime::component::bindgen!({
            world: "prompt-host:plugin/instruction-provider@0.1.0",
            path: "../../wit/0.1.0",
            with: {
                "prompt-host:plugin/types": super::plugin::prompt_host::plugin::types,
                "prompt-host:plugin/log": super::plugin::prompt_host::plugin::log,
                "prompt-host:plugin/registry": super::plugin::prompt_host::plugin::registry,
                "prompt-host:plugin/assembly": super::plugin::prompt_host::plugin::assembly,
                "prompt-host:plugin/contributor": super::plugin::exports::prompt_host::plugin::contributor,
            },
            imports: { default: trappable },
        });
    }
}

/// A 0.1.0 component's pre-instantiation, by world.
pub(crate) enum Pre {
    Plugin(PluginPre<StoreData>),
    /// With the indices of its `skills` export (0.3.0's), when it has one.
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

/// `skills.receive-skills` with `server`'s index, its refusal as a `plugin-error` of these
/// bindings (which 0.2.0 shares).
pub(super) fn receive_skills(
    skills: &skills::Guest,
    s: &mut Store<StoreData>,
    server: &ServerInstructions,
) -> Wr<()> {
    use super::skills::Refusal;
    Ok(
        super::skills::receive_skills(skills, s, server)?.map_err(|refusal| match refusal {
            Refusal::InvalidInput(m) => PluginError::InvalidInput(m),
            Refusal::Failed(m) => PluginError::Failed(m),
        }),
    )
}

/// The record `publish` takes.
fn wit_server(server: &ServerInstructions) -> instructions::McpServer {
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

/// A 0.1.0 instance's exports, by world.
pub(crate) enum Exports {
    Plugin(Plugin),
    Instructions(InstructionProvider, Option<skills::Guest>),
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
            Exports::Instructions(p, _) => {
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
    pub(super) fn init(&self, s: &mut Store<StoreData>, config: &str) -> Wr<()> {
        contributor!(self, |g| g.call_init(s, config))
    }

    pub(super) fn section_text(
        &self,
        s: &mut Store<StoreData>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        value(contributor!(self, |g| g.call_section_text(s, name, ctx)))
    }

    pub(super) fn context_text(
        &self,
        s: &mut Store<StoreData>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<String>> {
        value(contributor!(self, |g| g.call_context_text(s, name, ctx)))
    }

    pub(super) fn variable(
        &self,
        s: &mut Store<StoreData>,
        name: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<Option<String>>> {
        value(contributor!(self, |g| g.call_variable(s, name, ctx)))
    }

    pub(super) fn tools(
        &self,
        s: &mut Store<StoreData>,
        key: &str,
        ctx: Option<&AssembleContext>,
    ) -> Wr<Answer<ToolSet>> {
        value(contributor!(self, |g| g.call_tools(s, key, ctx)))
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
                ip.prompt_host_plugin_instructions()
                    .call_publish(s, &wit_server(server))
            }
            Exports::Plugin(_) => Err(wasmtime::Error::msg("publish on a plugin-world instance")),
        }
    }
}
