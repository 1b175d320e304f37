//! The Rust template: a `cdylib` crate on the vendored `prompt-plugin` SDK, its own cargo
//! workspace, contract 0.2.0.

use super::{embedded, kinds, File, Kind, Names, Project};

/// `Cargo.lock` for the template's dependencies (the SDK's, and serde): the versions the
/// repository's example plugins are built and tested with. Without it, the first build of
/// every new project would resolve the newest versions anew.
const CARGO_LOCK: &str = include_str!("templates/rust/Cargo.lock.tpl");

pub(super) fn project(names: &Names, kind: Kind) -> Project {
    let source = match kind {
        Kind::Section => include_str!("templates/rust/section.rs.tpl"),
        Kind::Variable => include_str!("templates/rust/variable.rs.tpl"),
        Kind::Tools => include_str!("templates/rust/tools.rs.tpl"),
        Kind::Listener => include_str!("templates/rust/listener.rs.tpl"),
    };
    let text = kinds::text(kind);
    let readme = include_str!("templates/rust/README.md.tpl")
        .replace("__ENTRIES__", text.entries)
        .replace("__CHECK__", text.check[0])
        .replace("__RENDER__", text.sample);
    let mut files = vec![
        File::new(
            "Cargo.toml",
            names.fill(include_str!("templates/rust/Cargo.toml.tpl")),
        ),
        File::new("Cargo.lock", names.fill(CARGO_LOCK)),
        File::new("src/lib.rs", names.fill(source)),
        File::new(
            "host.toml",
            names.fill(include_str!("templates/rust/host.toml.tpl")),
        ),
        File::new("README.md", names.fill(&readme)),
        File::new(".gitignore", include_str!("templates/rust/gitignore.tpl")),
    ];
    files.extend(
        embedded::SDK
            .iter()
            .map(|(path, text)| File::new(format!("vendor/prompt-plugin/{path}"), *text)),
    );
    files.extend(super::wit_files("vendor/prompt-plugin/wit/"));
    Project {
        files,
        language: "Rust",
        contract: "0.2.0",
        next: vec![
            "rustup target add wasm32-wasip2      # once".to_string(),
            "cargo build --release --target wasm32-wasip2".to_string(),
            format!(
                "prompt-host check target/wasm32-wasip2/release/{}.wasm",
                names.snake
            ),
            "prompt-host render --config host.toml --fact cwd=/work".to_string(),
            "cargo test".to_string(),
        ],
    }
}
