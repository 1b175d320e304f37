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

use super::cli_support::Deployment;
use super::wasm_support::render;

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

#[test]
fn a_deployment_loaded_side_by_side_registers_and_logs_as_one_by_one() {
    let toml = format!(
        r#"{SCOPES}
[[plugin]]
name = "chatty"
wasm = "{{HOSTILE}}"
config = {{ mode = "log_spam", in = "init", count = 3 }}

[[plugin]]
name = "printer"
wasm = "{{HOSTILE}}"
scope = "preset:coder"
config = {{ mode = "stdout_spam", in = "init", count = 2 }}

[[plugin]]
name = "persona"
wasm = "{{DECLARE}}"
config = {{ sections = [{{ name = "who", order = 10, text = "You are careful." }}, {{ name = "now", order = 20, text = {{ dynamic = "in ${{scope}}" }} }}] }}

[[plugin]]
name = "dups"
wasm = "{{HOSTILE}}"
scope = "agent:1"
config = {{ mode = "duplicate" }}

[[plugin]]
name = "chatty-too"
wasm = "{{HOSTILE}}"
scope = "agent:2"
config = {{ mode = "log_spam", in = "init", count = 2 }}
"#
    );
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
    let toml = r#"
[[scope]]
name = "agent:1"

[[plugin]]
name = "first"
wasm = "{HOSTILE}"
config = { mode = "log_spam", in = "init", count = 2 }

[[plugin]]
name = "second"
wasm = "{HOSTILE}"
config = { mode = "log_spam", in = "init", count = 2 }

[[plugin]]
name = "third"
wasm = "{HOSTILE}"
scope = "agent:1"
config = { mode = "log_spam", in = "init", count = 2 }
"#;
    let [(ahead, ahead_lines), (sequential, sequential_lines)] = both_ways(toml);
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
    let toml = format!(
        r#"{SCOPES}
[[plugin]]
name = "before"
wasm = "{{HOSTILE}}"
config = {{ mode = "log_spam", in = "init", count = 2 }}

[[plugin]]
name = "broken"
wasm = "{{HOSTILE}}"
scope = "preset:coder"
config = {{ mode = "say", in = "init", text = "broken on purpose" }}

[[plugin]]
name = "after"
wasm = "{{HOSTILE}}"
scope = "agent:1"
config = {{ mode = "log_spam", in = "init", count = 2 }}
"#
    );
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
    let toml = format!(
        r#"{SCOPES}
[[plugin]]
name = "before"
wasm = "{{HOSTILE}}"
config = {{ mode = "log_spam", in = "init", count = 2 }}

[[plugin]]
name = "broken"
wasm = "{{HOSTILE}}"
scope = "preset:coder"
on_error = "skip"
config = {{ mode = "say", in = "init", text = "broken on purpose" }}

[[plugin]]
name = "after"
wasm = "{{HOSTILE}}"
scope = "agent:1"
config = {{ mode = "log_spam", in = "init", count = 2 }}
"#
    );
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
    let toml = format!(
        r#"{SCOPES}
[[plugin]]
name = "before"
wasm = "{{HOSTILE}}"
config = {{ mode = "log_spam", in = "init", count = 1 }}

[[plugin]]
name = "panicky"
wasm = "{{HOSTILE}}"
scope = "agent:1"
config = {{ mode = "panic", in = "init" }}
"#
    );
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
    let toml = format!(
        r#"{SCOPES}
[[plugin]]
name = "before"
wasm = "{{HOSTILE}}"
config = {{ mode = "log_spam", in = "init", count = 1 }}

[[plugin]]
name = "looping"
wasm = "{{HOSTILE}}"
scope = "agent:1"
config = {{ mode = "loop", in = "init" }}
limits = {{ init_timeout_ms = 1000 }}
"#
    );
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
