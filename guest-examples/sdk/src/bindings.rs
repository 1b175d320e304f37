//! The one place where `wit_bindgen::generate!` runs. Everything else in the SDK (and every
//! plugin) uses these types, so a plugin never sees two copies of `Assembly` or `PluginError`.
//!
//! Two invocations, because a component must export exactly what it implements:
//!
//! * `plugin` generates the whole `plugin` world (imports `log`, `registry`, `assembly`;
//!   exports `contributor`).
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
#[allow(missing_docs)]
pub mod plugin {
    wit_bindgen::generate!({
        world: "plugin",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "__export_plugin_world",
        default_bindings_module: "$crate::bindings::plugin",
        additional_derives: [PartialEq],
    });
}

/// Bindings of the `instructions` export alone, for instruction providers.
#[allow(missing_docs)]
pub mod instructions {
    wit_bindgen::generate!({
        inline: "
            package prompt-plugin:sdk;

            world instructions-export {
                export prompt-host:plugin/instructions@0.1.0;
            }
        ",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "__export_instructions_world",
        default_bindings_module: "$crate::bindings::instructions",
        additional_derives: [PartialEq],
        with: {
            "prompt-host:plugin/types@0.1.0": crate::bindings::plugin::prompt_host::plugin::types,
        },
    });
}
