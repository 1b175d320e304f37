//! Embedding prompt-host in an agent: native providers and (optionally) a Wasm plugin, two
//! scopes, a change subscription, and a step against a session log.
//!
//! `cargo run -p prompt-host --example embed [-- PLUGIN.wasm]` — with a plugin path (e.g. a
//! built `persona.wasm`), it is loaded into `agent:7` with a persona config.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use prompt_host::prompt::{SectionDef, TextSource};
use prompt_host::session::Session;
use prompt_host::{Facts, Host, PluginSpec, PromptConfig, RuntimeConfig, StepOptions};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let prompt = PromptConfig::default().persona("You are a helpful agent on {{model}}.");
    let host = Host::new(
        prompt,
        RuntimeConfig::with_cache_dir(dir.path().join("cache")),
    )?;
    let changes = Arc::new(AtomicUsize::new(0));
    let seen = changes.clone();
    host.subscribe(Arc::new(move || {
        seen.fetch_add(1, Ordering::Relaxed);
    }));

    // Scopes are declared before use: a preset, and an agent under it.
    host.bind_scope("preset:coder", None)?;
    host.bind_scope("agent:7", Some("preset:coder"))?;
    // Native providers follow the same rules as plugins: a fiber owns what it registers.
    let preset = host.native("my-app", Some("preset:coder"));
    preset.section(SectionDef::fixed(
        "app:rules",
        120.0,
        "Work in {{cwd}}. Be brief.",
    ))?;
    preset.section(SectionDef::new(
        "app:turn",
        130.0,
        TextSource::dynamic(|cx| Ok(format!("Scope chain: {}.", cx.scope_chain.join(" < ")))),
    ))?;

    let plugin = match std::env::args().nth(1) {
        Some(path) => {
            let spec = PluginSpec::new("persona")
                .scope("agent:7")
                .config(serde_json::json!({"text": "You are agent 7 on {{model}}."}));
            Some(host.load_plugin(spec, std::path::Path::new(&path))?)
        }
        None => None,
    };

    let facts = Facts::new()
        .with("model", "deepseek-v4")
        .with("cwd", "/srv/app");
    let rendered = host.render(Some("agent:7"), facts.clone()).await?;
    println!("== agent:7\n{}\n", rendered.prompt);

    let (mut session, _) = Session::open(dir.path().join("session.jsonl"))?;
    let options = StepOptions::default().user_texts(vec!["Hello".into()]);
    let (_, outcome) = host
        .step(&mut session, Some("agent:7"), facts, &options)
        .await?;
    println!(
        "== request\n{}",
        serde_json::to_string_pretty(&outcome.request)?
    );

    drop(plugin); // disposes every contribution of the plugin
    preset.dispose();
    println!(
        "\n{} registry changes observed",
        changes.load(Ordering::Relaxed)
    );
    Ok(())
}
