//! README.md's "A plugin in five minutes", run as written: the blocks of that section marked
//! with an HTML comment run in order, in one shell, in a directory outside the checkout.
//!
//! * `<!-- tutorial: run -->` before a ```sh block: its lines run. Only `cargo install`
//!   lines are skipped; `prompt-host` is this build's binary, first on `PATH` (a symlink
//!   named `prompt-host`), where `cargo install` would have put it.
//! * `<!-- tutorial: file PATH -->` before a block: its text is written to PATH (relative
//!   to the shell's directory at that point), as the reader would save it.
//! * `<!-- tutorial: output -->` before a block: every non-empty line of it must appear in
//!   what the preceding `run` block printed.
//!
//! The plugin's build has a target dir of its own (the README's paths assume cargo's
//! default), so this test compiles the wit-bindgen stack once more: ~30 s on 2 cores.

use std::path::Path;

use crate::integration::cli::scaffold::{
    build_lock, checkout, outside_checkout, scrubbed, succeed,
};
use crate::integration::support::cli::bin;

/// The section of README.md the test runs.
const HEADING: &str = "## A plugin in five minutes";

/// One marked block of the tutorial.
#[derive(Debug)]
enum Block {
    Run(String),
    File { path: String, text: String },
    Output(String),
}

/// The marked blocks under [`HEADING`], in order.
fn tutorial(readme: &str) -> Vec<Block> {
    let start = readme
        .find(HEADING)
        .unwrap_or_else(|| panic!("README.md has no {HEADING:?} section"));
    let section = &readme[start + HEADING.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some(marker) = line
            .trim()
            .strip_prefix("<!-- tutorial:")
            .and_then(|rest| rest.strip_suffix("-->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(
            fence.starts_with("```"),
            "README.md: the marker {line:?} must be followed by a fenced block, got {fence:?}"
        );
        let mut body = String::new();
        for line in lines.by_ref() {
            if line.starts_with("```") {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        let marker = marker.trim();
        blocks.push(match marker.split_once(' ') {
            None if marker == "run" => Block::Run(body),
            None if marker == "output" => Block::Output(body),
            Some(("file", path)) => Block::File {
                path: path.trim().to_string(),
                text: body,
            },
            _ => panic!("README.md: unknown tutorial marker {line:?}"),
        });
    }
    blocks
}

/// A line the test does not run: the install, which the test binary stands in for.
fn skipped(line: &str) -> bool {
    line.trim_start().starts_with("cargo install ")
}

/// The separator printed before each `run` block's output.
fn separator(index: usize) -> String {
    format!("<<< tutorial block {index} >>>")
}

/// One shell script for the whole tutorial.
fn script(blocks: &[Block]) -> String {
    let mut out = String::from("set -euo pipefail\n");
    for (index, block) in blocks.iter().enumerate() {
        match block {
            Block::Run(body) => {
                out.push_str(&format!("echo '{}'\n", separator(index)));
                for line in body.lines().filter(|l| !skipped(l)) {
                    out.push_str(line);
                    out.push('\n');
                }
            }
            Block::File { path, text } => {
                assert!(!text.contains("TUTORIAL_EOF"), "{text}");
                out.push_str(&format!(
                    "cat > '{path}' <<'TUTORIAL_EOF'\n{text}TUTORIAL_EOF\n"
                ));
            }
            Block::Output(_) => {}
        }
    }
    out
}

#[test]
fn the_readme_tutorial_runs_as_written() {
    let readme = std::fs::read_to_string(checkout().join("README.md")).expect("README.md");
    let blocks = tutorial(&readme);
    let runs: String = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Run(body) => Some(body.as_str()),
            _ => None,
        })
        .collect();
    // What the tutorial must teach, in its own words.
    for step in [
        "cargo install --locked --path host/cli",
        "prompt-host new hello",
        "cargo build --release --target wasm32-wasip2",
        "prompt-host check ",
        "prompt-host render --config host.toml",
    ] {
        assert!(
            runs.contains(step),
            "the tutorial no longer runs {step:?}:\n{runs}"
        );
    }
    assert!(
        blocks.iter().any(|b| matches!(b, Block::File { .. })),
        "the tutorial writes no host.toml"
    );
    // The skipped install line would install the binary the test runs instead.
    let host_manifest = std::fs::read_to_string(checkout().join("host/cli/Cargo.toml")).unwrap();
    assert!(host_manifest.contains("name = \"prompt-host\"\npath = \"src/main.rs\""));

    let temp = outside_checkout();
    let root = temp.path();
    let bin_dir = root.join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    link(&bin(), &bin_dir.join("prompt-host"));
    let work = root.join("work");
    std::fs::create_dir(&work).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin_dir.clone()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();

    // The shell gets `cargo()`'s environment: this test package's variables removed.
    let mut shell = scrubbed("bash");
    shell
        .arg("-c")
        .arg(script(&blocks))
        .current_dir(&work)
        .env("PATH", path)
        .env("PROMPT_HOST_CACHE_DIR", root.join("compile-cache"));

    let stdout = {
        let _builds = build_lock();
        succeed("the README tutorial", &mut shell)
    };

    // Each output block against what the preceding run block printed.
    let mut last_run = None;
    for (index, block) in blocks.iter().enumerate() {
        match block {
            Block::Run(_) => last_run = Some(index),
            Block::Output(expected) => {
                let run = last_run.expect("an output block follows a run block");
                let printed = printed_by(&stdout, run);
                for line in expected.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    assert!(
                        printed.contains(line),
                        "README.md shows {line:?}, but the tutorial printed:\n{printed}"
                    );
                }
            }
            Block::File { .. } => {}
        }
    }
}

/// What the `run` block at `index` printed: from its separator to the next one.
fn printed_by(stdout: &str, index: usize) -> &str {
    let start = stdout
        .find(&separator(index))
        .map(|at| at + separator(index).len())
        .unwrap_or_else(|| panic!("block {index} did not run:\n{stdout}"));
    let rest = &stdout[start..];
    &rest[..rest.find("<<< tutorial block ").unwrap_or(rest.len())]
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).expect("symlink prompt-host");
}

#[cfg(not(unix))]
fn link(target: &Path, at: &Path) {
    std::fs::copy(target, at).expect("copy prompt-host");
}
