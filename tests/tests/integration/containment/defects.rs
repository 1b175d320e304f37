//! Regression tests for the containment defects, each through the entry point where it was
//! found: plugin text on the terminal, traps inside host imports, `on_error = "skip"` at
//! start-up and per assembly, limits that cannot work, `serve`'s request size, mistyped
//! scopes, a closed stdout, and `check`'s exit code.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::integration::support::cli::{bin, Deployment};
use crate::integration::support::hostile_matrix::toml_inline;
use crate::integration::support::serve::{memory_of, Served};

fn path(p: &str) -> String {
    Value::String(p.into()).to_string()
}

fn serve(d: &Deployment) -> Served {
    Served::start(
        &["--config", d.config().to_str().unwrap()],
        &d.path("cache"),
    )
}

#[test]
fn plugin_text_reaches_the_terminal_escaped() {
    let d = Deployment::new(&format!(
        "[[scope]]\nname = \"agent:h\"\n\n[[plugin]]\nname = \"hostile\"\nwasm = {}\nscope = \"agent:h\"\nconfig = {{ mode = \"say\", in = \"section\" }}\n",
        path(env!("GUEST_HOSTILE"))
    ));
    let run = d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:h",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}'), "raw ESC: {:?}", run.stderr);
    assert!(!run.stderr.contains('\r'), "raw CR: {:?}", run.stderr);
    // The forged line stays inside the real ones: only one line starts with `error:`.
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("error:")).count(),
        1,
        "{lines:#?}"
    );
    assert!(lines.contains(
        &"plugin \"hostile\" (scope agent:h) warn: \\u{1b}[2J\\rerror: plugin \"persona\" failed\\n"
    ), "{lines:#?}");
    let error = lines.iter().find(|l| l.starts_with("error:")).unwrap();
    assert!(
        error.ends_with("plugin \"hostile\" export \"section-text\" (scope agent:h): failed: \\u{1b}[2J\\rerror: plugin \"persona\" failed\\n"),
        "{error}"
    );
}

#[test]
fn a_trap_raised_in_a_host_import_is_one_paragraph_cause_first() {
    // A listener pushing a section whose name holds a control character traps inside the
    // host import `push-section`.
    let config = json!({"listener": {"key": "l", "steps": [{"next": true}, {"push_section": {"name": "a\u{7}b", "text": "x"}}]}});
    let d = Deployment::new(&format!(
        "[[plugin]]\nname = \"edits\"\nwasm = {}\nconfig = {}\n",
        path(env!("GUEST_DECLARE")),
        toml_inline(&config)
    ));
    let run = d.run(&["render", "--config", d.config().to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let stderr = run.stderr.trim_end();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        !stderr.contains("wasm backtrace") && !stderr.contains("<unknown>"),
        "{stderr}"
    );
    assert!(
        stderr.contains("plugin \"edits\" export \"on-assemble\" (global): wasm trap: section name \"a\\u{7}b\""),
        "{stderr}"
    );
}

/// A deployment whose `broken` plugin (in `agent:b`) fails `init`, next to a good one.
fn with_broken_init(on_error: &str) -> Deployment {
    Deployment::new(&format!(
        "[[scope]]\nname = \"agent:ok\"\n\n[[scope]]\nname = \"agent:b\"\n\n\
         [[plugin]]\nname = \"good\"\nwasm = {d}\nscope = \"agent:ok\"\nconfig = {{ sections = [{{ name = \"g\", order = 1, text = \"good\" }}] }}\n\n\
         [[plugin]]\nname = \"broken\"\nwasm = {h}\nscope = \"agent:b\"\nconfig = {{ mode = \"panic\", in = \"init\" }}\non_error = \"{on_error}\"\n",
        d = path(env!("GUEST_DECLARE")),
        h = path(env!("GUEST_HOSTILE")),
    ))
}

#[test]
fn an_init_failure_under_skip_leaves_the_plugin_out_and_the_deployment_starts() {
    let d = with_broken_init("skip");
    let config = d.config();
    let config = config.to_str().unwrap();
    for scope in ["agent:ok", "agent:b"] {
        let run = d.run(&["render", "--config", config, "--scope", scope]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr.contains("warning: plugin \"broken\" export \"init\" (scope agent:b): wasm trap")
                && run.stderr.contains("plugin \"broken\" (scope agent:b) left out of the deployment (on_error = \"skip\")"),
            "{}",
            run.stderr
        );
    }
    let mut served = serve(&d);
    assert!(served.ok("render", json!({"scope": "agent:ok"}))["prompt"]
        .as_str()
        .unwrap()
        .ends_with("good"));
    let plugins = served.ok("plugins", json!({}));
    assert_eq!(plugins.as_array().unwrap().len(), 1, "{plugins}");
    let left_out = "left out of the deployment";
    assert!(served
        .stderr_with(left_out, std::time::Duration::from_secs(10))
        .contains(left_out));
    // Under `fail` the deployment does not start, naming the plugin.
    let d = with_broken_init("fail");
    let run = d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:ok",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("plugin \"broken\" export \"init\" (scope agent:b)"),
        "{}",
        run.stderr
    );
}

#[test]
fn skip_assembles_as_if_the_failed_entries_were_not_registered() {
    let global = json!({
        "sections": [
            {"name": "shared", "order": 5, "text": "global text"},
            {"name": "uses", "order": 6, "text": "who={{who}}"},
        ],
        "variables": [{"name": "who", "value": "global"}],
    });
    let scoped = json!({
        "sections": [
            {"name": "shared", "order": 1, "text": {"fail": "scoped shadow broke"}},
            {"name": "everything", "order": 2, "text": {"fail": "complete broke"}, "complete": true},
        ],
        "variables": [{"name": "who", "fail": "variable broke"}],
    });
    let d = Deployment::new(&format!(
        "[[scope]]\nname = \"agent:1\"\n\n\
         [[plugin]]\nname = \"global\"\nwasm = {w}\nconfig = {g}\n\n\
         [[plugin]]\nname = \"flaky\"\nwasm = {w}\nscope = \"agent:1\"\nconfig = {s}\non_error = \"skip\"\nquarantine_after = 2\n",
        w = path(env!("GUEST_DECLARE")),
        g = toml_inline(&global),
        s = toml_inline(&scoped),
    ));
    let run = d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:1",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.ends_with("global text\n\nwho=global"),
        "{:?}",
        run.stdout
    );
    for broke in ["scoped shadow broke", "complete broke", "variable broke"] {
        assert!(
            run.stderr.contains(broke) && run.stderr.contains("left out of this assembly"),
            "{broke}: {}",
            run.stderr
        );
    }
    // Quarantine is announced (after two failures here), and a quarantined plugin is
    // still left out cleanly.
    let mut served = serve(&d);
    for _ in 0..3 {
        let prompt = served.ok("render", json!({"scope": "agent:1"}));
        assert!(prompt["prompt"]
            .as_str()
            .unwrap()
            .ends_with("global text\n\nwho=global"));
    }
    let quarantined =
        "warning: plugin \"flaky\" (scope agent:1) quarantined after 2 consecutive failures";
    let stderr = served.stderr_with(quarantined, std::time::Duration::from_secs(10));
    assert!(stderr.contains(quarantined), "{stderr}");
}

#[test]
fn limits_that_cannot_work_are_refused_by_key() {
    let plugin = |extra: &str| {
        format!(
            "[[plugin]]\nname = \"p\"\nwasm = {}\n{extra}\n",
            path(env!("GUEST_DECLARE"))
        )
    };
    let cases = [
        (
            plugin("limits = { call_timeout_ms = 0 }"),
            "plugin[0].limits.call_timeout_ms: must be at least 1",
        ),
        (
            plugin("limits = { init_timeout_ms = 0 }"),
            "plugin[0].limits.init_timeout_ms: must be at least 1",
        ),
        (
            plugin("limits = { memory_bytes = 0 }"),
            "plugin[0].limits.memory_bytes: must be at least 1",
        ),
        (
            plugin("on_error = \"skip\"\nquarantine_after = 0"),
            "plugin[0].quarantine_after: must be at least 1",
        ),
        (
            "[host.pooling]\nmax_instances = 0\n".to_string(),
            "host.pooling.max_instances: must be at least 1",
        ),
        (
            "[prompt]\nmax_prompt_bytes = 0\n".to_string(),
            "prompt.max_prompt_bytes: must be at least 1",
        ),
    ];
    for (toml, needle) in cases {
        let d = Deployment::new(&toml);
        let run = d.run(&["render", "--config", d.config().to_str().unwrap()]);
        assert_eq!(run.code, 1, "{toml}");
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }
    let d = Deployment::new("");
    let mut served = serve(&d);
    let error = served.err(
        "load_plugin",
        json!({"name": "p", "wasm": env!("GUEST_DECLARE"), "limits": {"call_timeout_ms": 0}}),
    );
    assert!(
        error.contains("limits.call_timeout_ms: must be at least 1"),
        "{error}"
    );
}

#[test]
fn serve_refuses_an_oversized_line_without_buffering_it() {
    let d = Deployment::new("");
    let mut served = serve(&d);
    served.ok("render", json!({}));
    let pid = served.pid();
    let idle = memory_of(pid, "VmRSS:");
    // 100 MB in one line, written in pieces so the test itself does not hold it twice.
    let chunk = vec![b'x'; 1 << 20];
    {
        let mut line = Vec::with_capacity(100 << 20);
        for _ in 0..100 {
            line.extend_from_slice(&chunk);
        }
        served.send_line(&line);
    }
    let answer = served.answer();
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("more than the limit of 16777216"));
    let peak = memory_of(pid, "VmHWM:");
    eprintln!(
        "serve: idle RSS {} MiB, peak {} MiB after a 100 MB line",
        idle >> 20,
        peak >> 20
    );
    assert!(peak < idle + (100 << 20), "peak {peak} vs idle {idle}");
    // Lines under the limit are parsed (here: refused as invalid JSON), and memory comes
    // back afterwards.
    for _ in 0..5 {
        let mut line = vec![b'['; 10 << 20];
        line.push(b'x');
        served.send_line(&line);
        assert_eq!(served.answer()["error"]["code"], json!(-32700));
    }
    let after = memory_of(pid, "VmRSS:");
    eprintln!("serve: RSS {} MiB after five 10 MB lines", after >> 20);
    assert!(after < idle + (64 << 20), "after {after} vs idle {idle}");
    served.ok("render", json!({}));
    // The limit is a flag.
    let mut small = Served::start(&["--max-request-bytes", "100"], &d.path("cache"));
    small.send_line(&[b' '; 101]);
    assert_eq!(small.answer()["error"]["code"], json!(-32600));
    small.ok("render", json!({}));
}

#[test]
fn unknown_scopes_are_refused_with_the_known_ones_and_the_closest() {
    let d = Deployment::new("[[scope]]\nname = \"preset:coder\"\n\n[[scope]]\nname = \"agent:1\"\nparent = \"preset:coder\"\n");
    let run = d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agnet:1",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("scope \"agnet:1\" is not declared")
            && run
                .stderr
                .contains("known scopes: agent:1, preset:coder; did you mean \"agent:1\"?"),
        "{}",
        run.stderr
    );
    let mut served = serve(&d);
    let error = served.err("render", json!({"scope": "agnet:1"}));
    assert!(error.contains("did you mean \"agent:1\"?"), "{error}");
    // A root scope, then a child of it; an unknown parent and a second parent are refused,
    // naming the scope.
    served.ok("bind_scope", json!({"scope": "team"}));
    served.ok("bind_scope", json!({"scope": "team:7", "parent": "team"}));
    let error = served.err("bind_scope", json!({"scope": "x", "parent": "nowhere"}));
    assert!(
        error.starts_with("bind_scope \"x\": its parent: scope \"nowhere\" is not declared"),
        "{error}"
    );
    let error = served.err(
        "bind_scope",
        json!({"scope": "team:7", "parent": "preset:coder"}),
    );
    assert!(
        error.starts_with("bind_scope \"team:7\": scope: scope key is already bound to a parent"),
        "{error}"
    );
    let error = served.err(
        "load_plugin",
        json!({"name": "p", "wasm": env!("GUEST_DECLARE"), "scope": "unbound"}),
    );
    assert!(
        error.contains("scope \"unbound\" is not declared"),
        "{error}"
    );
    served.ok("render", json!({"scope": "team:7"}));
}

#[test]
fn a_closed_stdout_is_a_normal_end() {
    let d = Deployment::new(&format!(
        "[[plugin]]\nname = \"p\"\nwasm = {}\nconfig = {{ sections = [{{ name = \"s\", order = 1, text = \"text\" }}] }}\n",
        path(env!("GUEST_DECLARE"))
    ));
    let config = d.config();
    let config = config.to_str().unwrap();
    let session = d.path("session.jsonl");
    let commands: Vec<Vec<&str>> = vec![
        vec!["render", "--config", config],
        vec!["render", "--config", config, "--json"],
        vec!["assemble", "--config", config],
        vec!["inspect", "--config", config],
        vec![
            "step",
            "--config",
            config,
            "--session",
            session.to_str().unwrap(),
        ],
        vec!["check", env!("GUEST_DECLARE")],
        vec!["--help"],
    ];
    for args in commands {
        let mut child = Command::new(bin())
            .args(&args)
            .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reader is gone before anything is written, as with `| head -0`.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // serve ends when nobody reads its answers.
    let mut child = Command::new(bin())
        .args(["serve"])
        .env("PROMPT_HOST_CACHE_DIR", d.path("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 1, "method": "plugins"})
        );
        let _ = writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 2, "method": "plugins"})
        );
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "serve: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn check_fails_when_init_fails_with_the_given_config() {
    let d = Deployment::new("");
    let run = d.run(&[
        "check",
        env!("GUEST_DECLARE"),
        "--config",
        "{\"sections\": 7}",
    ]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("declare.wasm: init failed"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains(
            "plugin \"declare\" export \"init\": invalid input: invalid config: sections"
        ),
        "{}",
        run.stderr
    );
}

/// Component paths that are not regular files, or too large, are refused without being
/// read or waited on: through host.toml (`render`), `check` and `serve`'s `load_plugin`.
#[test]
fn special_files_as_plugins_are_refused_without_blocking() {
    let d = Deployment::new("");
    let fifo = d.path("plugin.fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    let big = d.path("big.wasm");
    std::fs::write(&big, vec![0u8; 4096]).unwrap();
    let cases: Vec<(String, String, &str)> = vec![
        (
            fifo.display().to_string(),
            String::new(),
            "is a FIFO, not a regular file",
        ),
        (
            "/dev/zero".into(),
            String::new(),
            "is a character device, not a regular file",
        ),
        (
            d.path("").display().to_string(),
            String::new(),
            "is a directory, not a regular file",
        ),
        (
            big.display().to_string(),
            "[host]\nmax_wasm_bytes = 1024\n\n".into(),
            "has 4096 bytes, more than max_wasm_bytes = 1024",
        ),
    ];
    for (wasm, prefix, needle) in &cases {
        let d = Deployment::new(&format!(
            "{prefix}[[plugin]]\nname = \"p\"\nwasm = {}\n",
            path(wasm)
        ));
        let run = d.run(&["render", "--config", d.config().to_str().unwrap()]);
        assert_eq!(run.code, 1, "{wasm}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{wasm}: {}", run.stderr);
        assert!(
            run.stderr.contains("plugin[0].wasm"),
            "{wasm}: {}",
            run.stderr
        );
    }
    for (wasm, _, needle) in cases.iter().take(3) {
        let run = d.run(&["check", wasm]);
        assert_eq!(run.code, 1, "{wasm}");
        assert!(run.stderr.contains(needle), "{wasm}: {}", run.stderr);
    }
    let mut served = Served::start(&[], &d.path("cache"));
    for (wasm, _, needle) in cases.iter().take(3) {
        let error = served.err("load_plugin", json!({"name": "p", "wasm": wasm}));
        assert!(error.contains(needle), "{wasm}: {error}");
        assert!(error.contains("plugin \"p\""), "{error}");
    }
    served.ok("plugins", json!({}));
}

#[test]
fn a_missing_caller_fact_says_how_to_give_it() {
    let d = Deployment::new("[prompt]\npersona = \"You run on {{model}}.\"\n");
    let run = d.run(&["render", "--config", d.config().to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("prompt variable \"{{model}}\" has no value for this assembly (section \"deployment:persona\")")
            && run.stderr.contains("(command line: --fact model=…;"),
        "{}",
        run.stderr
    );
}
