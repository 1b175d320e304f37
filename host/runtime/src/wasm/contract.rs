//! The plugin contract as the runtime sees it, whatever version a component was built against.
//!
//! Each version owns its `bindgen!`, its pre-instantiation and its exports ([`v0_1`],
//! [`v0_2`]; the generated bindings stay private to them). 0.3.0 ([`v0_3`]) adds an import
//! only: its components export 0.2.0's `contributor` and are called through [`v0_2`]. The rest of the runtime names
//! only what is here: the [`World`] and [`WitVersion`] a component implements ([`detect`]),
//! its [`Pre`], the [`Bindings`] of an instance, and a dynamic entry's [`Answer`]. The host
//! imports implement the WIT interfaces through [`wit`], which 0.2.0 shares with 0.1.0.

mod skills;
mod types;
mod v0_1;
mod v0_2;
mod v0_3;

use wasmtime::component::{HasSelf, InstancePre, Linker, Resource};
use wasmtime::Store;

use super::failure::CallFailure;
use super::store::StoreData;
use crate::prompt::ProviderErrorKind;

pub(crate) use types::{detect, Answer, AssemblyHandle};
pub use types::{ServerInstructions, ServerSkill, ServerTool, WitVersion, World};
pub(crate) use v0_1::Wr;

/// The WIT interfaces the host implements (0.2.0 imports 0.1.0's, plus `control`; 0.3.0
/// adds `freshness`).
pub(crate) mod wit {
    pub(crate) use super::v0_1::bindings::plugin::prompt_host::plugin::{
        assembly, log, registry, types,
    };
    pub(crate) use super::v0_2::bindings::plugin::prompt_host::plugin0_2_0::control;
    pub(crate) use super::v0_3::bindings::prompt_host::plugin0_3_0::freshness;
}

use wit::types::{AssembleContext, PluginError, ToolSet};

/// The pre-instantiation of a component, by contract version (and, inside, by world).
pub(crate) enum Pre {
    V0_1(v0_1::Pre),
    V0_2(v0_2::Pre),
}

impl Pre {
    /// The pre-instantiation of a component of `world` and `version`.
    pub(crate) fn new(
        world: World,
        version: WitVersion,
        pre: InstancePre<StoreData>,
    ) -> wasmtime::Result<Self> {
        Ok(match version {
            WitVersion::V0_1_0 => Self::V0_1(v0_1::Pre::new(world, pre)?),
            // 0.3.0 exports 0.2.0's `contributor`: the same pre-instantiation.
            WitVersion::V0_2_0 | WitVersion::V0_3_0 => Self::V0_2(v0_2::Pre::new(world, pre)?),
        })
    }
}

/// Link the plugin imports of every contract version (0.2.0 adds `control` to 0.1.0's,
/// 0.3.0 adds `freshness`).
pub(crate) fn add_to_linker(linker: &mut Linker<StoreData>) -> wasmtime::Result<()> {
    v0_1::bindings::plugin::Plugin::add_to_linker::<StoreData, HasSelf<StoreData>>(linker, |s| s)?;
    wit::control::add_to_linker::<StoreData, HasSelf<StoreData>>(linker, |s| s)?;
    wit::freshness::add_to_linker::<StoreData, HasSelf<StoreData>>(linker, |s| s)
}

/// The `err` case of a WIT result, classified.
pub(crate) fn plugin_error(e: PluginError) -> CallFailure {
    match e {
        PluginError::InvalidInput(m) => CallFailure {
            kind: ProviderErrorKind::InvalidInput,
            message: format!("invalid input: {}", super::names::escape(&m)),
        },
        PluginError::Failed(m) => CallFailure {
            kind: ProviderErrorKind::Failed,
            message: format!("failed: {}", super::names::escape(&m)),
        },
    }
}

/// The export bindings of one instance, by contract version and world.
pub(crate) enum Bindings {
    V0_1(v0_1::Exports),
    V0_2(v0_2::Exports),
}

impl Bindings {
    /// Instantiate `pre` in `store`.
    pub(crate) fn instantiate(pre: &Pre, store: &mut Store<StoreData>) -> wasmtime::Result<Self> {
        Ok(match pre {
            Pre::V0_1(pre) => Self::V0_1(pre.instantiate(store)?),
            Pre::V0_2(pre) => Self::V0_2(pre.instantiate(store)?),
        })
    }

    /// The contract version of the instance's exports (0.2.0 for a 0.3.0 component, whose
    /// exports are 0.2.0's).
    pub(crate) fn version(&self) -> WitVersion {
        match self {
            Self::V0_1(_) => WitVersion::V0_1_0,
            Self::V0_2(_) => WitVersion::V0_2_0,
        }
    }

    pub(crate) fn init(&self, s: &mut Store<StoreData>, config: &str) -> Wr<()> {
        match self {
            Self::V0_1(e) => e.init(s, config),
            Self::V0_2(e) => e.init(s, config),
        }
    }

    pub(crate) fn section_text(
        &self,
        s: &mut Store<StoreData>,
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
        s: &mut Store<StoreData>,
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
        s: &mut Store<StoreData>,
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
        s: &mut Store<StoreData>,
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
        s: &mut Store<StoreData>,
        key: &str,
        handle: Resource<AssemblyHandle>,
        ctx: Option<&AssembleContext>,
    ) -> Wr<()> {
        match self {
            Self::V0_1(e) => e.on_assemble(s, key, handle, ctx),
            Self::V0_2(e) => e.on_assemble(s, key, handle, ctx),
        }
    }

    /// `instructions.publish` (`skills.publish-with-skills` when the instance exports it); a
    /// trap-like error for a plugin-world instance.
    pub(crate) fn publish(&self, s: &mut Store<StoreData>, server: &ServerInstructions) -> Wr<()> {
        match self {
            Self::V0_1(e) => e.publish(s, server),
            Self::V0_2(e) => e.publish(s, server),
        }
    }
}
