//! `prompt-host new`: the projects it writes build on their own in a directory outside this
//! repository, and the plugins they build load, check and render with the real binary.
//!
//! * Rust, every kind: `cargo build --release --target wasm32-wasip2`, the project's unit
//!   tests (`cargo test --release`, natively), `check`, `render` (and `assemble` for tools).
//!   The four projects share one `CARGO_TARGET_DIR` under the temp dir, so the wit-bindgen
//!   stack (wit-parser, wit-component and the bindings macro, compiled for the host) builds
//!   once — about 20 s on 2 cores — and each project after it in a few seconds; a target dir
//!   per project would pay those 20 s four times, and `cargo test --release` reuses the
//!   release build's proc-macro artifacts. Since the shared dir holds the components, each is
//!   copied to where the project's own host.toml looks for it.
//! * JavaScript and Python, every kind, through the project's own `test.sh` (build,
//!   `check`, `render`, `assemble`) and then `check`/`render` from here: only when
//!   `PROMPT_HOST_POLYGLOT=1`, because they download their toolchains from npm and PyPI on a
//!   fresh machine (later projects install from npm's and pip's caches).
//!
//! Measured alone on the 2-core reference machine with warm registry caches: the Rust test
//! ~37 s (24 s of it the first project's build, ~1 s each later build, ~1.5–4 s each
//! `cargo test`), the polyglot one ~166 s for its eight projects (~21 s each, most of it
//! componentizing and the first compile of a 12–18 MB component), the refusals 0.04 s.
//! Beside the rest of the suite they take longer: the cores are shared.

use std::borrow::BorrowMut;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::integration::support::cli::bin;

/// Builds in these tests run one at a time: on a small machine two cargo builds (or a cargo
/// build and a 12 MB component compile) fighting for the cores make both slower.
static BUILDS: Mutex<()> = Mutex::new(());

/// Hold the build lock (a failed test elsewhere does not poison it for the rest).
pub(crate) fn build_lock() -> MutexGuard<'static, ()> {
    BUILDS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The repository checkout the tests are built from.
pub(crate) fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .canonicalize()
        .expect("the checkout exists")
}

/// A temporary directory that is not inside the checkout, so nothing written there can
/// find the repository's files (a cargo workspace above it, `../wit`, the SDK).
pub(crate) fn outside_checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().canonicalize().expect("tempdir path");
    assert!(
        !real.starts_with(checkout()),
        "the temp dir {} is inside the checkout; point TMPDIR elsewhere",
        real.display()
    );
    dir
}

/// `program` with the variables cargo set for this test process removed (they describe this
/// package, not what the test builds), like `tests/build.rs` does for the guest build.
/// Registry, network and toolchain settings stay.
pub(crate) fn scrubbed(program: impl AsRef<std::ffi::OsStr>) -> Command {
    const KEEP: &[&str] = &[
        "CARGO_HOME",
        "CARGO_NET_",
        "CARGO_HTTP_",
        "CARGO_REGISTRIES_",
        "CARGO_REGISTRY_",
        "CARGO_TERM_",
    ];
    const DROP: &[&str] = &[
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
    ];
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        let cargo_var = key.starts_with("CARGO_") && !KEEP.iter().any(|k| key.starts_with(k));
        if cargo_var || DROP.contains(&key) {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// `cargo` for a nested build: the cargo running the tests (`CARGO`), [`scrubbed`].
pub(crate) fn cargo() -> Command {
    scrubbed(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Run `cmd`, panic with its output unless it succeeds, and return its stdout.
pub(crate) fn succeed(what: &str, mut cmd: impl BorrowMut<Command>) -> String {
    let cmd = cmd.borrow_mut();
    let started = Instant::now();
    let Output {
        status,
        stdout,
        stderr,
    } = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(
        status.success(),
        "{what} failed ({status}):\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
    stdout
}

/// `prompt-host ARGS` in `dir`, with the compile cache at `cache`.
fn prompt_host(dir: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(dir)
        .env("PROMPT_HOST_CACHE_DIR", cache);
    cmd
}

/// Assert that `text` (the output of `what`) contains every needle.
fn contains_all(what: &str, text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "{what} lacks {needle:?}:\n{text}");
    }
}

/// What one kind's project must show, in every language: `{name}` stands for the project's
/// name and `{snake}` for its `snake_case` form.
struct Expect {
    kind: &'static str,
    check: &'static [&'static str],
    render: &'static [&'static str],
}

const KINDS: &[Expect] = &[
    Expect {
        kind: "section",
        check: &[
            "section  \"{name}:rules\" order 150 (fixed",
            "section  \"{name}:scope\" order 160 (dynamic)",
        ],
        render: &[
            "Work in /work. Keep answers short.",
            "This assembly is for the global scope.",
        ],
    },
    Expect {
        kind: "variable",
        check: &[
            "variable \"{snake}_scope\" (dynamic)",
            "section  \"{name}:where\" order 150 (fixed",
        ],
        render: &["This prompt is assembled for the global scope."],
    },
    Expect {
        kind: "tools",
        check: &["tools    dynamic provider \"{name}\""],
        render: &["Use {snake}_word_count to measure a text file instead of reading it whole."],
    },
    Expect {
        kind: "listener",
        check: &[
            "section  \"{name}:outline\" order 190 (fixed",
            "listener \"{name}\"",
        ],
        render: &[
            "Sections of this prompt: harness:identity, ",
            ", {name}:outline.",
        ],
    },
];

/// `lines` with the project's name filled in.
fn filled(lines: &[&str], name: &str) -> Vec<String> {
    let snake = name.replace('-', "_");
    lines
        .iter()
        .map(|line| line.replace("{name}", name).replace("{snake}", &snake))
        .collect()
}

/// `contains_all` for the lines of an [`Expect`], filled in for `name`.
fn shows(what: &str, text: &str, lines: &[&str], name: &str) {
    let lines = filled(lines, name);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    contains_all(what, text, &lines);
}

#[test]
fn rust_projects_of_every_kind_build_test_check_and_render() {
    let temp = outside_checkout();
    let root = temp.path();
    let target = root.join("cargo-target");
    let cache = root.join("compile-cache");
    // The projects land inside another workspace's directory: each is a workspace of its
    // own, so cargo builds it instead of refusing a package its parent does not list.
    std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
    let _builds = build_lock();
    let started = Instant::now();

    for expect in KINDS {
        let name = format!("s-{}", expect.kind);
        let snake = name.replace('-', "_");
        let created = succeed(
            &format!("new {name}"),
            prompt_host(root, &cache, &["new", &name, "--kind", expect.kind]),
        );
        contains_all(
            "new",
            &created,
            &[
                "Rust plugin",
                "vendor/prompt-plugin/wit/0.2.0/worlds.wit",
                "cargo build --release --target wasm32-wasip2",
            ],
        );
        let project = root.join(&name);

        succeed(
            &format!("{name}: cargo build"),
            cargo()
                .args(["build", "--release", "--target", "wasm32-wasip2"])
                .current_dir(&project)
                .env("CARGO_TARGET_DIR", &target),
        );
        let tests = succeed(
            &format!("{name}: cargo test"),
            cargo()
                .args(["test", "--release"])
                .current_dir(&project)
                .env("CARGO_TARGET_DIR", &target),
        );
        contains_all("cargo test", &tests, &["test result: ok. 2 passed"]);

        // Where host.toml expects the component (cargo's default target dir).
        let wasm = format!("target/wasm32-wasip2/release/{snake}.wasm");
        std::fs::create_dir_all(project.join("target/wasm32-wasip2/release")).unwrap();
        std::fs::copy(
            target.join(format!("wasm32-wasip2/release/{snake}.wasm")),
            project.join(&wasm),
        )
        .expect("the build wrote the component");

        let checked = succeed(
            &format!("{name}: check"),
            prompt_host(&project, &cache, &["check", &wasm]),
        );
        contains_all("check", &checked, &["wit:     prompt-host:plugin@0.2.0"]);
        shows("check", &checked, expect.check, &name);
        let rendered = succeed(
            &format!("{name}: render"),
            prompt_host(
                &project,
                &cache,
                &["render", "--config", "host.toml", "--fact", "cwd=/work"],
            ),
        );
        shows("render", &rendered, expect.render, &name);
        if expect.kind == "tools" {
            let assembled = succeed(
                &format!("{name}: assemble"),
                prompt_host(
                    &project,
                    &cache,
                    &["assemble", "--config", "host.toml", "--fact", "cwd=/work"],
                ),
            );
            let assembly: serde_json::Value = serde_json::from_str(&assembled).unwrap();
            let tool = &assembly["tools"][0];
            assert_eq!(tool["name"], "s_tools_word_count", "{assembled}");
            assert_eq!(tool["parameters"]["required"][0], "path", "{assembled}");
            assert_eq!(
                tool["parameters"]["properties"]["path"]["description"],
                "The file's path, relative to /work."
            );
        }
    }
    eprintln!("four Rust kinds: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn new_refuses_bad_names_and_non_empty_directories() {
    let temp = outside_checkout();
    let root = temp.path();
    let cache = root.join("cache");
    let run = |args: &[&str]| {
        prompt_host(root, &cache, args)
            .output()
            .expect("run prompt-host")
    };

    // A name that is no crate or package name: a usage error, nothing written.
    for bad in ["Hello", "my plugin", "2fast", "fn", "prompt-plugin"] {
        let out = run(&["new", bad]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains("is not a valid plugin project name"),
            "{bad}: {stderr}"
        );
        assert!(!root.join(bad).exists());
    }

    // --dir: written there; the same directory again is refused and left as it was.
    let out = run(&[
        "new", "demo", "--lang", "python", "--kind", "listener", "--dir", "here",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    contains_all(
        "new",
        &stdout,
        &[
            "cd here/",
            "./build.sh",
            "./test.sh",
            "wit/0.1.0/worlds.wit",
        ],
    );
    let app = std::fs::read_to_string(root.join("here/src/app.py")).unwrap();
    assert!(app.contains("OUTLINE = \"demo:outline\""), "{app}");

    let out = run(&["new", "demo", "--dir", "here"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("already exists and is not empty"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("here/src/app.py")).unwrap(),
        app
    );

    // An empty directory is fine; a file is not.
    std::fs::create_dir(root.join("empty")).unwrap();
    let out = run(&["new", "demo", "--lang", "js", "--dir", "empty"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(root.join("empty/src/plugin.js").is_file());
    std::fs::write(root.join("taken"), "x").unwrap();
    let out = run(&["new", "taken"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a directory"), "{stderr}");
}

#[test]
#[ignore = "polyglot: builds JavaScript and Python projects of every kind (Node.js >= 20 with npm, Python >= 3.9; toolchains from npm and PyPI); `cargo test -- --ignored polyglot` (.ci/run runs it)"]
fn polyglot_javascript_and_python_projects_build_check_and_render() {
    let temp = outside_checkout();
    let root = temp.path();
    let cache = root.join("compile-cache");
    let _builds = build_lock();
    let started = Instant::now();

    for (lang, expect) in ["js", "python"]
        .into_iter()
        .flat_map(|lang| KINDS.iter().map(move |expect| (lang, expect)))
    {
        let name = format!("p-{lang}-{}", expect.kind);
        succeed(
            &format!("new {name}"),
            prompt_host(
                root,
                &cache,
                &["new", &name, "--lang", lang, "--kind", expect.kind],
            ),
        );
        let project = root.join(&name);
        // The project's own test: build, check, render, assemble, each output grepped.
        let tested = succeed(
            &format!("{name}: ./test.sh"),
            Command::new(project.join("test.sh"))
                .current_dir(&project)
                .env("PROMPT_HOST", bin())
                .env("PROMPT_HOST_CACHE_DIR", &cache),
        );
        contains_all("test.sh", &tested, &["test.sh: ok"]);
        let checked = succeed(
            &format!("{name}: check"),
            prompt_host(&project, &cache, &["check", "dist/plugin.wasm"]),
        );
        contains_all("check", &checked, &["wit:     prompt-host:plugin@0.1.0"]);
        shows("check", &checked, expect.check, &name);
        let rendered = succeed(
            &format!("{name}: render"),
            prompt_host(
                &project,
                &cache,
                &["render", "--config", "host.toml", "--fact", "cwd=/work"],
            ),
        );
        shows("render", &rendered, expect.render, &name);
    }
    eprintln!(
        "four JavaScript and four Python kinds: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
