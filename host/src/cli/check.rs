//! `prompt-host check PLUGIN.wasm`: validate a component and list what it declares.

use std::path::Path;

use anyhow::Context;

use crate::wasm::{Declaration, WasmRuntime};

/// Run `check`; a component that cannot be loaded is an error (exit 1).
pub fn run(plugin: &Path, config: &str) -> anyhow::Result<()> {
    let config: serde_json::Value = serde_json::from_str(config)
        .with_context(|| format!("--config is not valid JSON: {config}"))?;
    let bytes =
        std::fs::read(plugin).with_context(|| format!("cannot read {}", plugin.display()))?;
    let runtime = WasmRuntime::new(super::commands::runtime_config())?;
    let report = runtime
        .check_with_config(&bytes, &config)
        .with_context(|| format!("{} cannot be loaded", plugin.display()))?;
    println!("{}: ok", plugin.display());
    println!("  world:   {:?}", report.world);
    println!("  sha256:  {}", report.sha256);
    println!("  size:    {} bytes", report.wasm_bytes);
    if let Some(error) = &report.init_error {
        println!("  init with this config failed: {error}");
    }
    println!("  declares:");
    if report.declarations.is_empty() {
        println!("    (nothing)");
    }
    for declaration in &report.declarations {
        println!("    {}", describe(declaration));
    }
    Ok(())
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
