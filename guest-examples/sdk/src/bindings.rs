//! The one place where `wit_bindgen::generate!` runs. Everything else in the SDK (and every
//! plugin) uses these types, so a plugin never sees two copies of `Assembly` or `PluginError`.
//!
//! The contract version: a plugin is built against `prompt-host:plugin@0.3.0`'s world unless
//! the cargo feature `wit-0-1` asks for `@0.1.0` (a feature, so it wins when unified: a build
//! where any crate needs 0.1.0 is all 0.1.0). 0.3.0 is 0.2.0 plus one import, `freshness`,
//! and a component imports only what its code calls: a plugin that never calls
//! [`crate::keep_for`] is a 0.2.0 component. Plugin code is the same for every version;
//! [`api`] names the interfaces whatever the version (0.2.0 imports 0.1.0's `types`, `log`,
//! `registry` and `assembly` unchanged, and 0.3.0 0.2.0's `control` and `contributor`).
//!
//! Two invocations per version, because a component must export exactly what it implements:
//!
//! * `plugin` generates the whole `plugin` world (imports; the `contributor` export).
//! * `instructions` generates only the `instructions` export, reusing the `types` interface
//!   from `plugin`. A plugin that invokes both export macros is, structurally, the
//!   `instruction-provider` world (`include plugin; export instructions;`).
//!
//! Generating `instruction-provider` directly would also generate a second `contributor`
//! export macro: `#[macro_export]` puts both at the crate root, where their names collide.
//!
//! `pub_export_macro` makes each world's custom section describe imports only; the export
//! macro, expanded in the plugin crate, carries the exports. That is what lets a plain plugin
//! link this crate without having to implement `instructions#publish`.

/// Bindings of the `plugin` world: every import, and the `contributor` export.
#[cfg(feature = "wit-0-1")]
#[allow(missing_docs)]
pub mod plugin {
    wit_bindgen::generate!({
        world: "prompt-host:plugin/plugin@0.1.0",
        path: "wit/0.1.0",
        pub_export_macro: true,
        export_macro_name: "__export_plugin_world",
        default_bindings_module: "$crate::bindings::plugin",
        additional_derives: [PartialEq],
    });
}

/// Bindings of the `plugin` world: every import, and the `contributor` export.
#[cfg(not(feature = "wit-0-1"))]
#[allow(missing_docs)]
pub mod plugin {
    wit_bindgen::generate!({
        world: "prompt-host:plugin/plugin@0.3.0",
        path: ["wit/0.1.0", "wit/0.2.0", "wit/0.3.0"],
        // 0.3.0 imports 0.1.0's and 0.2.0's interfaces: generate them here too.
        generate_all,
        pub_export_macro: true,
        export_macro_name: "__export_plugin_world",
        default_bindings_module: "$crate::bindings::plugin",
        additional_derives: [PartialEq],
    });
}

/// The interfaces by role, whatever the contract version.
#[allow(missing_docs)]
pub mod api {
    #[cfg(feature = "wit-0-1")]
    pub use super::plugin::exports::prompt_host::plugin::contributor;
    #[cfg(feature = "wit-0-1")]
    pub use super::plugin::prompt_host::plugin::{assembly, log, registry, types};

    #[cfg(not(feature = "wit-0-1"))]
    pub use super::plugin::exports::prompt_host::plugin0_2_0::contributor;
    #[cfg(not(feature = "wit-0-1"))]
    pub use super::plugin::prompt_host::plugin0_1_0::{assembly, log, registry, types};
    #[cfg(not(feature = "wit-0-1"))]
    pub use super::plugin::prompt_host::plugin0_2_0::control;
    #[cfg(not(feature = "wit-0-1"))]
    pub use super::plugin::prompt_host::plugin0_3_0::freshness;

    #[cfg(feature = "wit-0-1")]
    pub use super::instructions::exports::prompt_host::plugin::instructions;
    #[cfg(not(feature = "wit-0-1"))]
    pub use super::instructions::exports::prompt_host::plugin0_1_0::instructions;
    pub use super::skills::exports::prompt_host::plugin0_3_0::skills;
}

/// Bindings of the `skills` export alone (contract 0.3.0), for instruction providers that
/// also receive a server's skills index. It uses nothing but 0.1.0's `types`, so a provider
/// of any contract version may add it.
#[allow(missing_docs)]
pub mod skills {
    wit_bindgen::generate!({
        inline: "
            package prompt-plugin:sdk;

            world skills-export {
                export prompt-host:plugin/skills@0.3.0;
            }
        ",
        path: ["wit/0.1.0", "wit/0.2.0", "wit/0.3.0"],
        pub_export_macro: true,
        export_macro_name: "__export_skills_world",
        default_bindings_module: "$crate::bindings::skills",
        additional_derives: [PartialEq],
        with: {
            "prompt-host:plugin/types@0.1.0": crate::bindings::api::types,
        },
    });
}

/// Bindings of the `instructions` export alone, for instruction providers.
#[allow(missing_docs)]
pub mod instructions {
    #[cfg(feature = "wit-0-1")]
    wit_bindgen::generate!({
        inline: "
            package prompt-plugin:sdk;

            world instructions-export {
                export prompt-host:plugin/instructions@0.1.0;
            }
        ",
        path: "wit/0.1.0",
        pub_export_macro: true,
        export_macro_name: "__export_instructions_world",
        default_bindings_module: "$crate::bindings::instructions",
        additional_derives: [PartialEq],
        with: {
            "prompt-host:plugin/types@0.1.0": crate::bindings::api::types,
        },
    });

    #[cfg(not(feature = "wit-0-1"))]
    wit_bindgen::generate!({
        inline: "
            package prompt-plugin:sdk;

            world instructions-export {
                export prompt-host:plugin/instructions@0.1.0;
            }
        ",
        path: ["wit/0.1.0", "wit/0.2.0", "wit/0.3.0"],
        pub_export_macro: true,
        export_macro_name: "__export_instructions_world",
        default_bindings_module: "$crate::bindings::instructions",
        additional_derives: [PartialEq],
        with: {
            "prompt-host:plugin/types@0.1.0": crate::bindings::api::types,
        },
    });
}
