//! Contract 0.3.0: 0.2.0's world plus the `freshness` import (an answer reused for a time the
//! plugin names). Its exports are 0.2.0's `contributor` (and 0.1.0's `instructions`), so a
//! 0.3.0 component is pre-instantiated and called through [`super::v0_2`]; only the import
//! is generated here (the `skills` export, which any version may add, is [`super::skills`]).

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
