//! The plugin author's loop: `prompt-host dev` rebuilding and hot-reloading a real Rust
//! plugin as its source is edited (once into a broken state), a failed build shown by its
//! first error, host.toml edits loading the deployment again, `reload_plugin` through the
//! library and `serve`, `prompt-host call`, and `--log-level`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::json;

use crate::integration::support::cli::{bin, Deployment};
use crate::integration::support::serve::Served;

/// The repository (the tests crate's parent).
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The plugin's source with `text` as its fixed section.
pub(crate) fn source(text: &str) -> String {
    format!(
        "use prompt_plugin::{{declare, Error, Plugin}};\n\n\
         struct Probe;\n\n\
         impl Plugin for Probe {{\n    \
             fn init(_config: prompt_plugin::serde_json::Value) -> Result<Self, Error> {{\n        \
                 prompt_plugin::log::info(\"devloop init\");\n        \
                 declare::section(\"devloop:text\", 50.0, {text:?})?;\n        \
                 Ok(Probe)\n    \
             }}\n\
         }}\n\n\
         prompt_plugin::export_plugin!(Probe);\n"
    )
}

/// A plugin project in a directory, built once for wasm32-wasip2, that `dev` rebuilds.
pub(crate) struct Probe {
    /// The project directory.
    pub project: PathBuf,
    /// The target directory its builds use (the guests', which holds the SDK's stack).
    pub target_dir: PathBuf,
}

impl Probe {
    /// The build command `dev` runs.
    pub const BUILD: &'static str = "cargo build --release --target wasm32-wasip2";

    /// Project `name` in `dir`, whose fixed section says `text`, built; with `dir/host.toml`
    /// loading it as plugin "probe", rebuilt by `dev` when its sources change.
    pub fn built(dir: &Path, name: &str, text: &str) -> Self {
        let project = dir.join(name);
        std::fs::create_dir_all(project.join("src")).unwrap();
        // The guests' target dir already holds the wit-bindgen stack for wasm32-wasip2.
        let target_dir = repo().join("target").join("guests");
        std::fs::write(
            project.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\nprompt-plugin = {{ path = {:?} }}\n\n[workspace]\n",
                repo().join("guest-examples").join("sdk").display().to_string()
            ),
        )
        .unwrap();
        std::fs::write(project.join("src/lib.rs"), source(text)).unwrap();
        let status = Command::new("sh")
            .args(["-c", Self::BUILD])
            .current_dir(&project)
            .env("CARGO_TARGET_DIR", &target_dir)
            .status()
            .unwrap();
        assert!(status.success());
        let wasm = target_dir
            .join("wasm32-wasip2/release")
            .join(format!("{}.wasm", name.replace('-', "_")));
        std::fs::write(
            dir.join("host.toml"),
            format!(
                "[prompt]\ntokenizer = \"cl100k_base\"\n\n[[plugin]]\nname = \"probe\"\nwasm = {:?}\ndev = {{ build = \"{}\", watch = [\"{name}/src\"], dir = \"{name}\" }}\n",
                wasm.display().to_string(),
                Self::BUILD
            ),
        )
        .unwrap();
        Self {
            project,
            target_dir,
        }
    }
}

pub(crate) fn lines_of(child: &mut std::process::Child) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Lines up to (and including) the first that starts with `marker`.
pub(crate) fn until(rx: &Receiver<String>, marker: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(240)) {
            Ok(line) => {
                let done = line.starts_with(marker);
                seen.push(line);
                if done {
                    return seen;
                }
            }
            Err(e) => panic!("no `{marker}` line ({e}); saw:\n{}", seen.join("\n")),
        }
    }
}

#[test]
fn dev_rebuilds_and_reloads_a_plugin_and_keeps_it_when_a_build_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let probe = Probe::built(dir.path(), "devloop-probe", "Version one.");
    let (project, target_dir) = (&probe.project, &probe.target_dir);
    let mut child = Command::new(bin())
        .args([
            "dev",
            "--config",
            dir.path().join("host.toml").to_str().unwrap(),
        ])
        .args(["--interval-ms", "200", "--max-rounds", "3"])
        .env("PROMPT_HOST_CACHE_DIR", dir.path().join("cache"))
        .env("CARGO_TARGET_DIR", target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut child);
    let first = until(&rx, "== end of prompt");
    assert!(first.iter().any(|l| l == "Version one."), "{first:#?}");

    std::fs::write(project.join("src/lib.rs"), source("Version two.")).unwrap();
    let second = until(&rx, "== cache prefix");
    assert!(
        second
            .iter()
            .any(|l| l.starts_with("== reloaded plugin \"probe\"")),
        "{second:#?}"
    );
    assert!(second.iter().any(|l| l == "Version two."), "{second:#?}");
    assert!(
        second.contains(&"- Version one.".to_string())
            && second.contains(&"+ Version two.".to_string()),
        "{second:#?}"
    );
    assert!(
        second
            .last()
            .unwrap()
            .contains("first changed section: devloop:text"),
        "{second:#?}"
    );

    // A broken edit: the build fails and the running plugin stays.
    std::fs::write(project.join("src/lib.rs"), "this is not rust").unwrap();
    let broken = until(&rx, "== build failed for plugin \"probe\"");
    assert!(
        !broken.iter().any(|l| l.starts_with("== reloaded")),
        "{broken:#?}"
    );

    // Fixed again: the diff starts from version two, which kept serving meanwhile.
    std::fs::write(project.join("src/lib.rs"), source("Version three.")).unwrap();
    let third = until(&rx, "== cache prefix");
    assert!(
        third.contains(&"- Version two.".to_string())
            && third.contains(&"+ Version three.".to_string()),
        "{third:#?}"
    );
    // What the change cost: the plugin calls of the new assembly, then its tokens.
    let costs = until(&rx, "== tokens (cl100k_base): ");
    let timings = costs
        .iter()
        .find(|l| l.starts_with("== timings: "))
        .unwrap_or_else(|| panic!("{costs:#?}"));
    assert!(timings.contains(" plugin calls, "), "{timings}");
    let tokens = costs.last().unwrap();
    let figures: Vec<i64> = tokens
        .trim_start_matches("== tokens (cl100k_base): ")
        .split(|c: char| !(c.is_ascii_digit() || c == '-' || c == '+'))
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(figures.len(), 3, "{tokens}");
    assert_eq!(figures[0] - figures[1], figures[2], "{tokens}");
    until(&rx, "== stopping after 3 round(s)");
    assert!(child.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_plugin_swaps_in_one_step_or_keeps_the_old_plugin() {
    use prompt_host::{Facts, Host, PluginSpec, PromptConfig, RuntimeConfig};
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(
        PromptConfig::default(),
        RuntimeConfig::with_cache_dir(dir.path()),
    )
    .unwrap();
    let config =
        json!({"sections": [{"name": "s", "order": 1, "text": {"dynamic": "call ${call}"}}]});
    let id = host.attach(
        host.load_plugin(
            PluginSpec::new("p").config(config),
            std::path::Path::new(env!("GUEST_DECLARE")),
        )
        .unwrap(),
    );
    let render = || async { host.render(None, Facts::new()).await.unwrap().prompt };
    assert!(render().await.ends_with("call 1"));
    // The rebuilt plugin (here: its 0.2.0 build) starts from a fresh instance.
    let declared = host
        .reload_plugin(id, env!("GUEST_DECLARE_V2").as_ref())
        .unwrap();
    assert_eq!(declared.len(), 1);
    assert!(render().await.ends_with("call 1"));
    assert!(render().await.ends_with("call 2"));
    // A component whose init refuses the config: the running plugin stays.
    let error = host
        .reload_plugin(id, env!("GUEST_PERSONA").as_ref())
        .unwrap_err();
    assert!(
        error.to_string().contains("plugin \"p\" export \"init\""),
        "{error}"
    );
    assert!(render().await.ends_with("call 3"));
    assert_eq!(host.plugins().len(), 1);
    let unknown = host
        .reload_plugin(prompt_host::PluginId(999), env!("GUEST_DECLARE").as_ref())
        .unwrap_err();
    assert_eq!(unknown.to_string(), "no plugin with id 999 is loaded");
}

#[test]
fn reload_plugin_through_serve() {
    let d = Deployment::new("");
    let mut served = Served::start(&[], &d.path("cache"));
    served.ok("bind_scope", json!({"scope": "agent:1"}));
    let id = served.ok(
        "load_plugin",
        json!({"name": "p", "wasm": env!("GUEST_PERSONA"), "scope": "agent:1", "config": {"text": "Old persona."}}),
    )["id"]
        .clone();
    let render = |served: &mut Served| {
        served.ok("render", json!({"scope": "agent:1"}))["prompt"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(render(&mut served).ends_with("Old persona."));
    let reloaded = served.ok(
        "reload_plugin",
        json!({"id": id, "wasm": env!("GUEST_PERSONA_V2")}),
    );
    assert_eq!(reloaded, json!({"id": id, "declarations": 1}));
    assert!(render(&mut served).ends_with("Old persona."));
    let failed = served.call(
        "reload_plugin",
        json!({"id": id, "wasm": env!("GUEST_DECLARE")}),
    );
    assert_eq!(failed["error"]["data"]["kind"], "plugin", "{failed}");
    assert!(render(&mut served).ends_with("Old persona."));
    let unknown = served.call(
        "reload_plugin",
        json!({"id": 77, "wasm": env!("GUEST_PERSONA")}),
    );
    assert_eq!(unknown["error"]["data"]["kind"], "unknown-plugin");
}

#[test]
fn call_runs_one_export_and_shows_the_log_lines_at_the_chosen_level() {
    let d = Deployment::new("");
    let hostile = env!("GUEST_HOSTILE");
    let init = d.run(&[
        "--log-level",
        "info",
        "call",
        hostile,
        "init",
        "--config",
        r#"{"mode":"log_spam","in":"init","count":1}"#,
    ]);
    let out = init.ok();
    assert!(out.starts_with("init: ok in "), "{out}");
    assert!(out.contains("  info: hostile log spam line 0"), "{out}");
    assert!(
        init.stderr
            .contains("plugin \"hostile\" (global) info: hostile log spam line 0"),
        "{}",
        init.stderr
    );
    let callback = d.run(&[
        "--log-level",
        "info",
        "call",
        hostile,
        "section-text",
        "hostile",
        "--config",
        r#"{"mode":"log_spam","in":"section","count":1}"#,
    ]);
    let out = callback.ok();
    assert!(out.contains("section-text \"hostile\": ok in "), "{out}");
    assert!(
        out.contains("\"result\": \"hostile: log spam done\""),
        "{out}"
    );
    assert!(out.contains("  info: hostile log spam line 0"), "{out}");
    // At the default level (warn) the info line is kept in the report but not on stderr.
    let quiet = d.run(&[
        "call",
        hostile,
        "section-text",
        "hostile",
        "--config",
        r#"{"mode":"log_spam","in":"section","count":1}"#,
    ]);
    assert!(quiet.ok().contains("  info: hostile log spam line 0"));
    assert!(
        !quiet.stderr.contains("hostile log spam"),
        "{}",
        quiet.stderr
    );
    // A listener on a given assembly, a variable with facts, a failing export.
    let assembly = d.path("a.json");
    std::fs::write(
        &assembly,
        r#"{"sections":[{"name":"a","text":"x"}],"contexts":[],"tools":[],"variables":{}}"#,
    )
    .unwrap();
    let listener = d.run(&["call", env!("GUEST_DECLARE"), "on-assemble", "l", "--assembly", assembly.to_str().unwrap(),
        "--config", r#"{"listener":{"key":"l","steps":[{"next":true},{"push_section":{"name":"b","text":"y"}}]}}"#]);
    assert!(
        listener.ok().contains("\"name\": \"b\""),
        "{}",
        listener.stdout
    );
    let variable = d.run(&[
        "call",
        env!("GUEST_DECLARE"),
        "variable",
        "v",
        "--fact",
        "model=m7",
        "--config",
        r#"{"variables":[{"name":"v","dynamic":"on ${fact:model}"}]}"#,
    ]);
    assert!(
        variable.ok().contains("\"result\": \"on m7\""),
        "{}",
        variable.stdout
    );
    let failing = d.run(&[
        "call",
        env!("GUEST_DECLARE"),
        "section-text",
        "s",
        "--config",
        r#"{"sections":[{"name":"s","order":1,"text":{"fail":"down"}}]}"#,
    ]);
    assert_eq!(failing.code, 1);
    assert!(
        failing.stderr.contains("section-text \"s\" failed in"),
        "{}",
        failing.stderr
    );
    // render hides info lines by default and shows them at --log-level info.
    let deployment = Deployment::new(&format!(
        "[[plugin]]\nname = \"chatty\"\nwasm = {:?}\nconfig = {{ mode = \"log_spam\", in = \"section\", count = 1 }}\n",
        hostile
    ));
    let config = deployment.config();
    let config = config.to_str().unwrap();
    assert!(!deployment
        .run(&["render", "--config", config])
        .stderr
        .contains("log spam line"));
    assert!(deployment
        .run(&["render", "--config", config, "--log-level", "info"])
        .stderr
        .contains("plugin \"chatty\" (global) info: hostile log spam line 0"));
}

#[test]
fn dropped_output_is_announced() {
    let deployment = Deployment::new(&format!(
        "[[plugin]]\nname = \"spammer\"\nwasm = {:?}\nconfig = {{ mode = \"log_spam\", in = \"section\", count = 5000 }}\nlimits = {{ max_log_bytes = 100 }}\n",
        env!("GUEST_HOSTILE")
    ));
    let run = deployment.run(&["render", "--config", deployment.config().to_str().unwrap()]);
    run.ok();
    assert!(
        run.stderr.contains("warning: plugin \"spammer\" (global): ") && run.stderr.contains("bytes of its stdout and log output dropped so far (more than max_log_bytes = 100 per instance)"),
        "{}",
        run.stderr
    );
}

/// host.toml for [`dev_shows_a_builds_first_error_and_reloads_host_toml_when_it_changes`]:
/// the declare guest with one section, identity off, `text` in it.
fn declaring(text: &str) -> String {
    format!(
        "[prompt]\ninclude_harness_identity = false\n\n[[plugin]]\nname = \"p\"\nwasm = \"dist/plugin.wasm\"\n\
         config = {{ sections = [{{ name = \"greeting\", order = 10, text = {text:?} }}] }}\n\
         [plugin.dev]\nbuild = \"sh fail.sh\"\nwatch = [\"src\"]\n"
    )
}

/// Replace `path` as an editor that saves atomically does: a reader never sees it half
/// written.
fn save(path: &Path, text: &str) {
    let temp = path.with_extension("saving");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

/// The lines `dev` printed after the one starting with `marker` and before the next `== `
/// line, which `next` makes it print.
fn between(
    rx: &Receiver<String>,
    marker: &str,
    next: impl FnOnce(),
    next_marker: &str,
) -> Vec<String> {
    until(rx, marker);
    next();
    let mut seen = until(rx, next_marker);
    seen.pop();
    seen
}

#[test]
fn dev_shows_a_builds_first_error_and_reloads_host_toml_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("dist")).unwrap();
    std::fs::write(root.join("src/plugin.txt"), "one").unwrap();
    std::fs::copy(env!("GUEST_DECLARE"), root.join("dist/plugin.wasm")).unwrap();
    // A build that fails as cargo does: progress, the error that is the cause, 30 lines of
    // notes, the summary — the cause well above the last 20 lines.
    std::fs::write(
        root.join("fail.sh"),
        "exec 1>&2\n\
         for i in $(seq 1 30); do echo \"   Compiling dep-$i v0.1.0\"; done\n\
         printf 'error[E0425]: cannot find value `x` in this scope\\n --> src/lib.rs:3:5\\n  |\\n3 |     x\\n  |     ^ not found in this scope\\n\\n'\n\
         for i in $(seq 1 30); do echo \"note: more $i\"; done\n\
         echo 'error: could not compile `probe` (lib) due to 1 previous error'\n\
         exit 101\n",
    )
    .unwrap();
    let config = root.join("host.toml");
    std::fs::write(&config, declaring("One.")).unwrap();
    let mut child = Command::new(bin())
        .args([
            "dev",
            "--config",
            "host.toml",
            "--interval-ms",
            "50",
            "--max-rounds",
            "4",
        ])
        .current_dir(root)
        .env("PROMPT_HOST_CACHE_DIR", root.join("cache"))
        .env(
            crate::integration::support::cli::QUIET_PROGRESS.0,
            crate::integration::support::cli::QUIET_PROGRESS.1,
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let rx = lines_of(&mut child);
    let first = until(&rx, "== end of prompt");
    assert!(first.contains(&"One.".to_string()), "{first:#?}");

    // A failed build: its first error, then its last 20 lines.
    std::fs::write(root.join("src/plugin.txt"), "two, longer").unwrap();
    let failed = between(
        &rx,
        "== build failed for plugin \"p\"; the running plugin stays loaded",
        || save(&config, &declaring("Second.")),
        "== host.toml changed: loading the deployment again",
    );
    let mut expected = vec![
        "`sh fail.sh` exited with exit status: 101; its first error:".to_string(),
        "error[E0425]: cannot find value `x` in this scope".into(),
        " --> src/lib.rs:3:5".into(),
        "  |".into(),
        "3 |     x".into(),
        "  |     ^ not found in this scope".into(),
        "… and the last 20 lines of its output:".into(),
    ];
    expected.extend((12..=30).map(|i| format!("note: more {i}")));
    expected.push("error: could not compile `probe` (lib) due to 1 previous error".into());
    assert_eq!(failed, expected);

    // host.toml changed: a new deployment, its prompt and how it differs.
    let reloaded = until(&rx, "== cache prefix");
    assert_eq!(
        reloaded[..3],
        [
            "== reloaded host.toml (1 plugin(s))",
            "== watching plugin \"p\": sources src, build `sh fail.sh`",
            "== prompt (7 bytes)",
        ],
        "{reloaded:#?}"
    );
    assert!(
        reloaded.contains(&"- One.".to_string()) && reloaded.contains(&"+ Second.".to_string()),
        "{reloaded:#?}"
    );

    // A host.toml toml refuses: said with its snippet; the running deployment stays.
    save(&config, &format!("confg={{}}\n{}", declaring("Never.")));
    let failed = until(&rx, "== loading host.toml failed");
    assert_eq!(
        failed.last().map(String::as_str),
        Some(
            "== loading host.toml failed; the running deployment stays loaded: host.toml: line 1, column 1: unknown field `confg`, expected one of `prompt`, `host`, `scope`, `plugin`, `sessions`, `mcp`"
        ),
        "{failed:#?}"
    );
    save(&config, &declaring("Third one."));
    let snippet = until(&rx, "== host.toml changed");
    assert_eq!(
        snippet,
        [
            "  |",
            "1 | confg={}",
            "  | ^^^^^",
            "== host.toml changed: loading the deployment again",
        ]
    );
    // Fixed: the diff starts from the deployment that kept serving.
    let third = until(&rx, "== cache prefix");
    assert!(
        third.contains(&"- Second.".to_string()) && third.contains(&"+ Third one.".to_string()),
        "{third:#?}"
    );
    until(&rx, "== stopping after 4 round(s)");
    assert!(child.wait().unwrap().success());
}
