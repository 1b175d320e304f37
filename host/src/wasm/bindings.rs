//! Host bindings generated from `wit/` (and nothing else).

/// The `plugin` world: every prompt contributor.
pub mod plugin {
    wasmtime::component::bindgen!({
        world: "plugin",
        path: "../wit",
        with: {
            "prompt-host:plugin/assembly.assembly": crate::wasm::AssemblyHandle,
        },
        imports: { default: trappable },
    });
}

/// The `instruction-provider` world: a plugin that also publishes MCP server instructions.
pub mod instruction_provider {
    wasmtime::component::bindgen!({
        world: "instruction-provider",
        path: "../wit",
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
