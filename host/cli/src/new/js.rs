//! The JavaScript template: jco + componentize-js from npm (versions pinned as in
//! `guest-examples-js/`), the `plugin` world of the project's own `wit/0.1.0`.

use super::{kinds, File, Kind, Names, Project};

/// The toolchain's lock file, `guest-examples-js/package-lock.json` with the project's name.
const PACKAGE_LOCK: &str = include_str!("../../../../guest-examples-js/package-lock.json");
/// The package name in [`PACKAGE_LOCK`].
const LOCKED_NAME: &str = "\"name\": \"prompt-host-plugin-js\"";

pub(super) fn project(names: &Names, kind: Kind) -> Project {
    let source = match kind {
        Kind::Section => include_str!("templates/js/section.js.tpl"),
        Kind::Variable => include_str!("templates/js/variable.js.tpl"),
        Kind::Tools => include_str!("templates/js/tools.js.tpl"),
        Kind::Listener => include_str!("templates/js/listener.js.tpl"),
    }
    .replace("__PRELUDE__", include_str!("templates/js/prelude.js.tpl"));
    let text = kinds::text(kind);
    let readme = include_str!("templates/js/README.md.tpl")
        .replace("__ENTRIES__", text.entries)
        .replace("__CHECK__", text.check[0])
        .replace("__RENDER__", text.sample);
    let lock = PACKAGE_LOCK.replace(LOCKED_NAME, &format!("\"name\": \"{}\"", names.name));
    let mut files = vec![
        File::new(
            "package.json",
            names.fill(include_str!("templates/js/package.json.tpl")),
        ),
        File::new("package-lock.json", lock),
        File::new("src/plugin.js", names.fill(&source)),
        File::script("build.sh", include_str!("templates/js/build.sh.tpl")),
        File::script("test.sh", names.fill(&super::test_script(&text))),
        File::new(
            "host.toml",
            names.fill(include_str!("templates/js/host.toml.tpl")),
        ),
        File::new("README.md", names.fill(&readme)),
        File::new(".gitignore", include_str!("templates/js/gitignore.tpl")),
    ];
    files.extend(super::wit_files("wit/"));
    Project {
        files,
        language: "JavaScript",
        contract: "0.1.0",
        next: vec![
            "./build.sh                  # Node.js >= 20; the first run installs the toolchain"
                .to_string(),
            "prompt-host check dist/plugin.wasm".to_string(),
            "prompt-host render --config host.toml --fact cwd=/work".to_string(),
            "./test.sh".to_string(),
        ],
    }
}
