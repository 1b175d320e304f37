//! `Host::from_config` fetches a deployment's files and runs its plugins' `init` side by side,
//! then commits them in host.toml's order. What the registry, the plugin ids and the log see
//! must be what loading the same plugins one by one gives — for a deployment that loads, one
//! whose plugin is refused a declaration by the registry, one whose plugin's `init` fails, and
//! one that skips a failed plugin.

use std::path::Path;
use std::sync::{Arc, Mutex};

use prompt_host::config::HostConfig;
use prompt_host::policy::{OnError, PluginSpec};
use prompt_host::wasm::{PluginLog, RuntimeConfig};
use prompt_host::{Host, HostError};

use crate::integration::support::cli::Deployment;
use crate::integration::support::wasm::render;

/// A plugin log line as the sink got it: plugin, stream, message.
type Line = (String, &'static str, String);

/// A runtime on `cache` whose sink records every plugin line.
fn recorded(cache: &Path) -> (RuntimeConfig, Arc<Mutex<Vec<Line>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let config = RuntimeConfig::with_cache_dir(cache).log_sink(Arc::new(move |l: &PluginLog| {
        sink.lock()
            .unwrap()
            .push((l.plugin.clone(), l.stream, l.message.clone()));
    }));
    (config, lines)
}

/// The deployment through `Host::from_config`.
fn side_by_side(config: &HostConfig, cache: &Path) -> (Result<Host, HostError>, Vec<Line>) {
    let (runtime, lines) = recorded(cache);
    let host = Host::from_config(config, runtime);
    let lines = lines.lock().unwrap().clone();
    (host, lines)
}

/// The same plugins loaded one by one in file order (compile, load, attach), stopping at the
/// first error unless the plugin may be skipped, as `from_config` did before it ran them side
/// by side.
fn one_by_one(config: &HostConfig, cache: &Path) -> (Result<Host, HostError>, Vec<Line>) {
    let (runtime, lines) = recorded(cache);
    let load = || -> Result<Host, HostError> {
        let host = Host::new(config.prompt.clone(), runtime)?;
        for scope in &config.scopes {
            host.bind_scope(&scope.name, scope.parent.as_deref())?;
        }
        for plugin in &config.plugins {
            let mut spec = PluginSpec::new(plugin.name.clone());
            spec.scope = plugin.scope.clone();
            spec.config = serde_json::to_value(&plugin.config).unwrap();
            spec.options = plugin.options.clone();
            let loaded = host
                .compile_plugin(&plugin.name, plugin.wasm.as_path())
                .and_then(|code| host.load_plugin(spec, &code));
            match loaded {
                Ok(loaded) => {
                    host.attach(loaded);
                }
                Err(error) if plugin.on_error == OnError::Skip => host.runtime().announce(
                    &plugin.name,
                    plugin.scope.as_deref(),
                    "skipped",
                    &format!(
                        "{error}; plugin \"{}\" ({}) left out of the deployment (on_error = \"skip\")",
                        plugin.name,
                        prompt_host::wasm::scope_label(plugin.scope.as_deref())
                    ),
                ),
                Err(error) => return Err(error),
            }
        }
        Ok(host)
    };
    let host = load();
    let lines = lines.lock().unwrap().clone();
    (host, lines)
}

/// Load `toml` both ways on one warm cache; both results and both logs.
fn both_ways(toml: &str) -> [(Result<Host, HostError>, Vec<Line>); 2] {
    let d = Deployment::new(toml);
    let config = HostConfig::load(&d.config()).unwrap();
    let cache = d.path("cache");
    // Warm the cache first, so that neither way compiles and both fetch.
    drop(one_by_one(&config, &cache));
    [side_by_side(&config, &cache), one_by_one(&config, &cache)]
}

/// The error of a load that must have failed.
fn failed(host: Result<Host, HostError>) -> HostError {
    match host {
        Ok(_) => panic!("the deployment loaded"),
        Err(error) => error,
    }
}

/// The plugins in the order the log first names them.
fn speakers(lines: &[Line]) -> Vec<&str> {
    let mut order: Vec<&str> = Vec::new();
    for (plugin, _, _) in lines {
        if order.last() != Some(&plugin.as_str()) {
            order.push(plugin);
        }
    }
    order
}

const SCOPES: &str = r#"
[[scope]]
name = "preset:coder"

[[scope]]
name = "agent:1"
parent = "preset:coder"

[[scope]]
name = "agent:2"
parent = "preset:coder"
"#;

/// A `[[plugin]]` table of guest `wasm` (`HOSTILE`, `DECLARE`), with `rest` its other lines.
fn plugin(name: &str, wasm: &str, scope: Option<&str>, rest: &str) -> String {
    let scope = scope
        .map(|s| format!("scope = \"{s}\"\n"))
        .unwrap_or_default();
    format!("\n[[plugin]]\nname = \"{name}\"\nwasm = \"{{{wasm}}}\"\n{scope}{rest}\n")
}

/// A hostile plugin that logs `count` lines in its `init`.
fn chatty(name: &str, scope: Option<&str>, count: u32) -> String {
    let config = format!("config = {{ mode = \"log_spam\", in = \"init\", count = {count} }}");
    plugin(name, "HOSTILE", scope, &config)
}

/// `before` (logs), `broken` (logs, then fails its `init`; `on_error` as given) and `after`
/// (logs), in three scopes.
fn broken_between(on_error: &str) -> String {
    let broken = format!(
        "on_error = \"{on_error}\"\nconfig = {{ mode = \"say\", in = \"init\", text = \"broken on purpose\" }}"
    );
    [
        SCOPES.to_string(),
        chatty("before", None, 2),
        plugin("broken", "HOSTILE", Some("preset:coder"), &broken),
        chatty("after", Some("agent:1"), 2),
    ]
    .concat()
}

#[test]
fn a_deployment_loaded_side_by_side_registers_and_logs_as_one_by_one() {
    let toml = [
        SCOPES.to_string(),
        chatty("chatty", None, 3),
        plugin(
            "printer",
            "HOSTILE",
            Some("preset:coder"),
            r#"config = { mode = "stdout_spam", in = "init", count = 2 }"#,
        ),
        plugin(
            "persona",
            "DECLARE",
            None,
            r#"config = { sections = [{ name = "who", order = 10, text = "You are careful." }, { name = "now", order = 20, text = { dynamic = "in ${scope}" } }] }"#,
        ),
        plugin("dups", "HOSTILE", Some("agent:1"), r#"config = { mode = "duplicate" }"#),
        chatty("chatty-too", Some("agent:2"), 2),
    ]
    .concat();
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways(&toml);
    let (ahead, sequential) = (ahead.unwrap(), sequential.unwrap());

    // The log: every line, in the same order, each plugin heard in its turn.
    assert_eq!(ahead_lines, sequential_lines);
    assert_eq!(
        speakers(&ahead_lines),
        ["chatty", "printer", "chatty-too"],
        "{ahead_lines:#?}"
    );
    assert_eq!(ahead_lines.len(), 3 + 2 * 2 + 2, "{ahead_lines:#?}");

    // The plugins, kept in file order.
    let names =
        |host: &Host| -> Vec<String> { host.plugins().into_iter().map(|p| p.name).collect() };
    assert_eq!(
        names(&ahead),
        ["chatty", "printer", "persona", "dups", "chatty-too"]
    );
    assert_eq!(names(&ahead), names(&sequential));

    // The registry: the same prompt in every scope, the duplicates `dups` was refused (inside
    // one plugin, decided by the registry in its turn) included.
    for scope in [None, Some("preset:coder"), Some("agent:1"), Some("agent:2")] {
        assert_eq!(
            render(ahead.registry(), scope),
            render(sequential.registry(), scope),
            "{scope:?}"
        );
    }
    let agent = render(ahead.registry(), Some("agent:1"));
    assert!(
        agent.contains("You are careful.") && agent.contains("in agent:1"),
        "{agent}"
    );
    assert!(agent.contains("duplicate"), "{agent}");
}

#[test]
fn a_declaration_the_registry_refuses_is_told_to_the_plugin_as_in_its_turn() {
    // Both plugins declare the section `hostile` in the global scope: the second is refused
    // by the registry while its `init` runs, which fails it and the deployment. The third is
    // never heard of.
    let toml = [
        "[[scope]]\nname = \"agent:1\"\n".to_string(),
        chatty("first", None, 2),
        chatty("second", None, 2),
        chatty("third", Some("agent:1"), 2),
    ]
    .concat();
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways(&toml);
    let (ahead, sequential) = (failed(ahead), failed(sequential));
    assert_eq!(ahead.to_string(), sequential.to_string());
    assert!(ahead.to_string().contains("\"second\""), "{ahead}");
    assert_eq!(ahead_lines, sequential_lines);
    assert_eq!(
        speakers(&ahead_lines),
        ["first", "second"],
        "{ahead_lines:#?}"
    );
}

#[test]
fn an_init_that_fails_stops_the_deployment_and_later_plugins_are_never_heard() {
    let toml = broken_between("fail");
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways(&toml);
    let (ahead, sequential) = (failed(ahead), failed(sequential));
    assert_eq!(ahead.to_string(), sequential.to_string());
    assert!(ahead.to_string().contains("broken on purpose"), "{ahead}");
    assert_eq!(ahead_lines, sequential_lines);
    assert_eq!(
        speakers(&ahead_lines),
        ["before", "broken"],
        "{ahead_lines:#?}"
    );
}

#[test]
fn a_plugin_that_may_be_skipped_is_skipped_in_its_turn() {
    let toml = broken_between("skip");
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways(&toml);
    let (ahead, sequential) = (ahead.unwrap(), sequential.unwrap());
    assert_eq!(ahead_lines, sequential_lines);
    assert_eq!(
        speakers(&ahead_lines),
        ["before", "broken", "after"],
        "{ahead_lines:#?}"
    );
    let skipped: Vec<&Line> = ahead_lines.iter().filter(|l| l.1 == "skipped").collect();
    assert_eq!(skipped.len(), 1, "{ahead_lines:#?}");
    assert!(
        skipped[0].2.contains("left out of the deployment"),
        "{skipped:?}"
    );
    for scope in [None, Some("agent:1")] {
        assert_eq!(
            render(ahead.registry(), scope),
            render(sequential.registry(), scope)
        );
    }
}

#[test]
fn a_trap_in_init_run_ahead_is_reported_with_its_stderr_as_in_its_turn() {
    let toml = [
        SCOPES.to_string(),
        chatty("before", None, 1),
        plugin(
            "panicky",
            "HOSTILE",
            Some("agent:1"),
            r#"config = { mode = "panic", in = "init" }"#,
        ),
    ]
    .concat();
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways(&toml);
    let (ahead, sequential) = (failed(ahead), failed(sequential));
    assert_eq!(ahead.to_string(), sequential.to_string());
    assert!(
        ahead
            .to_string()
            .contains("(stderr: hostile plugin panicked on purpose)"),
        "{ahead}"
    );
    assert_eq!(ahead_lines, sequential_lines);
    assert_eq!(
        speakers(&ahead_lines),
        ["before", "panicky"],
        "{ahead_lines:#?}"
    );
}

#[test]
fn an_init_that_runs_out_of_time_ahead_is_not_run_again() {
    // A plugin that loops in `init` fails on its 1 s deadline. Run ahead, that failure is
    // its load's: the deployment fails once, after one deadline, not after a second run in
    // its turn (which would take another second).
    let toml = [
        SCOPES.to_string(),
        chatty("before", None, 1),
        plugin(
            "looping",
            "HOSTILE",
            Some("agent:1"),
            "config = { mode = \"loop\", in = \"init\" }\nlimits = { init_timeout_ms = 1000 }",
        ),
    ]
    .concat();
    let d = Deployment::new(&toml);
    let config = HostConfig::load(&d.config()).unwrap();
    let cache = d.path("cache");
    drop(one_by_one(&config, &cache));
    let started = std::time::Instant::now();
    let (ahead, ahead_lines) = side_by_side(&config, &cache);
    let took = started.elapsed();
    let (sequential, sequential_lines) = one_by_one(&config, &cache);
    let (ahead, sequential) = (failed(ahead), failed(sequential));
    assert_eq!(ahead.to_string(), sequential.to_string());
    assert!(
        ahead.to_string().contains("deadline of 1000 ms exceeded"),
        "{ahead}"
    );
    assert_eq!(ahead_lines, sequential_lines);
    assert!(
        took < std::time::Duration::from_millis(1900),
        "the looping init ran twice: {took:?}"
    );
}

#[test]
fn output_held_ahead_of_a_turn_stays_within_the_plugins_budget() {
    // A plugin that writes far more than its budget in `init`: what is held for its turn is
    // what a load in its turn keeps (the budget's worth and one notice of what was dropped).
    let toml = [
        SCOPES.to_string(),
        plugin("first", "DECLARE", None, r#"config = { sections = [{ name = "who", order = 10, text = "Careful." }] }"#),
        plugin(
            "flood",
            "HOSTILE",
            Some("agent:1"),
            "config = { mode = \"log_spam\", in = \"init\", count = 20000 }\nlimits = { max_log_bytes = 2048 }",
        ),
    ]
    .concat();
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways(&toml);
    let (ahead, _sequential) = (ahead.unwrap(), sequential.unwrap());
    assert_eq!(ahead_lines, sequential_lines);
    let kept: usize = ahead_lines
        .iter()
        .filter(|l| l.1 == "info")
        .map(|l| l.2.len())
        .sum();
    assert!(kept > 0 && kept <= 2048, "{kept} bytes kept");
    let dropped: Vec<&Line> = ahead_lines.iter().filter(|l| l.1 == "dropped").collect();
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(dropped[0].2.contains("max_log_bytes = 2048"), "{dropped:?}");
    assert!(render(ahead.registry(), Some("agent:1")).contains("Careful."));
}

#[test]
fn a_deployment_loads_alike_inside_a_current_thread_and_a_multi_thread_runtime() {
    // The caller's share of the work runs where a plugin call may block: on a thread of its
    // own under a current-thread runtime, through `block_in_place` under a multi-thread one.
    let toml = [
        SCOPES.to_string(),
        chatty("chatty", None, 2),
        plugin(
            "persona",
            "DECLARE",
            Some("agent:1"),
            r#"config = { sections = [{ name = "now", order = 20, text = { dynamic = "in ${scope}" } }] }"#,
        ),
    ]
    .concat();
    let d = Deployment::new(&toml);
    let config = HostConfig::load(&d.config()).unwrap();
    let cache = d.path("cache");
    let (reference, reference_lines) = one_by_one(&config, &cache);
    let reference = render(reference.unwrap().registry(), Some("agent:1"));
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let on_current = current.block_on(async { side_by_side(&config, &cache) });
    // On one of the multi-thread runtime's workers, as an async embedder's task would be.
    let on_worker = multi
        .block_on(multi.spawn({
            let (config, cache) = (config.clone(), cache.clone());
            async move { side_by_side(&config, &cache) }
        }))
        .unwrap();
    for (host, lines) in [on_current, on_worker] {
        assert_eq!(render(host.unwrap().registry(), Some("agent:1")), reference);
        assert_eq!(lines, reference_lines);
    }
}

/// `side_by_side` and then `one_by_one` on another thread, each as the prompt of `agent:1`
/// or the error text, failing the test (not hanging it) if either does not come back within
/// a minute.
fn both_ways_bounded(
    config: HostConfig,
    cache: std::path::PathBuf,
) -> [(Result<String, String>, Vec<Line>); 2] {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ahead = side_by_side(&config, &cache);
        let sequential = one_by_one(&config, &cache);
        let _ = tx.send([ahead, sequential].map(|(host, lines)| {
            (
                host.map(|h| render(h.registry(), Some("agent:1")))
                    .map_err(|e| e.to_string()),
                lines,
            )
        }));
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("a load blocked for a minute")
}

#[test]
fn a_plugin_file_swapped_for_a_fifo_after_parsing_is_refused_alike_without_blocking() {
    // host.toml names a regular file when it is read; before `from_config` fetches it, the
    // file is replaced by a FIFO nobody writes to. Side by side as one by one: refused, named
    // after its first plugin, no thread left waiting on the FIFO.
    let d = Deployment::new(
        &[
            SCOPES.to_string(),
            chatty("chatty", None, 1),
            "\n[[plugin]]\nname = \"persona\"\nwasm = \"declare.wasm\"\nscope = \"agent:1\"\nconfig = { sections = [{ name = \"who\", order = 10, text = \"Careful.\" }] }\n".to_string(),
        ]
        .concat(),
    );
    std::fs::copy(env!("GUEST_DECLARE"), d.path("declare.wasm")).unwrap();
    let config = HostConfig::load(&d.config()).unwrap();
    let cache = d.path("cache");
    assert!(
        one_by_one(&config, &cache).0.is_ok(),
        "the regular file loads"
    );
    std::fs::remove_file(d.path("declare.wasm")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(d.path("declare.wasm"))
        .status()
        .unwrap();
    assert!(made.success());
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways_bounded(config, cache);
    let (ahead, sequential) = (ahead.unwrap_err(), sequential.unwrap_err());
    assert_eq!(ahead, sequential);
    assert!(
        ahead.contains("\"persona\"") && ahead.contains("FIFO"),
        "{ahead}"
    );
    assert_eq!(ahead_lines, sequential_lines);
}

#[test]
fn a_granted_dir_swapped_for_a_symlink_after_parsing_is_refused_alike_either_way() {
    // A plugin reads a granted file in its `init`, ahead of its turn. Between reading
    // host.toml and loading it, the granted directory is replaced by a symlink to another
    // directory. The grant was made canonical when host.toml was read and is opened without
    // following a symbolic link when the plugin loads (after that, the handle stays:
    // `wasm::attacked_grants`), so the swap is refused, naming the link, side by side as one by
    // one, and nothing of the other directory is read.
    let root = tempfile::tempdir().unwrap();
    let (project, elsewhere) = (root.path().join("project"), root.path().join("elsewhere"));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(project.join("notes.txt"), "granted").unwrap();
    std::fs::write(
        elsewhere.join("notes.txt"),
        "SECRET, and longer than the granted one",
    )
    .unwrap();
    let reader = format!(
        "grants = {{ dirs = [{{ host = \"{}\", guest = \"/project\" }}] }}\nconfig = {{ mode = \"read_file\", in = \"init\", path = \"/project/notes.txt\" }}",
        project.display()
    );
    let d = Deployment::new(
        &[
            SCOPES.to_string(),
            chatty("chatty", None, 1),
            plugin("reader", "HOSTILE", Some("agent:1"), &reader),
        ]
        .concat(),
    );
    let config = HostConfig::load(&d.config()).unwrap();
    let cache = d.path("cache");
    let (granted, _) = one_by_one(&config, &cache);
    let granted = render(granted.unwrap().registry(), Some("agent:1"));
    assert!(
        granted.contains("read /project/notes.txt: 7 bytes"),
        "{granted}"
    );

    std::fs::rename(&project, root.path().join("project.orig")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &project).unwrap();
    let granted_host = config.plugins[1].grants.dirs[0].host.clone();
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways_bounded(config, cache);
    assert_eq!(ahead, sequential);
    assert_eq!(ahead_lines, sequential_lines);
    let error = ahead.unwrap_err();
    assert!(
        error.contains(&format!(
            "cannot open the granted directory {host} (for /project): {host} is a symbolic link, which was not there when the grant was checked; refused rather than followed",
            host = granted_host.display()
        )),
        "{error}"
    );
    assert!(!error.contains("SECRET"), "{error}");
    assert!(
        ahead_lines
            .iter()
            .all(|(_, _, text)| !text.contains("SECRET")),
        "{ahead_lines:?}"
    );
}
