//! The `skills` export of contract 0.3.0: an instruction provider receives each server's
//! skills index (the MCP Skills extension) right before its `publish`. It uses nothing but
//! 0.1.0's `types`, so a provider of any contract version may add it; [`super::v0_1`] and
//! [`super::v0_2`] call it when the component has it.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::types::ServerInstructions;
use crate::wasm::store::StoreData;

/// The `skills` export alone. Its types (0.1.0's `plugin-error`) are generated here too,
/// not mapped onto [`super::v0_1`]'s, so that the versions that call it do not form an
/// import circle with it; [`Refusal`] carries a refusal across.
pub mod skills_provider {
    wasmtime::component::bindgen!({
        inline: "
            package prompt-host:host-skills;

            world skills-export {
                export prompt-host:plugin/skills@0.3.0;
            }
        ",
        path: ["../../wit/0.1.0", "../../wit/0.2.0", "../../wit/0.3.0"],
    });
}

/// The `skills` export of an instance, when its component has one.
pub(crate) use skills_provider::exports::prompt_host::plugin0_3_0::skills as export;

/// The name of the `skills` export. An instruction provider of any contract version may add
/// it (it uses nothing but 0.1.0's `types`).
const SKILLS_EXPORT: &str = "prompt-host:plugin/skills@0.3.0";

/// The indices of the component's `skills` export, `None` without one. Exported with the
/// wrong shape, it fails the load rather than being ignored.
pub(super) fn skills_indices(
    pre: &InstancePre<StoreData>,
) -> wasmtime::Result<Option<export::GuestIndices>> {
    match pre.component().get_export_index(None, SKILLS_EXPORT) {
        Some(_) => Ok(Some(export::GuestIndices::new(pre)?)),
        None => Ok(None),
    }
}

/// `skills.receive-skills` with `server`'s index: the call that precedes `publish`.
pub(super) fn receive_skills(
    skills: &export::Guest,
    s: &mut Store<StoreData>,
    server: &ServerInstructions,
) -> wasmtime::Result<Result<(), Refusal>> {
    let index: Vec<export::McpSkill> = server
        .skills
        .iter()
        .map(|k| export::McpSkill {
            uri: k.uri.clone(),
            name: k.name.clone(),
            description: k.description.clone(),
            digest: k.digest.clone(),
            files: k.files,
            size: k.size,
        })
        .collect();
    let answer = skills.call_receive_skills(s, &server.name, &index)?;
    Ok(answer.map_err(|e| match e {
        export::PluginError::InvalidInput(m) => Refusal::InvalidInput(m),
        export::PluginError::Failed(m) => Refusal::Failed(m),
    }))
}

/// A plugin's refusal of its skills index: the cases of `plugin-error`, for the caller to
/// put in its own bindings' type.
pub(super) enum Refusal {
    /// `invalid-input`.
    InvalidInput(String),
    /// `failed`.
    Failed(String),
}
