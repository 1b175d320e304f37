//! `prompt-host call PLUGIN.wasm EXPORT [NAME]`: load a plugin alone (its `init` runs),
//! call one export, and print the result, every log line the plugin wrote, and the time
//! each took. The quickest way to try a plugin while writing it.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use crate::host::{Facts, Host};
use crate::prompt::{AssembleContext, Assembly, PromptConfig};
use crate::wasm::{Export, PluginLog, PluginSpec};

/// What `call` was asked.
pub struct CallArgs<'a> {
    pub plugin: &'a Path,
    pub export: &'a str,
    pub name: Option<&'a str>,
    pub config: &'a str,
    pub scope: Option<&'a str>,
    pub facts: Vec<(String, String)>,
    pub assembly: Option<&'a Path>,
}

/// Run `call`.
pub fn run(args: CallArgs<'_>) -> anyhow::Result<()> {
    let config: serde_json::Value = serde_json::from_str(args.config)
        .with_context(|| format!("--config is not valid JSON: {}", args.config))?;
    let export = match args.export {
        "init" => None,
        other => Some(Export::parse(other).with_context(|| {
            format!(
                "unknown export \"{other}\": init, section-text, context-text, variable, tools or on-assemble"
            )
        })?),
    };
    let name = match (export, args.name) {
        (None, _) => "",
        (Some(_), Some(name)) => name,
        (Some(_), None) => anyhow::bail!(
            "{} needs the entry's NAME (the section, context, variable, tool-provider key or listener key)",
            args.export
        ),
    };
    // Every line the plugin writes is kept (and shown at the chosen --log-level).
    let lines: Arc<Mutex<Vec<PluginLog>>> = Arc::default();
    let mut runtime = super::commands::runtime_config();
    let shown = runtime.log_sink.take();
    let kept = lines.clone();
    runtime.log_sink = Some(Arc::new(move |line: &PluginLog| {
        if let Ok(mut lines) = kept.lock() {
            lines.push(line.clone());
        }
        if let Some(shown) = &shown {
            shown(line);
        }
    }));
    let host = Host::new(PromptConfig::default(), runtime)?;
    if let Some(scope) = args.scope {
        host.bind_scope(scope, None)?;
    }
    let plugin_name = args.plugin.file_stem().map_or_else(
        || "plugin".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut spec = PluginSpec::new(plugin_name).config(config);
    spec.scope = args.scope.map(str::to_string);
    let started = Instant::now();
    let loaded = host.load_plugin(spec, args.plugin)?;
    let init_took = started.elapsed();
    let mut out = std::io::stdout().lock();
    writeln!(out, "init: ok in {:.3} ms", init_took.as_secs_f64() * 1e3)?;
    let Some(export) = export else {
        for declaration in loaded.declarations() {
            writeln!(out, "  declares {}", serde_json::to_string(declaration)?)?;
        }
        return print_lines(&mut out, &lines);
    };
    let assembly = match args.assembly {
        Some(path) => assembly_from(path)?,
        None => Assembly::default(),
    };
    let mut ctx: AssembleContext = Facts::from(args.facts).into_context();
    ctx.scope_chain = args
        .scope
        .map(|scope| host.registry().scope_chain(scope))
        .unwrap_or_default();
    let started = Instant::now();
    let result = crate::blocking::run_blocking(|| loaded.call(export, name, &ctx, assembly));
    let took = started.elapsed();
    match result {
        Ok(value) => {
            writeln!(
                out,
                "{} \"{name}\": ok in {:.3} ms",
                args.export,
                took.as_secs_f64() * 1e3
            )?;
            serde_json::to_writer_pretty(&mut out, &json!({ "result": value }))?;
            writeln!(out)?;
            print_lines(&mut out, &lines)
        }
        Err(e) => {
            print_lines(&mut out, &lines)?;
            anyhow::bail!(
                "{} \"{name}\" failed in {:.3} ms: {e}",
                args.export,
                took.as_secs_f64() * 1e3
            )
        }
    }
}

/// A listener's input: an `assemble` output (sections, contexts, tools, variables).
fn assembly_from(path: &Path) -> anyhow::Result<Assembly> {
    let text = crate::fsutil::read_regular_to_string(path, 64 << 20)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    Assembly::from_json(&value).with_context(|| {
        format!(
            "{} is not an assembly (the output of `assemble`)",
            path.display()
        )
    })
}

fn print_lines(out: &mut impl Write, lines: &Mutex<Vec<PluginLog>>) -> anyhow::Result<()> {
    let lines = lines.lock().map(|l| l.clone()).unwrap_or_default();
    writeln!(out, "log: {} line(s)", lines.len())?;
    for line in lines {
        writeln!(out, "  {}: {}", line.stream, line.message)?;
    }
    Ok(())
}
