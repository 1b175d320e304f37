//! Capabilities granted in host.toml, through the command line and `serve`, on real
//! directory trees: the `project-instructions` and `git-context` plugins reading a granted
//! repository, and a hostile plugin trying to leave it, block the host or write to it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::integration::support::cli::Deployment;
use crate::integration::support::serve::Served;

fn path(p: &Path) -> String {
    Value::String(p.display().to_string()).to_string()
}

/// A repository tree: instruction files at three levels, a `.git` on branch `main`.
fn repo(root: &Path) -> PathBuf {
    let repo = root.join("repo");
    for (dir, text) in [
        ("", "Root rules."),
        ("src", "Source rules."),
        ("src/app", "App rules."),
    ] {
        std::fs::create_dir_all(repo.join(dir)).unwrap();
        std::fs::write(repo.join(dir).join("AGENTS.md"), text).unwrap();
    }
    std::fs::create_dir_all(repo.join(".git/refs/heads")).unwrap();
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        repo.join(".git/refs/heads/main"),
        format!("{}\n", "1a2b3c4d".repeat(5)),
    )
    .unwrap();
    std::fs::write(
        repo.join(".git/refs/heads/feature"),
        format!("{}\n", "9f8e7d6c".repeat(5)),
    )
    .unwrap();
    repo
}

/// A deployment of both plugins in `agent:1`, with (`granted`) or without the grant, each
/// call given [`CALL_TIMEOUT_MS`].
fn deployment(repo: &Path, granted: bool) -> Deployment {
    let grants = |guest: &str| {
        if granted {
            format!(
                "grants = {{ dirs = [{{ host = {}, guest = \"{guest}\" }}] }}\n",
                path(repo)
            )
        } else {
            String::new()
        }
    };
    Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\n\n[[scope]]\nname = \"agent:1\"\n\n\
         [[plugin]]\nname = \"instructions\"\nwasm = {pi}\nscope = \"agent:1\"\n{g1}\
         config = {{ root = \"/project\", host_root = {host}, heading = \"\" }}\n{limits}\n\
         [[plugin]]\nname = \"git\"\nwasm = {gc}\nscope = \"agent:1\"\n{g2}\
         config = {{ root = \"/repo\", host_root = {host} }}\n{limits}",
        pi = path(Path::new(env!("GUEST_PROJECT_INSTRUCTIONS"))),
        gc = path(Path::new(env!("GUEST_GIT_CONTEXT"))),
        g1 = grants("/project"),
        g2 = grants("/repo"),
        host = path(&repo.canonicalize().unwrap()),
        limits = format!("limits = {{ call_timeout_ms = {CALL_TIMEOUT_MS} }}\n"),
    ))
}

/// The deadline of each plugin call in this file's deployments. The tests here are about what
/// a plugin may read, not about the deadline, and the reads of a debug build on a loaded
/// machine pass the 50 ms default one. What bounds a FIFO and a huge file is asserted on its
/// own: the plugin's output budget and the time of the whole command.
const CALL_TIMEOUT_MS: u64 = 10_000;

fn cwd_fact(repo: &Path, below: &str) -> String {
    format!("cwd={}", repo.canonicalize().unwrap().join(below).display())
}

#[test]
fn granted_plugins_read_the_repository_through_the_cli() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo(root.path());
    let d = deployment(&repo, true);
    let config = d.config();
    let config = config.to_str().unwrap();
    let cwd = cwd_fact(&repo, "src/app");
    let rendered = d.run(&[
        "render", "--config", config, "--scope", "agent:1", "--fact", &cwd, "--json",
    ]);
    let rendered = rendered.json();
    assert_eq!(
        rendered["prompt"],
        "# From AGENTS.md\nRoot rules.\n\n# From src/AGENTS.md\nSource rules.\n\n# From src/app/AGENTS.md\nApp rules."
    );
    assert!(
        rendered["context"]
            .as_str()
            .unwrap()
            .ends_with("Git: branch main at 1a2b3c4 (detached: no)"),
        "{rendered}"
    );

    // Steps: an edited instruction file is a new system prompt; a branch switch only a new
    // runtime-context snapshot.
    let session = d.path("s.jsonl");
    let session = session.to_str().unwrap();
    let step = || {
        let run = d.run(&[
            "step",
            "--config",
            config,
            "--scope",
            "agent:1",
            "--fact",
            &cwd,
            "--session",
            session,
        ]);
        run.json()
    };
    let first = step();
    std::fs::write(d.path("before.json"), first.to_string()).unwrap();
    std::fs::write(repo.join("src/AGENTS.md"), "Source rules, edited.").unwrap();
    let second = step();
    assert!(second["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("Source rules, edited."));
    let report = d.run(&[
        "inspect",
        "--config",
        config,
        "--scope",
        "agent:1",
        "--fact",
        &cwd,
        "--against",
        d.path("before.json").to_str().unwrap(),
    ]);
    assert!(
        report
            .ok()
            .contains("first changed section: project:instructions"),
        "{}",
        report.stdout
    );
    let events_before = std::fs::read_to_string(session).unwrap().lines().count();
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature\n").unwrap();
    let third = step();
    let lines: Vec<Value> = std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .skip(events_before)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(!kinds.contains(&"system/message"), "{kinds:?}");
    assert!(kinds.contains(&"user/message"), "{kinds:?}");
    let last = third["messages"].as_array().unwrap().last().unwrap();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("Git: branch feature at 9f8e7d6"),
        "{last}"
    );

    // `inspect` shows what each plugin was granted.
    let inspect = d.run(&[
        "inspect", "--config", config, "--scope", "agent:1", "--fact", &cwd,
    ]);
    let granted = format!(
        "read-only {} at /project",
        repo.canonicalize().unwrap().display()
    );
    assert!(inspect.ok().contains(&granted), "{}", inspect.stdout);
}

/// What a user's instruction file says, with every brace form strict rendering treats
/// specially: references to a fact (`cwd`, `model`) and to another plugin's variable
/// (`house`), a malformed group, `}}{{`, a lone `{{` and an unbalanced `}}`.
const HOSTILE_INSTRUCTIONS: &str = "Keep {{house}} as written; {{{x}}} too.\n\
     }}{{ then a lone {{ and an unbalanced }} here.\n\
     Work in {{cwd}} on {{model}}.";

/// A user's `AGENTS.md` is not a template: through `prompt-host render` it reaches the prompt
/// byte for byte and reads no variable, although `house`, `cwd` and `model` all have values;
/// the operator's heading around it still is one.
#[test]
fn instruction_files_reach_the_prompt_byte_for_byte_and_read_no_variable() {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("AGENTS.md"), HOSTILE_INSTRUCTIONS).unwrap();
    let d = Deployment::new(&format!(
        "[prompt]\ninclude_harness_identity = false\n\n[[scope]]\nname = \"agent:1\"\n\n\
         [[plugin]]\nname = \"house\"\nwasm = {declare}\n\
         config = {{ variables = [{{ name = \"house\", value = \"THE HOUSE VALUE\" }}] }}\n\n\
         [[plugin]]\nname = \"instructions\"\nwasm = {pi}\nscope = \"agent:1\"\n\
         grants = {{ dirs = [{{ host = {host}, guest = \"/project\" }}] }}\n\
         config = {{ host_root = {host}, heading = \"Rules for {{{{model}}}}:\" }}\n\
         limits = {{ call_timeout_ms = {CALL_TIMEOUT_MS} }}\n",
        declare = path(Path::new(env!("GUEST_DECLARE"))),
        pi = path(Path::new(env!("GUEST_PROJECT_INSTRUCTIONS"))),
        host = path(&repo.canonicalize().unwrap()),
    ));
    let config = d.config();
    let config = config.to_str().unwrap();
    let cwd = format!("cwd={}", repo.canonicalize().unwrap().display());
    let args = [
        "--config",
        config,
        "--scope",
        "agent:1",
        "--fact",
        cwd.as_str(),
        "--fact",
        "model=deepseek-v4",
    ];
    let rendered = d.run(&[&["render", "--json"], &args[..]].concat()).json();
    assert_eq!(
        rendered["prompt"],
        format!("Rules for deepseek-v4:\n\n# From AGENTS.md\n{HOSTILE_INSTRUCTIONS}")
    );
    // The section is the heading and one reference; the file is the variable's value.
    let assembled = d.run(&[&["assemble"], &args[..]].concat()).json();
    assert_eq!(
        assembled["sections"],
        json!([
            {"name": "deployment:persona", "text": ""},
            {"name": "project:instructions", "text": "Rules for {{model}}:\n\n{{project_instructions}}"},
        ])
    );
    assert_eq!(
        assembled["variables"]["project_instructions"],
        format!("# From AGENTS.md\n{HOSTILE_INSTRUCTIONS}")
    );
}

#[test]
fn without_a_grant_the_plugins_fail_to_read_and_say_so() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo(root.path());
    let d = deployment(&repo, false);
    let run = d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:1",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("plugin \"instructions\" export \"variable\"")
            && run
                .stderr
                .contains("no directory is granted at that guest path"),
        "{}",
        run.stderr
    );
}

#[test]
fn symlinks_out_of_the_root_are_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo(root.path());
    let outside = root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "SECRET").unwrap();
    std::fs::remove_file(repo.join("src/AGENTS.md")).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.md"), repo.join("src/AGENTS.md")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("escape")).unwrap();
    let d = deployment(&repo, true);
    let cwd = cwd_fact(&repo, "src/app");
    let run = d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:1",
        "--fact",
        &cwd,
    ]);
    assert!(
        !run.stdout.contains("SECRET") && !run.stderr.contains("SECRET"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    // A hostile plugin asking for the same file directly, and through `..`.
    let hostile = |file: &str| {
        Deployment::new(&format!(
            "[[plugin]]\nname = \"reader\"\nwasm = {}\ngrants = {{ dirs = [{{ host = {}, guest = \"/project\" }}] }}\nconfig = {{ mode = \"read_file\", in = \"section\", path = \"{file}\" }}\n\
             limits = {{ call_timeout_ms = {CALL_TIMEOUT_MS} }}\n",
            path(Path::new(env!("GUEST_HOSTILE"))),
            path(&repo)
        ))
    };
    for file in [
        "/project/src/AGENTS.md",
        "/project/escape/secret.md",
        "/project/../outside/secret.md",
    ] {
        let d = hostile(file);
        let run = d.run(&["render", "--config", d.config().to_str().unwrap()]);
        assert_eq!(run.code, 1, "{file}: {}", run.stdout);
        assert!(
            run.stderr.contains(&format!(
                "plugin \"reader\" export \"section-text\" (global): failed: cannot read {file}"
            )),
            "{file}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("SECRET"));
    }
}

#[test]
fn a_fifo_a_huge_file_and_writes_inside_the_root_fail_in_the_plugin() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo(root.path());
    let status = Command::new("mkfifo")
        .arg(repo.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    // 100 MB, sparse: cheap to make, endless to read for a plugin with a 64 MiB memory.
    let huge = std::fs::File::create(repo.join("huge.md")).unwrap();
    huge.set_len(100 << 20).unwrap();
    let hostile = |mode: &str, file: &str| {
        Deployment::new(&format!(
            "[[plugin]]\nname = \"reader\"\nwasm = {}\ngrants = {{ dirs = [{{ host = {}, guest = \"/project\" }}] }}\nconfig = {{ mode = \"{mode}\", in = \"section\", path = \"{file}\" }}\n\
             limits = {{ call_timeout_ms = {CALL_TIMEOUT_MS} }}\n",
            path(Path::new(env!("GUEST_HOSTILE"))),
            path(&repo)
        ))
    };
    for (file, needle) in [
        ("/project/pipe", "cannot read /project/pipe"),
        (
            "/project/huge.md",
            "plugin \"reader\" export \"section-text\"",
        ),
    ] {
        let d = hostile("read_file", file);
        let started = Instant::now();
        let run = d.run(&["render", "--config", d.config().to_str().unwrap()]);
        assert_eq!(run.code, 1, "{file}: {}", run.stdout);
        assert!(run.stderr.contains(needle), "{file}: {}", run.stderr);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{file}: {:?}",
            started.elapsed()
        );
    }
    // Writes, renames, deletes and directories all fail inside the plugin.
    let d = hostile("write_file", "/project/AGENTS.md");
    let run = d.run(&["render", "--config", d.config().to_str().unwrap()]);
    let text = run.ok();
    for what in ["create", "rename", "delete", "mkdir"] {
        assert!(text.contains(&format!("{what}: error:")), "{what}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("AGENTS.md")).unwrap(),
        "Root rules."
    );
    assert!(!repo.join("AGENTS.md.moved").exists());
    // The project-instructions plugin skips the FIFO and cuts the huge file at its budget.
    std::fs::rename(repo.join("huge.md"), repo.join("src/AGENTS.md")).unwrap();
    std::fs::remove_file(repo.join("src/app/AGENTS.md")).unwrap();
    std::fs::rename(repo.join("pipe"), repo.join("src/app/AGENTS.md")).unwrap();
    let d = deployment(&repo, true);
    let cwd = cwd_fact(&repo, "src/app");
    let started = Instant::now();
    let run = d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:1",
        "--fact",
        &cwd,
    ]);
    let prompt = run.ok();
    assert!(prompt.contains("src/AGENTS.md was cut here"), "{prompt}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn grants_through_serve_are_applied_and_listed() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo(root.path());
    let d = Deployment::new("");
    let mut served = Served::start(&[], &d.path("cache"));
    served.ok("bind_scope", json!({"scope": "agent:1"}));
    let host_root = repo.canonicalize().unwrap();
    let load = |served: &mut Served, grants: Value| {
        served.call("load_plugin", json!({
            "name": "instructions", "wasm": env!("GUEST_PROJECT_INSTRUCTIONS"), "scope": "agent:1",
            "config": {"root": "/project", "host_root": host_root, "heading": ""},
            "grants": grants,
            // The file reads of a debug build on a loaded machine can pass the 50 ms default.
            "limits": {"call_timeout_ms": 2000},
        }))
    };
    let id = load(
        &mut served,
        json!({"dirs": [{"host": repo, "guest": "/project"}], "env": ["HOME"]}),
    )["result"]["id"]
        .clone();
    let cwd = host_root.join("src").display().to_string();
    let rendered = served.ok("render", json!({"scope": "agent:1", "facts": {"cwd": cwd}}));
    assert!(
        rendered["prompt"]
            .as_str()
            .unwrap()
            .ends_with("\n\n# From AGENTS.md\nRoot rules.\n\n# From src/AGENTS.md\nSource rules."),
        "{rendered}"
    );
    let plugins = served.ok("plugins", json!({}));
    assert_eq!(
        plugins[0]["grants"],
        json!({"dirs": [{"host": host_root, "guest": "/project"}], "env": ["HOME"], "http": []})
    );
    served.ok("dispose_plugin", json!({"id": id}));
    // Bad grants are refused by key.
    let refused = load(
        &mut served,
        json!({"dirs": [{"host": repo, "guest": "project"}]}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("grants.dirs[0].guest"));
    // Without a grant, the plugin says why it cannot read.
    load(&mut served, json!({}));
    let error = served.err("render", json!({"scope": "agent:1"}));
    assert!(
        error.contains("no directory is granted at that guest path"),
        "{error}"
    );
}

#[test]
fn check_shows_and_applies_grants() {
    let root = tempfile::tempdir().unwrap();
    let repo = repo(root.path());
    let d = Deployment::new("");
    let grant = format!("{}:/repo", repo.display());
    let run = d.run(&[
        "check",
        env!("GUEST_GIT_CONTEXT"),
        "--grant-dir",
        &grant,
        "--grant-env",
        "HOME",
    ]);
    let out = run.ok();
    assert!(
        out.contains(&format!(
            "grants:  read-only {} at /repo; env HOME",
            repo.canonicalize().unwrap().display()
        )),
        "{out}"
    );
    let none = d.run(&[
        "check",
        env!("GUEST_PERSONA"),
        "--config",
        "{\"text\": \"x\"}",
    ]);
    assert!(none.ok().contains("grants:  none"));
}
