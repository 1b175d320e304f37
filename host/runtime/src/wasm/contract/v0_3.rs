//! Contract 0.3.0: 0.2.0's world plus the `freshness` import (an answer reused for a time the
//! plugin names). Its exports are 0.2.0's `contributor` (and 0.1.0's `instructions`), so a
//! 0.3.0 component is pre-instantiated and called through [`super::v0_2`]; only the import
//! and the `skills` export (a provider's skills index) are generated here.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::types::ServerInstructions;
use super::v0_1::Wr;
use crate::wasm::store::StoreData;

/// Host bindings generated from `wit/0.3.0`, mapped onto 0.1.0's and 0.2.0's for every
/// interface it shares with them: only `freshness` is new.
pub mod bindings {
    wasmtime::component::bindgen!({
        world: "prompt-host:plugin/plugin@0.3.0",
        path: ["../../wit/0.1.0", "../../wit/0.2.0", "../../wit/0.3.0"],
        with: {
            "prompt-host:plugin/types@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::types,
            "prompt-host:plugin/log@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::log,
            "prompt-host:plugin/registry@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::registry,
            "prompt-host:plugin/assembly@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::assembly,
            "prompt-host:plugin/control@0.2.0": crate::wasm::contract::v0_2::bindings::plugin::prompt_host::plugin0_2_0::control,
            "prompt-host:plugin/contributor@0.2.0": crate::wasm::contract::v0_2::bindings::plugin::exports::prompt_host::plugin0_2_0::contributor,
        },
        imports: { default: trappable },
    });
}

/// The `skills-provider` world of 0.3.0: an instruction provider that also exports `skills`.
/// Only `skills` is generated; every other interface maps onto the bindings above.
pub mod skills_provider {
    wasmtime::component::bindgen!({
        world: "prompt-host:plugin/skills-provider@0.3.0",
        path: ["../../wit/0.1.0", "../../wit/0.2.0", "../../wit/0.3.0"],
        with: {
            "prompt-host:plugin/types@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::types,
            "prompt-host:plugin/log@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::log,
            "prompt-host:plugin/registry@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::registry,
            "prompt-host:plugin/assembly@0.1.0": crate::wasm::contract::v0_1::bindings::plugin::prompt_host::plugin::assembly,
            "prompt-host:plugin/control@0.2.0": crate::wasm::contract::v0_2::bindings::plugin::prompt_host::plugin0_2_0::control,
            "prompt-host:plugin/contributor@0.2.0": crate::wasm::contract::v0_2::bindings::plugin::exports::prompt_host::plugin0_2_0::contributor,
            "prompt-host:plugin/instructions@0.1.0": crate::wasm::contract::v0_1::bindings::instruction_provider::exports::prompt_host::plugin::instructions,
            "prompt-host:plugin/freshness@0.3.0": super::bindings::prompt_host::plugin0_3_0::freshness,
        },
        imports: { default: trappable },
    });
}

/// The `skills` export of an instance, when its component has one.
pub(crate) use skills_provider::exports::prompt_host::plugin0_3_0::skills;

/// The name of the `skills` export. An instruction provider of any contract version may add
/// it (it uses nothing but 0.1.0's `types`).
const SKILLS_EXPORT: &str = "prompt-host:plugin/skills@0.3.0";

/// The indices of the component's `skills` export, `None` without one. Exported with the
/// wrong shape, it fails the load rather than being ignored.
pub(super) fn skills_indices(
    pre: &InstancePre<StoreData>,
) -> wasmtime::Result<Option<skills::GuestIndices>> {
    match pre.component().get_export_index(None, SKILLS_EXPORT) {
        Some(_) => Ok(Some(skills::GuestIndices::new(pre)?)),
        None => Ok(None),
    }
}

/// `skills.receive-skills` with `server`'s index: the call that precedes `publish`.
pub(super) fn receive_skills(
    skills: &skills::Guest,
    s: &mut Store<StoreData>,
    server: &ServerInstructions,
) -> Wr<()> {
    let index: Vec<skills::McpSkill> = server
        .skills
        .iter()
        .map(|k| skills::McpSkill {
            uri: k.uri.clone(),
            name: k.name.clone(),
            description: k.description.clone(),
            digest: k.digest.clone(),
            files: k.files,
            size: k.size,
        })
        .collect();
    skills.call_receive_skills(s, &server.name, &index)
}
