//! The plugin against real directory trees (natively, where `std::fs` is the host's): the
//! root is a temporary directory standing for the guest path, and `host_root` a made-up host
//! path that the `cwd` fact is given under.

use std::fs;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use prompt_plugin::{config, serde_json, serde_json::json, AssembleContext, Error, Plugin};
use tempfile::TempDir;

use crate::{budget, ProjectInstructions};

const HOST_ROOT: &str = "/home/dev/repo";

/// The plugin over `root` with `HOST_ROOT` mapped onto it, no heading, and `extra` config.
fn plugin(root: &Path, extra: serde_json::Value) -> Result<ProjectInstructions, Error> {
    let mut cfg = json!({
        "root": root.to_str().expect("temporary paths are UTF-8"),
        "host_root": HOST_ROOT,
        "heading": "",
    });
    if let (Some(cfg), Some(extra)) = (cfg.as_object_mut(), extra.as_object()) {
        cfg.extend(extra.clone());
    }
    ProjectInstructions::from_config(config::parse(cfg)?)
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).expect("create dirs");
    }
    fs::write(path, text).expect("write file");
}

fn tree() -> TempDir {
    tempfile::tempdir().expect("temporary directory")
}

fn text(root: &Path, cwd: Option<&str>) -> String {
    match plugin(root, json!({})).and_then(|p| p.text(cwd)) {
        Ok(text) => text,
        Err(e) => panic!("text failed: {}", e.message()),
    }
}

#[test]
fn three_nested_files_come_root_first_nearest_last() {
    let dir = tree();
    write(dir.path(), "AGENTS.md", "Use tabs.\n");
    write(dir.path(), "src/AGENTS.md", "Run cargo test.\n\n");
    write(dir.path(), "src/app/AGENTS.md", "Use spaces here.");
    write(dir.path(), "src/other/AGENTS.md", "Not on the way to cwd.");
    assert_eq!(
        text(dir.path(), Some("/home/dev/repo/src/app")),
        "# From AGENTS.md\nUse tabs.\n\n\
         # From src/AGENTS.md\nRun cargo test.\n\n\
         # From src/app/AGENTS.md\nUse spaces here."
    );
    // A cwd deeper than the tree still gets every file on the way.
    assert!(text(dir.path(), Some("/home/dev/repo/src/app/x/y")).ends_with("Use spaces here."));
}

#[test]
fn several_names_in_one_directory_follow_the_configured_order() {
    let dir = tree();
    write(dir.path(), "GEMINI.md", "g");
    write(dir.path(), "AGENTS.md", "a");
    write(dir.path(), ".cursorrules", "c");
    assert_eq!(
        text(dir.path(), None),
        "# From AGENTS.md\na\n\n# From .cursorrules\nc\n\n# From GEMINI.md\ng"
    );
}

#[test]
fn a_cwd_outside_the_root_or_absent_gets_only_the_root() {
    let dir = tree();
    write(dir.path(), "AGENTS.md", "root");
    write(dir.path(), "src/AGENTS.md", "src");
    let root_only = "# From AGENTS.md\nroot";
    assert_eq!(text(dir.path(), Some("/home/dev/other/src")), root_only);
    assert_eq!(text(dir.path(), Some("/home/dev/repo2/src")), root_only);
    assert_eq!(
        text(dir.path(), Some("/home/dev/repo/../repo/src")),
        root_only
    );
    assert_eq!(text(dir.path(), None), root_only);
}

#[test]
fn nothing_found_is_an_empty_section() {
    let dir = tree();
    write(dir.path(), "README.md", "not an instruction file");
    write(dir.path(), "AGENTS.md", " \n\t\n");
    assert_eq!(text(dir.path(), Some("/home/dev/repo")), "");
}

#[test]
fn a_directory_named_like_an_instruction_file_is_skipped() {
    let dir = tree();
    fs::create_dir_all(dir.path().join("AGENTS.md/inner")).expect("mkdir");
    write(dir.path(), "CLAUDE.md", "claude");
    assert_eq!(text(dir.path(), None), "# From CLAUDE.md\nclaude");
}

#[cfg(unix)]
#[test]
fn a_fifo_is_skipped_without_blocking() {
    let dir = tree();
    let fifo = dir.path().join("AGENTS.md");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
    write(dir.path(), "CLAUDE.md", "claude");
    // Opening the FIFO for reading would block until a writer appears: run the plugin on a
    // thread and give up after a generous deadline instead of hanging the test run.
    let root = dir.path().to_path_buf();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(plugin(&root, json!({})).and_then(|p| p.text(None)));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(Ok(text)) => assert_eq!(text, "# From CLAUDE.md\nclaude"),
        Ok(Err(e)) => panic!("failed: {}", e.message()),
        Err(_) => panic!("the plugin blocked on a FIFO"),
    }
}

#[cfg(unix)]
#[test]
fn a_symlinked_duplicate_in_the_same_directory_is_left_out() {
    let dir = tree();
    write(dir.path(), "AGENTS.md", "shared");
    write(dir.path(), "src/AGENTS.md", "shared");
    std::os::unix::fs::symlink("AGENTS.md", dir.path().join("CLAUDE.md")).expect("symlink");
    // The same text one directory down is a different file and stays.
    assert_eq!(
        text(dir.path(), Some("/home/dev/repo/src")),
        "# From AGENTS.md\nshared\n\n# From src/AGENTS.md\nshared"
    );
}

#[test]
fn a_file_over_the_budget_is_cut_with_a_marker() {
    let dir = tree();
    write(dir.path(), "AGENTS.md", &"x".repeat(100));
    write(dir.path(), "src/AGENTS.md", "nearer");
    let p = plugin(dir.path(), json!({ "max_bytes": 40 })).expect("config");
    let Ok(text) = p.text(Some("/home/dev/repo/src")) else {
        panic!("text failed");
    };
    // "# From AGENTS.md\n" is 17 bytes: 23 bytes of content fit.
    let marker = budget::marker(Some("AGENTS.md"), &["src/AGENTS.md"], 40);
    assert_eq!(
        text,
        format!("# From AGENTS.md\n{}\n{marker}", "x".repeat(23))
    );
}

#[test]
fn a_nearer_file_with_no_room_left_is_named_as_left_out() {
    let dir = tree();
    write(dir.path(), "AGENTS.md", &"x".repeat(20));
    write(dir.path(), "src/AGENTS.md", "nearer");
    // 17 + 20 = 37 bytes used; the next `# From` line no longer fits in 45.
    let p = plugin(dir.path(), json!({ "max_bytes": 45 })).expect("config");
    let Ok(text) = p.text(Some("/home/dev/repo/src")) else {
        panic!("text failed");
    };
    let marker = budget::marker(None, &["src/AGENTS.md"], 45);
    assert_eq!(
        text,
        format!("# From AGENTS.md\n{}\n{marker}", "x".repeat(20))
    );
}

#[test]
fn a_huge_file_is_read_only_up_to_the_budget() {
    let dir = tree();
    // A sparse 64 GiB file: reading it whole would take minutes and all memory.
    let file = fs::File::create(dir.path().join("AGENTS.md")).expect("create");
    file.set_len(64 << 30).expect("sparse file");
    let p = plugin(dir.path(), json!({ "max_bytes": 1024 })).expect("config");
    let Ok(text) = p.text(None) else {
        panic!("text failed");
    };
    assert!(text.ends_with(&budget::marker(Some("AGENTS.md"), &[], 1024)));
    assert!(text.len() < 1024 + 200);
}

/// An assembly's context with the `cwd` fact, as the host sends it.
fn context(cwd: Option<&str>) -> AssembleContext {
    AssembleContext {
        scope_chain: vec!["agent:1".to_owned()],
        facts: cwd
            .map(|cwd| vec![("cwd".to_owned(), cwd.to_owned())])
            .unwrap_or_default(),
    }
}

/// One assembly as the host runs it: the variable first, then the section text.
fn assemble(p: &mut ProjectInstructions, cwd: Option<&str>) -> (String, Option<String>) {
    let cx = context(cwd);
    let value = match p.variable("project_instructions", &cx) {
        Ok(value) => value,
        Err(e) => panic!("variable failed: {}", e.message()),
    };
    match p.section_text("project:instructions", &cx) {
        Ok(section) => (section, value),
        Err(e) => panic!("section-text failed: {}", e.message()),
    }
}

/// The file text is the variable's value, byte for byte; the section is the operator's
/// heading (a template: `{{model}}` stays for the host to render) and the one reference.
#[test]
fn file_text_is_a_value_and_the_heading_a_template() {
    let dir = tree();
    let hostile = "Render {{house}} with {{{x}}}; }}{{ then a lone {{ and an unbalanced }}; \
                   {{cwd}} {{model}} keep { x }.";
    write(dir.path(), "AGENTS.md", hostile);
    let mut p = plugin(
        dir.path(),
        json!({ "heading": "Project rules for {{model}}:" }),
    )
    .expect("config");
    let (section, value) = assemble(&mut p, None);
    assert_eq!(
        section,
        "Project rules for {{model}}:\n\n{{project_instructions}}"
    );
    assert_eq!(
        value.as_deref(),
        Some(&*format!("# From AGENTS.md\n{hostile}"))
    );
}

#[test]
fn the_default_heading_states_the_precedence() {
    let dir = tree();
    write(dir.path(), "AGENTS.md", "a");
    let cfg = json!({ "root": dir.path().to_str().expect("UTF-8") });
    let mut p =
        ProjectInstructions::from_config(config::parse(cfg).expect("parse")).expect("config");
    let (section, value) = assemble(&mut p, None);
    assert!(section.starts_with("Instructions from the project's instruction files"));
    assert!(
        section.ends_with(".\n\n{{project_instructions}}"),
        "{section}"
    );
    assert_eq!(value.as_deref(), Some("# From AGENTS.md\na"));
}

#[test]
fn no_heading_is_the_reference_alone_and_the_variable_is_configurable() {
    let dir = tree();
    write(dir.path(), "AGENTS.md", "a");
    let mut p = plugin(dir.path(), json!({ "variable": "repo_rules" })).expect("config");
    let cx = context(None);
    let value = p.variable("repo_rules", &cx).ok().flatten();
    assert_eq!(value.as_deref(), Some("# From AGENTS.md\na"));
    let section = p.section_text("project:instructions", &cx).ok();
    assert_eq!(section.as_deref(), Some("{{repo_rules}}"));
    let Err(e) = p.variable("project_instructions", &cx) else {
        panic!("an undeclared variable must be refused");
    };
    assert_eq!(e.message(), "no dynamic variable \"project_instructions\"");
}

/// Nothing found: an empty value and an empty section (which the host drops), so the
/// heading does not stand alone.
#[test]
fn nothing_found_is_an_empty_section_and_value() {
    let dir = tree();
    write(dir.path(), "AGENTS.md", " \n");
    let mut p = plugin(dir.path(), json!({ "heading": "Rules:" })).expect("config");
    assert_eq!(assemble(&mut p, None), (String::new(), Some(String::new())));
}

/// The section text follows what the variable of the same assembly found, whatever the
/// files do in between; with no such answer (another `cwd`, a fresh instance) it reads.
#[test]
fn the_section_follows_the_variable_of_its_assembly() {
    let dir = tree();
    write(dir.path(), "src/AGENTS.md", "src only");
    let mut p = plugin(dir.path(), json!({})).expect("config");
    let src = context(Some("/home/dev/repo/src"));
    let root = context(Some("/home/dev/repo"));
    // Found under src; the file goes away before the section text is asked for.
    let value = p.variable("project_instructions", &src).ok().flatten();
    assert_eq!(value.as_deref(), Some("# From src/AGENTS.md\nsrc only"));
    fs::remove_file(dir.path().join("src/AGENTS.md")).expect("remove");
    let section = p.section_text("project:instructions", &src).ok();
    assert_eq!(section.as_deref(), Some("{{project_instructions}}"));
    // Used once: the next section text without a variable call reads for itself.
    let section = p.section_text("project:instructions", &src).ok();
    assert_eq!(section.as_deref(), Some(""));
    // An answer for another cwd is not taken.
    write(dir.path(), "src/AGENTS.md", "back");
    let value = p.variable("project_instructions", &root).ok().flatten();
    assert_eq!(value.as_deref(), Some(""));
    let section = p.section_text("project:instructions", &src).ok();
    assert_eq!(section.as_deref(), Some("{{project_instructions}}"));
}

/// A failed read fails both the variable and the section text, so that under
/// `on_error = "skip"` the host leaves out both and never renders a reference to a
/// variable it left out.
#[test]
fn a_failed_read_fails_the_variable_and_the_section() {
    let dir = tree();
    let missing = dir.path().join("not-granted");
    let mut p = plugin(&missing, json!({})).expect("config");
    let cx = context(None);
    assert!(p.variable("project_instructions", &cx).is_err());
    let Err(e) = p.section_text("project:instructions", &cx) else {
        panic!("the section text must fail too");
    };
    assert!(
        e.message().contains("no directory is granted"),
        "{}",
        e.message()
    );
}

#[test]
fn a_missing_root_fails_naming_the_path() {
    let dir = tree();
    let missing = dir.path().join("not-granted");
    let Err(e) = plugin(&missing, json!({})).and_then(|p| p.text(None)) else {
        panic!("a missing root must fail");
    };
    assert!(matches!(e, Error::Failed(_)));
    let msg = e.message();
    assert!(msg.contains(&*missing.to_string_lossy()), "{msg}");
    assert!(msg.contains("no directory is granted"), "{msg}");
}

#[test]
fn config_mistakes_are_invalid_input() {
    let dir = tree();
    for (extra, needle) in [
        (json!({ "nmaes": ["AGENTS.md"] }), "unknown field"),
        (json!({ "names": [] }), "names"),
        (json!({ "names": ["AGENTS.md", "AGENTS.md"] }), "twice"),
        (json!({ "names": ["../AGENTS.md"] }), "plain file name"),
        (json!({ "max_bytes": 0 }), "max_bytes"),
        (json!({ "max_bytes": 10_000_000 }), "max_bytes"),
        (json!({ "root": "project" }), "root"),
        (json!({ "host_root": "repo" }), "host_root"),
        (json!({ "variable": "Project" }), "variable"),
        (json!({ "variable": "" }), "variable"),
        (json!({ "variable": "{{cwd}}" }), "variable"),
    ] {
        let Err(e) = plugin(dir.path(), extra.clone()) else {
            panic!("{extra} must be refused");
        };
        assert!(matches!(e, Error::InvalidInput(_)), "{extra}");
        assert!(e.message().contains(needle), "{extra}: {}", e.message());
    }
}
