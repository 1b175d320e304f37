//! The hostile matrix through the library, as an embedder uses it: `Host` inside a
//! multi-threaded and inside a current-thread Tokio runtime, plugins loaded from async code
//! (where a blocking WASI call in `init` used to panic the host), every (mode, phase) pair
//! loaded into its own scope next to a benign scope that must keep rendering the same bytes.

use std::path::Path;

use serde_json::json;

use crate::integration::support::hostile_matrix::{
    cases, declare_amplifier, deployment_toml, Case, Expect,
};
use prompt_host::config::HostConfig;
use prompt_host::policy::{Limits, PluginOptions};
use prompt_host::{Facts, Host, PluginSpec, RuntimeConfig};

/// A host with the benign plugin in `agent:ok`.
fn host(cache: &Path) -> Host {
    let toml = deployment_toml(None);
    let config = HostConfig::parse(&toml, "host.toml", Path::new(".")).expect("host.toml");
    Host::from_config(&config, RuntimeConfig::with_cache_dir(cache)).expect("host")
}

fn hostile_spec(case: &Case, scope: &str) -> PluginSpec {
    let limits: Limits = serde_json::from_value(Case::limits()).expect("limits");
    PluginSpec::new("hostile")
        .scope(scope)
        .config(case.config())
        .options(PluginOptions::default().limits(limits))
}

/// Every case in its own scope; `agent:ok` renders the same bytes after each.
async fn run_matrix(host: &Host) {
    let baseline = host
        .render(Some("agent:ok"), Facts::new())
        .await
        .expect("baseline")
        .prompt;
    assert_eq!(
        baseline.matches("fine in agent:ok").count(),
        1,
        "{baseline}"
    );
    for (index, case) in cases().into_iter().enumerate() {
        let scope = format!("agent:h{index}");
        host.bind_scope(&scope, None).expect("bind");
        let loaded = host.load_plugin(
            hostile_spec(&case, &scope),
            std::path::Path::new(env!("GUEST_HOSTILE")),
        );
        match (&case.expect, loaded) {
            (Expect::FailsInit, Ok(_)) => panic!("{}: init should fail", case.label()),
            (Expect::FailsInit, Err(e)) => case.assert_error(&e.to_string(), &scope),
            (_, Err(e)) => panic!("{}: load failed: {e}", case.label()),
            (expect, Ok(plugin)) => {
                let rendered = host.render(Some(&scope), Facts::new()).await;
                match (expect, rendered) {
                    (Expect::Ok, Ok(_)) => {}
                    (Expect::Ok, Err(e)) => panic!("{}: {e}", case.label()),
                    (_, Ok(_)) => panic!("{}: rendering should fail", case.label()),
                    (_, Err(e)) => case.assert_error(&e.to_string(), &scope),
                }
                drop(plugin);
            }
        }
        let again = host
            .render(Some("agent:ok"), Facts::new())
            .await
            .unwrap_or_else(|e| panic!("{}: agent:ok no longer renders: {e}", case.label()));
        assert_eq!(again.prompt, baseline, "{}", case.label());
    }
}

/// The declare guest's amplification is refused at rendering, naming section, variable,
/// plugin and scope.
async fn amplification(host: &Host) {
    host.bind_scope("agent:amp", None).expect("bind");
    let _plugin = host
        .load_plugin(
            PluginSpec::new("declare")
                .scope("agent:amp")
                .config(declare_amplifier()),
            std::path::Path::new(env!("GUEST_DECLARE")),
        )
        .expect("load");
    let error = host
        .render(Some("agent:amp"), Facts::new())
        .await
        .expect_err("over budget")
        .to_string();
    assert_eq!(
        error,
        "rendering for scope \"agent:amp\" failed: the rendered system prompt would exceed \
         max_prompt_bytes = 8388608 bytes at section \"amp\", which alone renders to \
         50000000000 bytes (100000 references to variable \"v\" of 500000 bytes); section \
         \"amp\" is from plugin \"declare\" (scope agent:amp); variable \"v\" is from plugin \
         \"declare\" (scope agent:amp)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_matrix_in_a_multi_thread_runtime() {
    let cache = tempfile::tempdir().unwrap();
    let host = host(cache.path());
    run_matrix(&host).await;
    amplification(&host).await;
}

#[tokio::test(flavor = "current_thread")]
async fn hostile_matrix_in_a_current_thread_runtime() {
    let cache = tempfile::tempdir().unwrap();
    let host = host(cache.path());
    run_matrix(&host).await;
    amplification(&host).await;
}

/// Loading from inside a task on a worker thread (not only from `block_on`) with a plugin
/// that prints in `init`: the call is moved off the worker and the host survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printing_init_loaded_from_a_spawned_task() {
    let cache = tempfile::tempdir().unwrap();
    let host = std::sync::Arc::new(host(cache.path()));
    host.bind_scope("agent:p", None).unwrap();
    let task = {
        let host = host.clone();
        tokio::spawn(async move {
            let spec = PluginSpec::new("hostile")
                .scope("agent:p")
                .config(json!({"mode": "stdout_spam", "in": "init", "count": 1}));
            host.load_plugin(spec, std::path::Path::new(env!("GUEST_HOSTILE")))
                .map(|p| host.attach(p))
        })
    };
    task.await.expect("task").expect("load");
    let rendered = host.render(Some("agent:p"), Facts::new()).await.unwrap();
    assert!(rendered.prompt.contains("hostile: stdout spam done"));
}
