//! `prompt-host check PLUGIN.wasm`: validate a component and list what it declares.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use prompt_host::policy::{DirGrant, Grants, PluginOptions};
use prompt_host::wasm::{CheckOptions, Declaration, WasmRuntime};

/// Run `check`: a component that cannot be loaded, or whose `init` fails with `config`, is
/// an error (exit 1); what is known about the file is printed first.
pub fn run(
    plugin: &Path,
    config: &str,
    grant_dirs: &[String],
    grant_env: Vec<String>,
) -> anyhow::Result<()> {
    let config: serde_json::Value = serde_json::from_str(config)
        .with_context(|| format!("--config is not valid JSON: {config}"))?;
    let grants = grants(grant_dirs, grant_env)?;
    let name = plugin_name(plugin);
    let runtime = WasmRuntime::new(super::commands::runtime_config())?;
    let bytes = runtime.read(&name, plugin)?;
    let options = PluginOptions::default().grants(grants);
    let granted = options.grants.describe();
    let check = CheckOptions::default()
        .name(name)
        .config(config.clone())
        .options(options);
    let report = runtime
        .check(&bytes, &check)
        .with_context(|| format!("{} cannot be loaded", plugin.display()))?;
    let mut out = std::io::stdout().lock();
    let verdict = if report.init_error.is_some() {
        "init failed"
    } else {
        "ok"
    };
    writeln!(out, "{}: {verdict}", plugin.display())?;
    writeln!(out, "  world:   {:?}", report.world)?;
    writeln!(out, "  wit:     prompt-host:plugin@{}", report.version)?;
    writeln!(out, "  sha256:  {}", report.sha256)?;
    writeln!(out, "  size:    {} bytes", report.wasm_bytes)?;
    writeln!(out, "  grants:  {granted}")?;
    if let Some(error) = &report.init_error {
        out.flush()?;
        anyhow::bail!(
            "{} is a valid component, but its init failed with --config {config}: {error}",
            plugin.display()
        );
    }
    writeln!(out, "  declares:")?;
    if report.declarations.is_empty() {
        writeln!(out, "    (nothing)")?;
    }
    for declaration in &report.declarations {
        writeln!(out, "    {}", describe(declaration))?;
    }
    Ok(())
}

/// The grants of `--grant-dir HOST:GUEST` and `--grant-env NAME`, checked.
fn grants(dirs: &[String], env: Vec<String>) -> anyhow::Result<Grants> {
    let dirs = dirs
        .iter()
        .map(|text| match text.rsplit_once(':') {
            Some((host, guest)) if !host.is_empty() => Ok(DirGrant::new(host, guest)),
            _ => anyhow::bail!("--grant-dir expects HOST:GUEST, got \"{text}\""),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let grants = env.into_iter().fold(Grants::new(), Grants::env);
    dirs.into_iter()
        .fold(grants, Grants::dir)
        .resolve(Path::new("."))
        .map_err(|e| anyhow::anyhow!("--grant: {e}"))
}

/// The name a file is checked under: its stem (`persona` for `persona.wasm`).
fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "plugin".to_string())
}

fn describe(declaration: &Declaration) -> String {
    let how = |dynamic: bool, bytes: usize| {
        if dynamic {
            "dynamic".to_string()
        } else {
            format!("fixed, {bytes} bytes")
        }
    };
    match declaration {
        Declaration::Section {
            name,
            order,
            dynamic,
            bytes,
            complete,
        } => format!(
            "section  {name:?} order {order} ({}){}",
            how(*dynamic, *bytes),
            if *complete { ", complete" } else { "" }
        ),
        Declaration::Context {
            name,
            order,
            dynamic,
            bytes,
        } => format!(
            "context  {name:?} order {order} ({})",
            how(*dynamic, *bytes)
        ),
        Declaration::Variable { name, dynamic } => format!(
            "variable {name:?} ({})",
            if *dynamic { "dynamic" } else { "fixed" }
        ),
        Declaration::Tools {
            dynamic_key,
            names,
            bytes,
        } => match dynamic_key {
            Some(key) => format!("tools    dynamic provider {key:?}"),
            None => format!("tools    fixed: {} ({bytes} bytes)", names.join(", ")),
        },
        Declaration::Suppressor => "suppresses runtime context".to_string(),
        Declaration::Listener {
            key,
            prepend,
            global,
        } => format!(
            "listener {key:?}{}{}",
            if *prepend { ", prepend" } else { "" },
            if *global { ", global" } else { "" }
        ),
    }
}
