//! The main job on a bundled deployment: prompt-host assembling a system prompt from Wasm
//! plugins in a parent scope (`preset:coder`) and a child scope (`agent:1`), then running a
//! first step against a fresh session log and printing the model request.
//!
//! `cargo demo` checks that the example plugins can be built (the `demo-launcher` package),
//! then runs this program (`cargo run -p prompt-host-tests --features demo --bin demo`): the
//! package's build script builds the example plugins for wasm32-wasip2, and this writes the
//! deployment to `target/demo/host.toml` and runs it. It is a binary with the package's
//! normal dependencies only (an example would add the dev-dependencies, whose features
//! change crates the command line shares), so the command line the README runs next,
//! `cargo run --locked -p prompt-host-cli -- inspect --config target/demo/host.toml --scope
//! agent:1`, reuses every crate built here and only links. The `demo` feature keeps it out
//! of `cargo test`'s builds.

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

use prompt_host::session::Session;
use prompt_host::{Facts, Host, HostConfig, RuntimeConfig, StepOptions};

fn main() -> ExitCode {
    let outcome = tokio::runtime::Runtime::new()
        .map_err(Box::<dyn Error>::from)
        .and_then(|runtime| runtime.block_on(demo()));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The error and each cause on a line of its own, as a reader wants them.
            eprintln!("error: {e}");
            let mut cause = e.source();
            while let Some(inner) = cause {
                eprintln!("  caused by: {inner}");
                cause = inner.source();
            }
            ExitCode::FAILURE
        }
    }
}

async fn demo() -> Result<(), Box<dyn Error>> {
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
