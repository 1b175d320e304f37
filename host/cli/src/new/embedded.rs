//! What `prompt-host new` vendors into a project, compiled into the binary: the WIT of every
//! contract version, and the guest SDK crate `prompt-plugin` (for Rust projects). The lists
//! are checked against the directories they come from by this module's tests, so a file added
//! there and not here fails `cargo test`.

/// The plugin contract, `wit/<version>/<file>`: what every project gets under `wit/` (Rust:
/// under the vendored SDK's `wit/`).
pub(super) const WIT: &[(&str, &str)] = &[
    (
        "0.1.0/assembly.wit",
        include_str!("../../../../wit/0.1.0/assembly.wit"),
    ),
    (
        "0.1.0/contributor.wit",
        include_str!("../../../../wit/0.1.0/contributor.wit"),
    ),
    (
        "0.1.0/instructions.wit",
        include_str!("../../../../wit/0.1.0/instructions.wit"),
    ),
    (
        "0.1.0/log.wit",
        include_str!("../../../../wit/0.1.0/log.wit"),
    ),
    (
        "0.1.0/registry.wit",
        include_str!("../../../../wit/0.1.0/registry.wit"),
    ),
    (
        "0.1.0/types.wit",
        include_str!("../../../../wit/0.1.0/types.wit"),
    ),
    (
        "0.1.0/worlds.wit",
        include_str!("../../../../wit/0.1.0/worlds.wit"),
    ),
    (
        "0.2.0/contributor.wit",
        include_str!("../../../../wit/0.2.0/contributor.wit"),
    ),
    (
        "0.2.0/control.wit",
        include_str!("../../../../wit/0.2.0/control.wit"),
    ),
    (
        "0.2.0/worlds.wit",
        include_str!("../../../../wit/0.2.0/worlds.wit"),
    ),
    (
        "0.3.0/freshness.wit",
        include_str!("../../../../wit/0.3.0/freshness.wit"),
    ),
    (
        "0.3.0/skills.wit",
        include_str!("../../../../wit/0.3.0/skills.wit"),
    ),
    (
        "0.3.0/worlds.wit",
        include_str!("../../../../wit/0.3.0/worlds.wit"),
    ),
];

/// The guest SDK crate, `guest-examples/sdk/<file>` (its `wit/` is [`WIT`]).
pub(super) const SDK: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../../../guest-examples/sdk/Cargo.toml"),
    ),
    (
        "README.md",
        include_str!("../../../../guest-examples/sdk/README.md"),
    ),
    (
        "src/answers.rs",
        include_str!("../../../../guest-examples/sdk/src/answers.rs"),
    ),
    (
        "src/bindings.rs",
        include_str!("../../../../guest-examples/sdk/src/bindings.rs"),
    ),
    (
        "src/config.rs",
        include_str!("../../../../guest-examples/sdk/src/config.rs"),
    ),
    (
        "src/declare.rs",
        include_str!("../../../../guest-examples/sdk/src/declare.rs"),
    ),
    (
        "src/error.rs",
        include_str!("../../../../guest-examples/sdk/src/error.rs"),
    ),
    (
        "src/lib.rs",
        include_str!("../../../../guest-examples/sdk/src/lib.rs"),
    ),
    (
        "src/log.rs",
        include_str!("../../../../guest-examples/sdk/src/log.rs"),
    ),
    (
        "src/plugin.rs",
        include_str!("../../../../guest-examples/sdk/src/plugin.rs"),
    ),
    (
        "src/types.rs",
        include_str!("../../../../guest-examples/sdk/src/types.rs"),
    ),
    (
        "src/versions.rs",
        include_str!("../../../../guest-examples/sdk/src/versions.rs"),
    ),
];
