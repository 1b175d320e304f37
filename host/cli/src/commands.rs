//! `assemble`, `render` and `step`: load host.toml, assemble for a scope, print JSON or text.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use super::{Counting, Target};
use prompt_host::config::HostConfig;
use prompt_host::host::{Facts, Host, StepOptions};
use prompt_host::mcp::McpState;
use prompt_host::session::Session;
use prompt_host::tokens::Tokenizer;
use prompt_host::wasm::{CompileProgress, PluginLog, RuntimeConfig, WasmRuntime};

/// The runtime settings of a command-line run: the compile cache (overridable with
/// `PROMPT_HOST_CACHE_DIR`), plugin warnings/errors echoed to stderr, and a compile that
/// takes more than a second (`PROMPT_HOST_PROGRESS_AFTER_MS`) announced there.
pub fn runtime_config() -> RuntimeConfig {
    let mut config = RuntimeConfig::default();
    if let Some(dir) = std::env::var_os("PROMPT_HOST_CACHE_DIR") {
        config.cache_dir = Some(dir.into());
    }
    config.log_sink = Some(std::sync::Arc::new(|line: &PluginLog| {
        super::log_level::show(line)
    }));
    config.progress = Some(std::sync::Arc::new(|progress: &CompileProgress<'_>| {
        super::log_level::progress(progress)
    }));
    if let Some(after) = std::env::var("PROMPT_HOST_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
    {
        config.progress_after = Duration::from_millis(after);
    }
    config
}

/// Load host.toml and build the host it describes.
pub fn load_host(config: &Path) -> anyhow::Result<Host> {
    load_host_with(config, runtime_config())
}

/// [`load_host`] with the given runtime settings.
pub fn load_host_with(config: &Path, runtime: RuntimeConfig) -> anyhow::Result<Host> {
    Ok(load_host_and_config(config, runtime)?.0)
}

/// [`load_host_with`], and the configuration the host was built from (its `oci://` plugins
/// pointed at the content store): host.toml read once, so what a caller derives from the
/// configuration (`dev`'s watch list) is what the host runs.
pub fn load_host_and_config(
    config: &Path,
    runtime: RuntimeConfig,
) -> anyhow::Result<(Host, HostConfig)> {
    // The engine and linker are built on another core while host.toml is read.
    WasmRuntime::warm_up(&runtime);
    let mut parsed = HostConfig::load(config)?;
    if let Some(store) = super::store_flag::flag() {
        parsed.sessions = parsed.sessions.clone().with_store(Some(store.clone()));
    }
    // The content store sits beside the compile cache this host will use.
    let cache = parsed.oci_cache_dir(runtime.cache_dir.as_deref());
    super::oci::prepare_blocking(&mut parsed, &cache)?;
    let host = Host::from_config(&parsed, runtime)
        .with_context(|| format!("cannot start the host described by {}", config.display()))?;
    host.record_prompt_in_spans(super::telemetry::capture_content());
    Ok((host, parsed))
}

/// Load host.toml, build the host, and give the `[[mcp]]` servers visible from `scope`
/// their start wait (`start_wait_ms`), so a one-shot assembly includes what they published.
/// A server with nothing published by then is reported on stderr and the command goes on
/// without it, or, when it is `required`, the command fails naming it. A server that failed
/// after publishing is reported with the generation the command uses.
pub async fn load_ready_host(config: &Path, scope: Option<&str>) -> anyhow::Result<Host> {
    ready(load_host(config)?, scope).await
}

/// `host` once the `[[mcp]]` servers visible from `scope` had their start wait (see
/// [`load_ready_host`]).
pub async fn ready(host: Host, scope: Option<&str>) -> anyhow::Result<Host> {
    for status in host
        .wait_mcp_start(scope, None)
        .await?
        .into_iter()
        .map(|kept| kept.status)
    {
        if let (McpState::Down, Some(generation)) = (status.state, status.live_generation) {
            let error = status.last_error.as_deref().unwrap_or("down");
            super::warn(&format!(
                "warning: {}: {error}; using its generation {generation}",
                status.label()
            ));
        }
        if let Some(cut) = &status.instructions_cut {
            super::warn(&format!("warning: {}: {}", status.label(), cut.note()));
        }
    }
    Ok(host)
}

/// The facts of a command line.
pub fn facts(target: &Target) -> Facts {
    Facts::from(target.facts.clone())
}

/// Print a JSON value, pretty, with a trailing newline.
pub fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// `prompt-host assemble`; with `--tokenizer`/`--tokens`, the assembly as it renders is
/// counted too (`"tokens"` beside the assembly's own keys).
pub async fn assemble(target: &Target, counting: &Counting) -> anyhow::Result<()> {
    let named = named_tokenizer(counting)?;
    let host = load_ready_host(&target.config, target.scope.as_deref()).await?;
    let tokenizer = counting_tokenizer(&host, named, counting)?;
    let scope = target.scope.as_deref();
    let assembly = host.assemble(scope, facts(target)).await?;
    let mut out = assembly.to_json();
    if let Some(tokenizer) = tokenizer {
        let rendered = host.render_assembly(assembly, scope)?;
        let report = host.token_report_as(&rendered, scope, &tokenizer, counting.tools_as)?;
        out["tokens"] = serde_json::to_value(report)?;
    }
    print_json(&out)
}

/// `prompt-host render`: the exact prompt text (no newline added), or
/// `{"prompt","context"}` with `--json` (and `"tokens"` with `--tokenizer`/`--tokens`).
pub async fn render(target: &Target, json: bool, counting: &Counting) -> anyhow::Result<()> {
    let named = named_tokenizer(counting)?;
    let host = load_ready_host(&target.config, target.scope.as_deref()).await?;
    let tokenizer = counting_tokenizer(&host, named, counting)?;
    let rendered = host.render(target.scope.as_deref(), facts(target)).await?;
    if json {
        let mut out = serde_json::json!({
            "prompt": rendered.prompt,
            "context": rendered.context,
        });
        if let Some(tokenizer) = &tokenizer {
            let scope = target.scope.as_deref();
            let report = host.token_report_as(&rendered, scope, tokenizer, counting.tools_as)?;
            out["tokens"] = serde_json::to_value(report)?;
        }
        print_json(&out)
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(rendered.prompt.as_bytes())?;
        // Piped, the prompt's exact bytes; on a terminal, a newline so the shell's prompt
        // does not run on from its last line.
        if std::io::IsTerminal::is_terminal(&out) && !rendered.prompt.ends_with('\n') {
            out.write_all(b"\n")?;
        }
        out.flush()?;
        Ok(())
    }
}

/// `prompt-host skill`: the text of a skill's `SKILL.md`, exactly, on stdout, once it has
/// passed its checks; what it was checked against on stderr.
pub async fn skill(
    config: &Path,
    server: &str,
    scope: Option<&str>,
    name: &str,
) -> anyhow::Result<()> {
    let host = load_ready_host(config, scope).await?;
    let body = host.mcp_skill(server, scope, name).await?;
    let mut out = std::io::stdout().lock();
    out.write_all(body.text.as_bytes())?;
    out.flush()?;
    let checked = if body.verified {
        "matches the index"
    } else {
        "a dynamic skill: no digest to check"
    };
    // The URI is the server's text: escaped, so it cannot move the cursor or forge a line.
    let uri = prompt_host::mcp::shown(&body.skill.uri);
    eprintln!("{} ({uri}): {} ({checked})", body.skill.name, body.digest);
    Ok(())
}

/// Whether `step` counts its request, and with what.
pub enum RequestCounting {
    /// It does not.
    None,
    /// With host.toml's `[prompt] tokenizer` (`--tokens`).
    Configured,
    /// With `--tokenizer`'s, loaded before the host.
    Named(Tokenizer),
}

/// `prompt-host step`: one step against a session log; prints the model request, and its
/// tokens on standard error when `counting` asks.
pub async fn step(
    target: &Target,
    session: &Path,
    options: StepOptions,
    counting: RequestCounting,
) -> anyhow::Result<()> {
    let host = load_ready_host(&target.config, target.scope.as_deref()).await?;
    // Known before the step, so a count that cannot be made writes nothing.
    let tokenizer = match counting {
        RequestCounting::None => None,
        RequestCounting::Configured => Some(host.tokenizer_named(None)?),
        RequestCounting::Named(tokenizer) => Some(Arc::new(tokenizer)),
    };
    let session = &host.session_name(session)?;
    let (mut log, report) = Session::open(session).with_context(|| {
        format!(
            "cannot open session log {}",
            prompt_host::session::display_name(session)
        )
    })?;
    for notice in report.notices(session) {
        super::warn(&notice);
    }
    let (_, outcome) = host
        .step(&mut log, target.scope.as_deref(), facts(target), &options)
        .await?;
    print_json(&serde_json::to_value(&outcome.request)?)?;
    if let Some(tokenizer) = tokenizer {
        // The step is written: a count that fails now is a warning, not the step's error.
        match host.request_tokens(&outcome.request, &tokenizer) {
            Ok(t) => eprintln!(
                "request: {} tokens ({}: system prompt {}, tools {}, messages {})",
                t.total, t.tokenizer, t.system, t.tools, t.messages
            ),
            Err(e) => super::warn(&format!("the request was not counted: {e}")),
        }
    }
    Ok(())
}

/// Load `--tokenizer`'s tokenizer, the error naming it.
pub fn load_tokenizer(spec: &str) -> anyhow::Result<Tokenizer> {
    Ok(Tokenizer::load(spec, None)?)
}

/// `--tokenizer`'s tokenizer, loaded before the host: a wrong name fails before any plugin
/// loads.
pub fn named_tokenizer(counting: &Counting) -> anyhow::Result<Option<Tokenizer>> {
    if counting.tools_as.is_some() && !counting.tokens && counting.tokenizer.is_none() {
        return Err(super::Usage(
            "--tools-as says how tool schemas are counted: add --tokens or --tokenizer".into(),
        )
        .into());
    }
    counting
        .tokenizer
        .as_deref()
        .map(load_tokenizer)
        .transpose()
}

/// What a command counts with: `--tokenizer`'s (loaded already), host.toml's with
/// `--tokens`, or nothing.
pub fn counting_tokenizer(
    host: &Host,
    named: Option<Tokenizer>,
    counting: &Counting,
) -> anyhow::Result<Option<Arc<Tokenizer>>> {
    if let Some(named) = named {
        return Ok(Some(Arc::new(named)));
    }
    if !counting.tokens {
        return Ok(None);
    }
    Ok(Some(host.tokenizer_named(None)?))
}
