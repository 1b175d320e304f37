//! Unit tests of `prompt-host new`: names, the vendored files and the templates. Building,
//! checking and rendering the written projects is `tests/tests/integration/cli/scaffold.rs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::*;

const LANGS: [Lang; 3] = [Lang::Rust, Lang::Js, Lang::Python];
const KINDS: [Kind; 4] = [Kind::Section, Kind::Variable, Kind::Tools, Kind::Listener];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("host/cli/ lives in the repository")
        .to_path_buf()
}

/// The files under `dir`, as paths relative to it (following the SDK's `wit` link).
fn listing(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap();
                out.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn names_that_work_everywhere_are_accepted() {
    for name in ["hello", "my-plugin", "my_plugin", "p2", "a-b_c", "x"] {
        assert_eq!(parse_name(name).as_deref(), Ok(name));
    }
}

#[test]
fn invalid_names_are_refused_with_the_reason() {
    for (name, why) in [
        ("", "it is empty"),
        ("Hello", "must start with a lowercase letter"),
        ("2fast", "must start with a lowercase letter"),
        ("-x", "must start with a lowercase letter"),
        ("my plugin", "' ' is not allowed"),
        ("my.plugin", "'.' is not allowed"),
        ("hello/world", "'/' is not allowed"),
        ("héllo", "'é' is not allowed"),
        ("fn", "Rust keyword"),
        ("test", "taken"),
        ("prompt-plugin", "taken"),
        ("serde_json", "taken"),
    ] {
        let error = parse_name(name).expect_err(name);
        assert!(error.contains(why), "{name:?}: {error}");
        assert!(error.contains("not a valid plugin project name"), "{error}");
    }
    let long = "a".repeat(MAX_NAME + 1);
    assert!(parse_name(&long).unwrap_err().contains("longer than"));
    assert!(parse_name(&"a".repeat(MAX_NAME)).is_ok());
}

#[test]
fn names_have_a_snake_and_a_type_form() {
    let names = Names::new("my-first-plugin");
    assert_eq!(names.snake, "my_first_plugin");
    assert_eq!(names.type_name, "MyFirstPluginPlugin");
    assert_eq!(Names::new("p2").type_name, "P2Plugin");
    assert_eq!(
        names.fill("__NAME__ __SNAKE___scope __TYPE__"),
        "my-first-plugin my_first_plugin_scope MyFirstPluginPlugin"
    );
}

#[test]
fn the_embedded_wit_is_every_file_of_wit() {
    let embedded: BTreeSet<String> = embedded::WIT.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(embedded, listing(&repo().join("wit")));
    for (path, text) in embedded::WIT {
        let on_disk = std::fs::read_to_string(repo().join("wit").join(path)).unwrap();
        assert_eq!(*text, on_disk, "{path}");
    }
}

#[test]
fn the_embedded_sdk_is_every_file_of_the_sdk() {
    let sdk = repo().join("guest-examples/sdk");
    let embedded: BTreeSet<String> = embedded::SDK.iter().map(|(p, _)| p.to_string()).collect();
    let on_disk: BTreeSet<String> = listing(&sdk)
        .into_iter()
        .filter(|p| !p.starts_with("wit/"))
        .collect();
    assert_eq!(
        embedded, on_disk,
        "guest-examples/sdk changed: update new/embedded.rs"
    );
    // The SDK finds the contract in its own `wit/` (in the repository, a link to `wit/`),
    // which is where a project gets it.
    assert_eq!(listing(&sdk.join("wit")), listing(&repo().join("wit")));
    let bindings = embedded::SDK
        .iter()
        .find(|(p, _)| *p == "src/bindings.rs")
        .unwrap()
        .1;
    assert!(bindings.contains(r#"path: ["wit/0.1.0", "wit/0.2.0", "wit/0.3.0"]"#));
    // A vendored manifest must not inherit from a workspace the project does not have.
    let manifest = embedded::SDK[0].1;
    assert!(!manifest.contains(".workspace"), "{manifest}");
}

/// Every placeholder a template may use.
const PLACEHOLDERS: &[&str] = &[
    "__NAME__",
    "__SNAKE__",
    "__TYPE__",
    "__PRELUDE__",
    "__IMPORTS__",
    "__ENTRIES__",
    "__CHECK__",
    "__RENDER__",
    "__ASSEMBLE__",
];

#[test]
fn every_template_is_filled_in_and_self_contained() {
    let names = Names::new("my-plugin");
    for lang in LANGS {
        for kind in KINDS {
            let project = project(&names, lang, kind);
            let paths: BTreeSet<&str> = project.files.iter().map(|f| f.path.as_str()).collect();
            assert_eq!(paths.len(), project.files.len(), "duplicate paths");
            for required in ["host.toml", "README.md", ".gitignore"] {
                assert!(paths.contains(required), "{lang:?} {kind:?}: {required}");
            }
            for file in &project.files {
                let what = format!("{lang:?} {kind:?} {}", file.path);
                assert!(
                    !file.path.starts_with('/') && !file.path.contains(".."),
                    "{what}"
                );
                for placeholder in PLACEHOLDERS {
                    assert!(!file.text.contains(placeholder), "{what}: {placeholder}");
                }
                // Nothing points back at this repository.
                let checkout = repo().display().to_string();
                for needle in ["guest-examples", "../wit", checkout.as_str()] {
                    assert!(!file.text.contains(needle), "{what}: {needle}");
                }
            }
            let host_toml = &project
                .files
                .iter()
                .find(|f| f.path == "host.toml")
                .unwrap();
            let parsed: toml::Value = toml::from_str(&host_toml.text).unwrap();
            assert_eq!(parsed["plugin"][0]["name"].as_str(), Some("my-plugin"));
            assert!(
                host_toml.text.contains("\n# dev = { build = \""),
                "{}",
                host_toml.text
            );
        }
    }
}

#[test]
fn a_rust_project_is_its_own_workspace_on_the_vendored_sdk() {
    let project = project(&Names::new("my-plugin"), Lang::Rust, Kind::Section);
    let file = |path: &str| {
        &project
            .files
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("{path}"))
            .text
    };
    let manifest: toml::Value = toml::from_str(file("Cargo.toml")).unwrap();
    assert!(manifest.get("workspace").is_some());
    assert_eq!(manifest["package"]["name"].as_str(), Some("my-plugin"));
    assert_eq!(
        manifest["lib"]["crate-type"].as_array().unwrap()[0].as_str(),
        Some("cdylib")
    );
    assert_eq!(
        manifest["dependencies"]["prompt-plugin"]["path"].as_str(),
        Some("vendor/prompt-plugin")
    );
    assert!(file("vendor/prompt-plugin/wit/0.2.0/worlds.wit").contains("world plugin"));
    assert!(file("vendor/prompt-plugin/src/lib.rs").contains("macro_rules! export_plugin"));
    assert!(file("src/lib.rs").contains("struct MyPluginPlugin"));
    assert!(file("host.toml").contains("target/wasm32-wasip2/release/my_plugin.wasm"));
}

#[test]
fn the_template_lock_pins_what_the_examples_are_built_with() {
    let ours: toml::Value = toml::from_str(include_str!("templates/rust/Cargo.lock.tpl")).unwrap();
    let theirs: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo().join("guest-examples/Cargo.lock")).unwrap())
            .unwrap();
    let versions = |lock: &toml::Value| -> BTreeSet<(String, String)> {
        lock["package"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p.get("source").is_some())
            .map(|p| {
                (
                    p["name"].as_str().unwrap().to_string(),
                    p["version"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let ours = versions(&ours);
    assert!(
        ours.iter().any(|(name, _)| name == "wit-bindgen"),
        "{ours:?}"
    );
    let theirs = versions(&theirs);
    let missing: Vec<_> = ours.difference(&theirs).collect();
    assert!(
        missing.is_empty(),
        "the template's Cargo.lock has versions guest-examples/Cargo.lock does not: {missing:?}"
    );
}

#[test]
fn js_and_python_scripts_are_executable_and_use_the_projects_wit() {
    for lang in [Lang::Js, Lang::Python] {
        let project = project(&Names::new("hello"), lang, Kind::Tools);
        let scripts: Vec<&File> = project.files.iter().filter(|f| f.executable).collect();
        let names: Vec<&str> = scripts.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["build.sh", "test.sh"], "{lang:?}");
        let build = project
            .files
            .iter()
            .find(|f| f.path == "build.sh" || f.path == "package.json")
            .unwrap();
        let all: String = project.files.iter().map(|f| f.text.as_str()).collect();
        assert!(
            all.contains("wit/0.1.0 --world"),
            "{lang:?}: {}",
            build.text
        );
        let test = &scripts[1].text;
        assert!(
            test.contains("expect check 'tools    dynamic provider \"hello\"'"),
            "{test}"
        );
        assert!(
            test.contains("expect assemble '\"hello_word_count\"'"),
            "{test}"
        );
    }
}

#[test]
fn an_existing_non_empty_directory_or_a_file_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let files = [
        File::new("a/b.txt", "b"),
        File::script("run.sh", "#!/bin/sh\n"),
    ];

    let fresh = temp.path().join("fresh");
    write_project(&fresh, &files).unwrap();
    assert_eq!(std::fs::read_to_string(fresh.join("a/b.txt")).unwrap(), "b");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(fresh.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111);
    }

    let error = write_project(&fresh, &files).unwrap_err().to_string();
    assert!(error.contains("already exists and is not empty"), "{error}");
    assert_eq!(std::fs::read_to_string(fresh.join("a/b.txt")).unwrap(), "b");

    let empty = temp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    write_project(&empty, &files).unwrap();

    let file = temp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let error = write_project(&file, &files).unwrap_err().to_string();
    assert!(
        error.contains("already exists and is not a directory"),
        "{error}"
    );
}

#[test]
fn directories_are_shown_quoted_for_the_shell_when_needed() {
    assert_eq!(shell_word("hello/"), "hello/");
    assert_eq!(shell_word("my dir/"), "'my dir/'");
    assert_eq!(shell_word("it's/"), r"'it'\''s/'");
}
