//! The Python template: componentize-py from PyPI (pinned as in `guest-examples-py/`), the
//! `plugin` world of the project's own `wit/0.1.0`.

use super::{kinds, File, Kind, Names, Project};

pub(super) fn project(names: &Names, kind: Kind) -> Project {
    let source = match kind {
        Kind::Section => include_str!("templates/python/section.py.tpl"),
        Kind::Variable => include_str!("templates/python/variable.py.tpl"),
        Kind::Tools => include_str!("templates/python/tools.py.tpl"),
        Kind::Listener => include_str!("templates/python/listener.py.tpl"),
    }
    .replace(
        "__IMPORTS__",
        include_str!("templates/python/imports.py.tpl"),
    )
    .replace(
        "__PRELUDE__",
        include_str!("templates/python/prelude.py.tpl"),
    );
    let text = kinds::text(kind);
    let readme = include_str!("templates/python/README.md.tpl")
        .replace("__ENTRIES__", text.entries)
        .replace("__CHECK__", text.check[0])
        .replace("__RENDER__", text.sample);
    let mut files = vec![
        File::new(
            "requirements.txt",
            include_str!("templates/python/requirements.txt.tpl"),
        ),
        File::new("src/app.py", names.fill(&source)),
        File::script("build.sh", include_str!("templates/python/build.sh.tpl")),
        File::script("test.sh", names.fill(&super::test_script(&text))),
        File::new(
            "host.toml",
            names.fill(include_str!("templates/python/host.toml.tpl")),
        ),
        File::new("README.md", names.fill(&readme)),
        File::new(".gitignore", include_str!("templates/python/gitignore.tpl")),
    ];
    files.extend(super::wit_files("wit/"));
    Project {
        files,
        language: "Python",
        contract: "0.1.0",
        next: vec![
            "./build.sh                  # Python >= 3.9; the first run installs the toolchain"
                .to_string(),
            "prompt-host check dist/plugin.wasm".to_string(),
            "prompt-host render --config host.toml --fact cwd=/work".to_string(),
            "./test.sh".to_string(),
        ],
    }
}
