//! What a new user meets on the command line: `call`'s arguments, the demo's cache, a
//! render on a terminal, the log line format docs/cli.md documents, compile progress, a
//! host.toml toml refuses, and a suite in which a test that cannot run says so instead of
//! passing.

use std::path::Path;
use std::process::Command;

use crate::integration::support::cli::{bin, Deployment};

fn call(args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .arg("call")
        .args(args)
        .env(
            "PROMPT_HOST_CACHE_DIR",
            std::env::temp_dir().join("prompt-host-cli-details"),
        )
        .output()
        .unwrap()
}

#[test]
fn call_reads_its_assembly_inline_or_from_a_file_before_init_runs() {
    let listener =
        r#"{"listener":{"key":"l","steps":[{"push_section":{"name":"added","text":"pushed"}}]}}"#;
    let inline = r#"{"sections":[{"name":"given","text":"from the command line"}],"contexts":[],"tools":[],"variables":{}}"#;
    let out = call(&[
        env!("GUEST_DECLARE"),
        "on-assemble",
        "l",
        "--config",
        listener,
        "--assembly",
        inline,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("from the command line"), "{stdout}");
    // A bad value fails before the plugin is even read.
    let out = call(&[
        "/no/such/plugin.wasm",
        "on-assemble",
        "l",
        "--assembly",
        "{not json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--assembly is not JSON"), "{stderr}");
    assert!(!stderr.contains("/no/such/plugin.wasm"), "{stderr}");
}

#[test]
fn call_section_text_of_a_fixed_section_shows_the_stored_text() {
    let config = r#"{"sections":[{"name":"rules","order":1,"text":"Be brief."}]}"#;
    let out = call(&[
        env!("GUEST_DECLARE"),
        "section-text",
        "rules",
        "--config",
        config,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("section-text \"rules\": fixed (the host stores its text; an assembly does not call the plugin for it)"),
        "{stdout}"
    );
    assert!(stdout.contains("\"result\": \"Be brief.\""), "{stdout}");
}

#[test]
fn call_without_the_entry_name_is_a_usage_error() {
    let out = call(&[env!("GUEST_DECLARE"), "section-text"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: section-text needs the entry's NAME"),
        "{stderr}"
    );
}

#[test]
fn a_plugins_log_line_has_the_format_the_cli_reference_documents() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md"))
            .unwrap();
    assert!(
        readme.contains("`plugin \"<name>\" (scope <scope>) <stream>: <line>`"),
        "docs/cli.md's log line format"
    );
    let config = r#"{"mode":"say","in":"section","text":"hello there"}"#;
    let out = call(&[
        env!("GUEST_HOSTILE"),
        "section-text",
        "hostile",
        "--scope",
        "agent:1",
        "--config",
        config,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("plugin \"hostile\" (scope agent:1) warn: hello there"),
        "{stderr}"
    );
    assert!(
        readme.contains("--max-rounds"),
        "docs/cli.md documents dev --max-rounds"
    );
}

#[test]
fn render_on_a_terminal_ends_its_line_and_piped_gives_the_exact_prompt() {
    let d =
        Deployment::new("[prompt]\ninclude_harness_identity = false\npersona = \"One line.\"\n");
    let piped = d.run(&["render", "--config", d.config().to_str().unwrap()]);
    assert_eq!(piped.ok(), "One line.");
    // `script` runs the command on a pseudo-terminal.
    let command = format!(
        "PROMPT_HOST_CACHE_DIR={} {} render --config {}",
        d.path("cache").display(),
        bin().display(),
        d.config().display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script(1) from util-linux");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.ends_with("One line.\r\n"), "{text:?}");
}

#[test]
fn the_demo_deployment_caches_beside_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.toml");
    std::fs::write(&path, prompt_host_tests::demo::deployment()).unwrap();
    let config = prompt_host::HostConfig::load(&path).unwrap();
    assert_eq!(config.host.cache_dir, Some(dir.path().join("cache")));
}

/// What `cargo tree` says a build of `package` (with `features`) compiles, as
/// `name version features` lines: one per compiled unit of a crate.
fn compiled_units(package: &str, features: &[&str]) -> std::collections::BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--locked",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["-f", "{p} {f}", "-p", package])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        // A crate seen again is marked `(*)`; a path crate names its directory.
        .map(|line| {
            let line = line.trim_end_matches(" (*)");
            match line.find(" (/") {
                Some(at) => format!(
                    "{}{}",
                    &line[..at],
                    &line[at..].split_once(')').map_or("", |(_, rest)| rest)
                ),
                None => line.to_owned(),
            }
        })
        .collect()
}

/// The README's next command after `cargo demo` builds the command line and compiles
/// nothing the demo did not: the demo is a binary with the normal dependencies only. As an
/// example it built with the dev-dependencies' features, and the next command compiled
/// num-traits, zerocopy and the 13 crates above them again (tokenizers, rmcp, wasmtime's
/// users), for minutes in silence. `either` is the one crate the command line compiles
/// once more: a second unit, without its default feature, for a derive macro of the
/// trace exporter; it compiles in under a second.
#[test]
fn the_command_line_after_the_demo_compiles_no_crate_again() {
    let demo = compiled_units("prompt-host-tests", &["--features", "demo"]);
    let cli = compiled_units("prompt-host-cli", &[]);
    assert!(cli.len() > 100, "{cli:?}");
    let again: Vec<&String> = cli
        .difference(&demo)
        .filter(|unit| !unit.starts_with("prompt-host-cli ") && !unit.starts_with("either "))
        .collect();
    assert!(
        again.is_empty(),
        "the command line compiles these again after the demo: {again:?}"
    );
}

/// A test that cannot run must say so: `#[ignore = "why"]`, which the summary shows, or a
/// failure; never an early `return` after a message nobody sees in a passing run.
#[test]
fn no_test_skips_silently() {
    let mut files = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    assert!(files.len() > 50, "{files:?}");
    let mut offenders = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let says_skip = line.contains("eprintln!(") && {
                let window = lines[i..lines.len().min(i + 4)].join(" ").to_lowercase();
                window.contains("skip")
            };
            if says_skip
                && lines[i..lines.len().min(i + 8)]
                    .iter()
                    .any(|l| l.trim() == "return;")
            {
                offenders.push(format!("{}:{}", path.display(), i + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "tests that skip silently: {offenders:?}"
    );
}

/// A compile is announced on stderr with the plugin's name and size, then timed (here at
/// once: `PROMPT_HOST_PROGRESS_AFTER_MS=0`; by default after a second), through `render`
/// and `serve`; a warm cache compiles nothing and says nothing, and `--log-level error`
/// silences it.
#[test]
fn a_compile_is_announced_on_stderr_with_name_and_size_then_timed() {
    let d = Deployment::new(
        "[[plugin]]\nname = \"guide\"\nwasm = \"{DECLARE}\"\nconfig = { sections = [{ name = \"a\", order = 150, text = \"A.\" }] }\n",
    );
    let bytes = std::fs::metadata(env!("GUEST_DECLARE")).unwrap().len();
    let size = if bytes < 1_000_000 {
        format!("{} KB", bytes.div_ceil(1000))
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    };
    let config = d.config();
    let config = config.to_str().unwrap();
    let stderr = |args: &[&str], cache: &Path| {
        let out = Command::new(bin())
            .args(args)
            .env("PROMPT_HOST_CACHE_DIR", cache)
            .env("PROMPT_HOST_PROGRESS_AFTER_MS", "0")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let check = |text: &str, label: &str| {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{label}: {text}");
        assert_eq!(
            lines[0],
            format!("compiling plugin \"guide\" ({size}; not in the compile cache yet)…"),
            "{label}"
        );
        let timed = lines[1]
            .strip_prefix(&format!("compiled plugin \"guide\" ({size}) in "))
            .and_then(|rest| rest.strip_suffix(" s"))
            .unwrap_or_else(|| panic!("{label}: {}", lines[1]));
        assert!(timed.parse::<f64>().is_ok(), "{label}: {timed}");
    };
    let cache = d.path("cache");
    check(&stderr(&["render", "--config", config], &cache), "render");
    assert_eq!(
        stderr(&["render", "--config", config], &cache),
        "",
        "a warm cache"
    );
    check(
        &stderr(&["serve", "--config", config], &d.path("serve-cache")),
        "serve",
    );
    let quiet = d.path("quiet-cache");
    assert_eq!(
        stderr(
            &["render", "--log-level", "error", "--config", config],
            &quiet
        ),
        ""
    );
}

/// A host.toml toml refuses: a command prints the message with its place on one line and
/// toml's snippet below it — the line, a caret under the key — as toml means it to be read;
/// `serve`, whose stderr programs read a line at a time, says the same first line alone.
#[test]
fn a_host_toml_toml_refuses_is_shown_with_its_line_and_serve_says_it_on_one_line() {
    let d = Deployment::new("# A deployment.\n\n\nconfg={}\n");
    let config = d.config();
    let first = format!(
        "error: {}: line 4, column 1: unknown field `confg`, expected one of `prompt`, `host`, `scope`, `plugin`, `sessions`, `mcp`",
        config.display()
    );
    let render = d.run(&["render", "--config", config.to_str().unwrap()]);
    assert_eq!(
        (render.code, render.stdout.as_str(), render.stderr.as_str()),
        (
            1,
            "",
            format!("{first}\n  |\n4 | confg={{}}\n  | ^^^^^\n").as_str()
        )
    );
    let serve = d.run(&["serve", "--config", config.to_str().unwrap()]);
    assert_eq!(
        (serve.code, serve.stdout.as_str(), serve.stderr.as_str()),
        (1, "", format!("{first}\n").as_str())
    );
}
