//! The same deployment and facts give the same bytes, whatever the timing: which plugin's
//! `init` finishes first, which MCP server answers first, which server's refresh lands
//! first. Entries of equal order keep the order host.toml gives (file order, and each MCP
//! server's contributions in the place of its `[[mcp]]` entry), never the order of arrival.
//! Each test varies the timing under control and compares the prompts byte for byte.

use std::path::Path;
use std::time::Duration;

use prompt_host::config::HostConfig;
use prompt_host::mcp::{McpServerSpec, McpStatus, ReconnectPolicy};
use prompt_host::prompt::PromptConfig;
use prompt_host::{Facts, Host, McpId, McpSpec, RuntimeConfig};

use crate::integration::mcp::client::{fixtures, python, python_mcp_available};

const ID: &str = "You are an AI agent powered by the DeepSeek Harness SDK.";

/// The prompt of the global scope of the deployment `toml` (in `dir`), loaded through
/// `Host::from_config` as the command line loads it.
fn global_prompt(dir: &Path, toml: &str) -> String {
    let path = dir.join("host.toml");
    std::fs::write(&path, toml).unwrap();
    let config = HostConfig::load(&path).unwrap();
    let host =
        Host::from_config(&config, RuntimeConfig::with_cache_dir(dir.join("cache"))).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(host.render(None, Facts::new()))
        .unwrap()
        .prompt
}

/// A plugin whose `init` sleeps `seconds` (within a deadline that allows it) and then
/// declares `hostile` at order 500.
fn sleeper(seconds: u64) -> String {
    format!(
        "[[plugin]]\nname = \"sleeper\"\nwasm = {:?}\n\
         config = {{ mode = \"sleep\", in = \"init\", seconds = {seconds} }}\n\
         limits = {{ init_timeout_ms = 10000 }}\n\n",
        env!("GUEST_HOSTILE")
    )
}

/// A plugin that declares `tie` at order 500 at once.
fn tie() -> String {
    format!(
        "[[plugin]]\nname = \"tie\"\nwasm = {:?}\n\
         config = {{ sections = [{{ name = \"tie\", order = 500, text = \"Tie.\" }}] }}\n\n",
        env!("GUEST_DECLARE")
    )
}

/// Plugins' `init` runs side by side on a machine with several cores, and the one that
/// sleeps finishes last; the sections it and its neighbour declare at the same order still
/// render in file order, as with no sleep at all.
#[test]
fn equal_orders_render_in_file_order_whichever_init_finishes_first() {
    let dir = tempfile::tempdir().unwrap();
    for (first, second, want) in [
        (
            sleeper(1),
            tie(),
            format!("{ID}\n\nhostile: woke up\n\nTie."),
        ),
        (
            tie(),
            sleeper(1),
            format!("{ID}\n\nTie.\n\nhostile: woke up"),
        ),
    ] {
        let slow = global_prompt(dir.path(), &format!("{first}{second}"));
        let quick = global_prompt(
            dir.path(),
            &format!("{first}{second}").replace("seconds = 1", "seconds = 0"),
        );
        assert_eq!(slow, want);
        assert_eq!(quick, want);
    }
}

/// A server that answers once `go` exists, and adds a tool (a new generation) once
/// `refresh` exists.
fn gated(name: &str, go: &Path, refresh: &Path) -> McpSpec {
    let mut server = McpServerSpec::new(name, python()).timeout(Duration::from_secs(60));
    server.args = vec![
        fixtures().join("server.py").display().to_string(),
        "--instructions".into(),
        format!("{name} rules."),
        "--start-when".into(),
        go.display().to_string(),
        "--list-changed-when".into(),
        refresh.display().to_string(),
    ];
    McpSpec::new(server, env!("GUEST_MCP_INSTRUCTIONS")).reconnect(ReconnectPolicy::new(
        Duration::from_millis(50),
        Duration::from_millis(500),
    ))
}

/// Wait (bounded) until `id` has published generation `generation`.
async fn published(host: &Host, id: McpId, generation: u64) -> McpStatus {
    let mut watch = host.watch_mcp(id).expect("kept");
    let reached = tokio::time::timeout(Duration::from_secs(60), async {
        let status = watch
            .wait_for(|s| s.live_generation >= Some(generation))
            .await
            .map(|s| s.clone());
        status
    })
    .await;
    match reached {
        Ok(Ok(status)) => status,
        _ => panic!(
            "generation {generation} not published; status {:?}",
            *watch.borrow()
        ),
    }
}

fn fenced(server: &str) -> String {
    format!(
        "Instructions from MCP server \"{server}\" (third-party text, not from the operator):\n<<<\n{server} rules.\n>>>"
    )
}

/// Two MCP servers whose sections share order 190: `alpha` (first in the deployment) and
/// `beta` answer in one order, then in the other, and then `alpha` refreshes after `beta`
/// answered. Every prompt is the same, with `alpha` first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equal_orders_render_alike_whichever_mcp_server_answers_or_refreshes_first() {
    let _serial = crate::integration::mcp::client::serial().await;
    if !python_mcp_available() {
        return;
    }
    let want = format!("{ID}\n\n{}\n\n{}", fenced("alpha"), fenced("beta"));
    for alpha_first in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| dir.path().join(name);
        let host = Host::new(
            PromptConfig::default(),
            RuntimeConfig::with_cache_dir(
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("determinism-cache"),
            ),
        )
        .unwrap();
        let alpha = host
            .connect_mcp(gated("alpha", &file("alpha.go"), &file("alpha.refresh")))
            .unwrap();
        let beta = host
            .connect_mcp(gated("beta", &file("beta.go"), &file("beta.refresh")))
            .unwrap();
        let order = if alpha_first {
            [("alpha.go", alpha), ("beta.go", beta)]
        } else {
            [("beta.go", beta), ("alpha.go", alpha)]
        };
        for (go, id) in order {
            std::fs::write(file(go), "").unwrap();
            published(&host, id, 1).await;
        }
        let answered = host.render(None, Facts::new()).await.unwrap();
        assert_eq!(answered.prompt, want, "alpha answered first: {alpha_first}");
        // A new generation of alpha, after beta's: its section stays where it was.
        std::fs::write(file("alpha.refresh"), "").unwrap();
        published(&host, alpha, 2).await;
        let refreshed = host.render(None, Facts::new()).await.unwrap();
        assert!(
            refreshed
                .assembly
                .tools
                .iter()
                .any(|t| t.name == "mcp__alpha__late"),
            "the refresh landed"
        );
        assert_eq!(
            refreshed.prompt, want,
            "alpha refreshed last: {alpha_first}"
        );
    }
}
