//! The hostile matrix through the command line: `render` with the hostile plugin in
//! `agent:h` next to a benign `agent:ok`, and `check` of the hostile component with each
//! config. Exit codes are exactly 0 or 1 (never a panic's 101 or an abort's 134), an error
//! is one `error:` line naming plugin, export and scope, and `agent:ok` renders the same
//! bytes whatever `agent:h` holds.

use std::path::Path;
use std::sync::OnceLock;

use crate::integration::support::cli::{Deployment, Run};
use crate::integration::support::hostile_matrix::{
    cases, declare_amplifier, deployment_toml, toml_inline, Case, Expect,
};

/// The single `error:` line of a failed run.
fn error_line(run: &Run, label: &str) -> String {
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{label}: stderr:\n{}", run.stderr);
    errors[0].to_string()
}

fn exit(run: &Run, code: i32, label: &str) {
    assert_eq!(
        run.code, code,
        "{label}: exit code; stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
}

/// The compile cache every deployment of the matrix shares (each component is compiled
/// once, not once per case).
fn shared_cache() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE
        .get_or_init(|| tempfile::tempdir().expect("cache dir"))
        .path()
}

fn deployment(toml: &str) -> Deployment {
    Deployment::new(toml).sharing_cache(shared_cache())
}

/// The benign scope's prompt with no hostile plugin at all (this also fills the cache).
fn baseline() -> String {
    let d = deployment(&deployment_toml(None));
    let prompt = d
        .run(&[
            "render",
            "--config",
            d.config().to_str().unwrap(),
            "--scope",
            "agent:ok",
        ])
        .ok()
        .to_string();
    d.run(&[
        "check",
        env!("GUEST_HOSTILE"),
        "--config",
        "{\"mode\": \"ok\"}",
    ])
    .ok();
    prompt
}

fn render_case(case: &Case, baseline: &str) {
    let label = case.label();
    let on_error = if case.expect == Expect::FailsInit {
        "fail"
    } else {
        "skip"
    };
    let d = deployment(&deployment_toml(Some((case, on_error))));
    let config = d.config();
    let config = config.to_str().unwrap();
    let hostile = d.run(&["render", "--config", config, "--scope", "agent:h"]);
    match case.expect {
        Expect::Ok => exit(&hostile, 0, &label),
        Expect::FailsInit => {
            // The whole deployment fails under `fail`, naming the plugin.
            exit(&hostile, 1, &label);
            case.assert_error(&error_line(&hostile, &label), "agent:h");
            // Under `skip` the rest of the deployment starts, with a warning.
            let d = deployment(&deployment_toml(Some((case, "skip"))));
            let config = d.config();
            let run = d.run(&[
                "render",
                "--config",
                config.to_str().unwrap(),
                "--scope",
                "agent:ok",
            ]);
            exit(&run, 0, &label);
            assert_eq!(run.stdout, baseline, "{label}");
            assert!(
                run.stderr
                    .contains("plugin \"hostile\" (scope agent:h) left out of the deployment"),
                "{label}: {}",
                run.stderr
            );
            return;
        }
        // `skip` is not `fail`: under skip a failing call leaves the entry out; the render
        // of agent:h then succeeds with a warning.
        Expect::FailsCall => {
            exit(&hostile, 0, &label);
            assert!(
                hostile
                    .stderr
                    .contains("warning: plugin \"hostile\" export"),
                "{label}: {}",
                hostile.stderr
            );
            let d = deployment(&deployment_toml(Some((case, "fail"))));
            let config = d.config();
            let run = d.run(&[
                "render",
                "--config",
                config.to_str().unwrap(),
                "--scope",
                "agent:h",
            ]);
            exit(&run, 1, &label);
            case.assert_error(&error_line(&run, &label), "agent:h");
        }
        Expect::FailsBudget => {
            exit(&hostile, 1, &label);
            case.assert_error(&error_line(&hostile, &label), "agent:h");
        }
    }
    let ok = d.run(&["render", "--config", config, "--scope", "agent:ok"]);
    exit(&ok, 0, &label);
    assert_eq!(ok.stdout, baseline, "{label}");
}

fn check_case(case: &Case) {
    let label = format!("check {}", case.label());
    let d = deployment("");
    let config = serde_json::to_string(&case.config()).unwrap();
    let run = d.run(&["check", env!("GUEST_HOSTILE"), "--config", &config]);
    if case.expect == Expect::FailsInit {
        exit(&run, 1, &label);
        let line = error_line(&run, &label);
        assert!(
            line.contains("plugin \"hostile\" export \"init\""),
            "{label}: {line}"
        );
        assert!(!line.contains("wasm backtrace"), "{label}: {line}");
        assert!(
            run.stdout.contains(": init failed"),
            "{label}: {}",
            run.stdout
        );
    } else {
        exit(&run, 0, &label);
        assert!(run.stdout.contains(": ok"), "{label}: {}", run.stdout);
    }
}

/// Run `f` over `items` on a few threads (each item spawns processes).
fn in_parallel<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match items.get(i) {
                    Some(item) => f(item),
                    None => break,
                }
            });
        }
    });
}

#[test]
fn hostile_matrix_through_render() {
    let baseline = baseline();
    in_parallel(&cases(), |case| render_case(case, &baseline));
}

#[test]
fn hostile_matrix_through_check() {
    baseline();
    let init_cases: Vec<Case> = cases().into_iter().filter(|c| c.phase == "init").collect();
    in_parallel(&init_cases, check_case);
}

#[test]
fn declare_amplification_through_render() {
    let toml = format!(
        "[[scope]]\nname = \"agent:amp\"\n\n[[plugin]]\nname = \"declare\"\nwasm = {}\nscope = \"agent:amp\"\nconfig = {}\n",
        serde_json::Value::String(env!("GUEST_DECLARE").into()),
        toml_inline(&declare_amplifier())
    );
    let d = Deployment::new(&toml);
    let run = d.run(&[
        "render",
        "--config",
        d.config().to_str().unwrap(),
        "--scope",
        "agent:amp",
    ]);
    exit(&run, 1, "amplification");
    let line = error_line(&run, "amplification");
    assert!(
        line.contains("would exceed max_prompt_bytes = 8388608 bytes at section \"amp\""),
        "{line}"
    );
    assert!(
        line.contains("section \"amp\" is from plugin \"declare\" (scope agent:amp)"),
        "{line}"
    );
    assert!(
        line.contains("variable \"v\" is from plugin \"declare\" (scope agent:amp)"),
        "{line}"
    );
    // The budget is host.toml's `[prompt] max_prompt_bytes`.
    let d = Deployment::new(&format!(
        "[prompt]\nmax_prompt_bytes = 10\ninclude_harness_identity = false\n\n\
         [[plugin]]\nname = \"declare\"\nwasm = {}\nconfig = {{ sections = [{{ name = \"s\", order = 1, text = \"0123456789x\" }}] }}\n",
        serde_json::Value::String(env!("GUEST_DECLARE").into()),
    ));
    let run = d.run(&["render", "--config", d.config().to_str().unwrap()]);
    exit(&run, 1, "small budget");
    assert!(
        run.stderr.contains(
            "max_prompt_bytes = 10 bytes at section \"s\", which alone renders to 11 bytes"
        ),
        "{}",
        run.stderr
    );
}
