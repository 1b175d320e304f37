//! Host bindings generated from `wit/` (and nothing else): one module per contract version
//! and world. Version 0.2.0 imports the interfaces of 0.1.0 unchanged, so its bindings map
//! them onto the 0.1.0 modules: one host implementation serves both.

/// The `plugin` world of 0.1.0: every prompt contributor.
pub mod plugin {
    wasmtime::component::bindgen!({
        world: "prompt-host:plugin/plugin@0.1.0",
        path: "../../wit/0.1.0",
        with: {
            "prompt-host:plugin/assembly.assembly": crate::wasm::AssemblyHandle,
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

/// The `plugin` world of 0.2.0: `contributor@0.2.0` (answers may be "unchanged") and the
/// `control` import.
pub mod plugin_v2 {
    wasmtime::component::bindgen!({
        world: "prompt-host:plugin/plugin@0.2.0",
        path: ["../../wit/0.1.0", "../../wit/0.2.0"],
        with: {
            "prompt-host:plugin/types@0.1.0": super::plugin::prompt_host::plugin::types,
            "prompt-host:plugin/log@0.1.0": super::plugin::prompt_host::plugin::log,
            "prompt-host:plugin/registry@0.1.0": super::plugin::prompt_host::plugin::registry,
            "prompt-host:plugin/assembly@0.1.0": super::plugin::prompt_host::plugin::assembly,
        },
        imports: { default: trappable },
    });
}

/// The `instruction-provider` world of 0.2.0.
pub mod instruction_provider_v2 {
    wasmtime::component::bindgen!({
        world: "prompt-host:plugin/instruction-provider@0.2.0",
        path: ["../../wit/0.1.0", "../../wit/0.2.0"],
        with: {
            "prompt-host:plugin/types@0.1.0": super::plugin::prompt_host::plugin::types,
            "prompt-host:plugin/log@0.1.0": super::plugin::prompt_host::plugin::log,
            "prompt-host:plugin/registry@0.1.0": super::plugin::prompt_host::plugin::registry,
            "prompt-host:plugin/assembly@0.1.0": super::plugin::prompt_host::plugin::assembly,
            "prompt-host:plugin/control@0.2.0": super::plugin_v2::prompt_host::plugin0_2_0::control,
            "prompt-host:plugin/contributor@0.2.0": super::plugin_v2::exports::prompt_host::plugin0_2_0::contributor,
            "prompt-host:plugin/instructions@0.1.0": super::instruction_provider::exports::prompt_host::plugin::instructions,
        },
        imports: { default: trappable },
    });
}
