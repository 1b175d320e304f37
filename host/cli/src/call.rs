//! `prompt-host call PLUGIN.wasm EXPORT [NAME]`: load a plugin alone (its `init` runs),
//! call one export, and print the result, every log line the plugin wrote, and the time
//! each took. The quickest way to try a plugin while writing it.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use prompt_host::host::{Facts, Host};
use prompt_host::policy::PluginSpec;
use prompt_host::prompt::{AssembleContext, Assembly, PromptConfig};
use prompt_host::wasm::{Export, PluginLog};

/// What `call` was asked.
pub struct CallArgs<'a> {
    pub plugin: &'a Path,
    pub export: &'a str,
    pub name: Option<&'a str>,
    pub config: &'a str,
    pub scope: Option<&'a str>,
    pub facts: Vec<(String, String)>,
    pub assembly: Option<&'a str>,
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
        (Some(_), None) => {
            return Err(super::Usage(format!(
                "{} needs the entry's NAME (the section, context, variable, tool-provider key or listener key)",
                args.export
            ))
            .into())
        }
    };
    // Read before the plugin's `init` runs, so that a mistake here costs nothing.
    let assembly = match args.assembly {
        Some(given) => assembly_from(given)?,
        None => Assembly::default(),
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
    let mut ctx: AssembleContext = Facts::from(args.facts).into_context();
    ctx.scope_chain = args
        .scope
        .map(|scope| host.registry().scope_chain(scope))
        .unwrap_or_default();
    if let Some(text) = fixed_text(&host, &loaded, export, name, &ctx) {
        writeln!(
            out,
            "{} \"{name}\": fixed (the host stores its text; an assembly does not call the plugin for it)",
            args.export
        )?;
        serde_json::to_writer_pretty(&mut out, &json!({ "result": text }))?;
        writeln!(out)?;
        return print_lines(&mut out, &lines);
    }
    let started = Instant::now();
    let result = prompt_host::blocking::run_blocking(|| loaded.call(export, name, &ctx, assembly));
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

/// The stored text of a fixed section or context the plugin declared, for `section-text`
/// and `context-text` (the export is only called for dynamic entries).
fn fixed_text(
    host: &Host,
    loaded: &prompt_host::wasm::LoadedPlugin,
    export: Export,
    name: &str,
    ctx: &AssembleContext,
) -> Option<String> {
    use prompt_host::wasm::Declaration;
    let fixed = loaded.declarations().iter().any(|d| match (export, d) {
        (
            Export::SectionText,
            Declaration::Section {
                name: n, dynamic, ..
            },
        )
        | (
            Export::ContextText,
            Declaration::Context {
                name: n, dynamic, ..
            },
        ) => n == name && !dynamic,
        _ => false,
    });
    if !fixed {
        return None;
    }
    let scope = loaded.scope();
    let assembly = host.registry().assemble_blocking(scope, ctx.clone()).ok()?;
    let entries = match export {
        Export::SectionText => &assembly.sections,
        _ => &assembly.contexts,
    };
    entries
        .iter()
        .find(|e| e.name == name)
        .map(|e| e.text.to_string())
}

/// A listener's input: an `assemble` output (sections, contexts, tools, variables), given
/// inline (text starting with `{`) or as a file.
fn assembly_from(given: &str) -> anyhow::Result<Assembly> {
    let (text, what) = if given.trim_start().starts_with('{') {
        (given.to_string(), "--assembly".to_string())
    } else {
        let path = Path::new(given);
        (
            prompt_host::fsutil::read_regular_to_string(path, 64 << 20)?,
            path.display().to_string(),
        )
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{what} is not JSON"))?;
    Assembly::from_json(&value)
        .with_context(|| format!("{what} is not an assembly (the output of `assemble`)"))
}

fn print_lines(out: &mut impl Write, lines: &Mutex<Vec<PluginLog>>) -> anyhow::Result<()> {
    let lines = lines.lock().map(|l| l.clone()).unwrap_or_default();
    writeln!(out, "log: {} line(s)", lines.len())?;
    for line in lines {
        writeln!(out, "  {}: {}", line.stream, line.message)?;
    }
    Ok(())
}
