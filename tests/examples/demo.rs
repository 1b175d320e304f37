//! The main job on a bundled deployment: prompt-host assembling a system prompt from Wasm
//! plugins in a parent scope (`preset:coder`) and a child scope (`agent:1`), then running a
//! first step against a fresh session log and printing the model request.
//!
//! `cargo demo` (an alias of `cargo run -p prompt-host-tests --example demo`) builds the
//! example plugins for wasm32-wasip2 (through this package's build script), writes the
//! deployment to `target/demo/host.toml`, and runs it. Afterwards the same file works with
//! the command line, e.g. `cargo run -q -p prompt-host-cli -- inspect --config
//! target/demo/host.toml --scope agent:1 --fact model=deepseek-v4`.

use std::path::PathBuf;

use prompt_host::session::Session;
use prompt_host::{Facts, Host, HostConfig, RuntimeConfig, StepOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/demo");
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    let config_path = dir.join("host.toml");
    std::fs::write(&config_path, prompt_host_tests::demo::deployment())?;
    let config = HostConfig::load(&config_path)?;
    let host = Host::from_config(&config, RuntimeConfig::with_cache_dir(dir.join("cache")))?;

    let facts = Facts::new()
        .with("model", "deepseek-v4")
        .with("cwd", "/work/project")
        .with("sandbox", "read-only");
    println!("== deployment: {}", config_path.display());
    for plugin in host.plugins() {
        let (name, scope) = (plugin.name, plugin.scope);
        println!(
            "   plugin {name} in {}",
            scope.as_deref().unwrap_or("global")
        );
    }

    let global = host.render(None, facts.clone()).await?;
    println!("\n== system prompt, global scope\n{}", global.prompt);
    let agent = host.render(Some("agent:1"), facts.clone()).await?;
    println!("\n== system prompt, scope agent:1\n{}", agent.prompt);

    let log_path = dir.join("session.jsonl");
    let _ = std::fs::remove_file(&log_path);
    let (mut session, _) = Session::open(&log_path)?;
    let options = StepOptions::default().user_texts(vec!["Review the last commit.".into()]);
    let (_, outcome) = host
        .step(&mut session, Some("agent:1"), facts, &options)
        .await?;
    println!(
        "\n== request of the first step (session log: {}; no system field — the prompt is the first message)",
        log_path.display()
    );
    println!("{}", serde_json::to_string_pretty(&outcome.request)?);
    Ok(())
}
