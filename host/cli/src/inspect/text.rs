//! `inspect`'s terminal tables, from its [`Report`]. Columns a script may already parse keep
//! their place; what needs a tokenizer appears only with one.

use std::io::Write;

use super::report::{Report, Tokens};

/// Print `report`'s tables.
pub fn print(out: &mut impl Write, report: &Report) -> anyhow::Result<()> {
    writeln!(out, "scope: {}", report.scope)?;
    let spans = report.sections.iter().filter(|s| s.start.is_some()).count();
    writeln!(
        out,
        "prompt: {} bytes, {} sections",
        report.prompt.len(),
        spans
    )?;
    let counted = report.tokens.is_some();
    // The TOKENS column is there only when counting was asked for, so the output without
    // `--tokenizer` stays what scripts reading it already parse.
    let token_cell = |tokens: Option<usize>| {
        if counted {
            format!(
                " {:>7}",
                tokens.map_or_else(|| "-".to_string(), |t| t.to_string())
            )
        } else {
            String::new()
        }
    };
    let token_header = if counted {
        format!(" {:>7}", "TOKENS")
    } else {
        String::new()
    };
    if let Some(tokens) = &report.tokens {
        let shape = tokens
            .tools_as
            .as_deref()
            .map_or_else(String::new, |route| format!(" (as {route} sends them)"));
        writeln!(
            out,
            "tokens ({}): prompt {}, sections counted alone {}, runtime context {}, tool schemas {}{shape}",
            tokens.tokenizer, tokens.prompt, tokens.sections_sum, tokens.context, tokens.tools
        )?;
        categories(out, tokens)?;
    }
    if let Some(overrun) = &report.overrun {
        writeln!(out, "OVER BUDGET: {overrun}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<34} {:>7} {:<18} {:<16} {:>7}{token_header}  shadows",
        "SECTION", "ORDER", "PLUGIN", "LAYER", "BYTES"
    )?;
    for section in &report.sections {
        let shadows: Vec<String> = section
            .shadows
            .iter()
            .map(|s| format!("{} in {}", s.plugin, s.layer))
            .collect();
        writeln!(
            out,
            "{:<34} {:>7} {:<18} {:<16} {:>7}{}  {}",
            section.name,
            section.order.map_or("-".into(), |o| o.to_string()),
            section.plugin,
            section.layer,
            section.bytes,
            token_cell(section.tokens),
            shadows.join(", ")
        )?;
    }

    writeln!(out)?;
    writeln!(
        out,
        "{:<34} {:<18} {:<16}{token_header}",
        "CONTEXT", "PLUGIN", "LAYER"
    )?;
    for context in &report.contexts {
        writeln!(
            out,
            "{:<34} {:<18} {:<16}{}",
            context.name,
            context.plugin,
            context.layer,
            token_cell(context.tokens)
        )?;
    }

    writeln!(out)?;
    writeln!(
        out,
        "{:<34} {:<18} {:<16}{token_header}",
        "TOOL", "PROVIDER", "LAYER"
    )?;
    for tool in &report.tools {
        writeln!(
            out,
            "{:<34} {:<18} {:<16}{}",
            tool.name,
            tool.provider,
            tool.layer,
            token_cell(tool.tokens)
        )?;
    }
    writeln!(
        out,
        "tool providers: {}",
        none_if_empty(&report.tool_providers)
    )?;

    writeln!(out)?;
    writeln!(
        out,
        "{:<34} {:<18} {:<16} VALUE",
        "VARIABLE", "PLUGIN", "LAYER"
    )?;
    for variable in &report.variables {
        let shown = match &variable.value {
            Some(v) => format!("{v:?}"),
            None => "(no value)".into(),
        };
        writeln!(
            out,
            "{:<34} {:<18} {:<16} {shown}",
            variable.name, variable.plugin, variable.layer
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "runtime context suppressed by: {}",
        none_if_empty(&report.suppressors)
    )?;
    writeln!(
        out,
        "listeners (outermost first): {}",
        none_if_empty(&report.listeners)
    )?;
    for change in report.listener_changes.iter().filter(|c| !c.is_empty()) {
        let mut did = Vec::new();
        for (verb, names) in [
            ("added", &change.added),
            ("removed", &change.removed),
            ("rewrote", &change.rewritten),
        ] {
            if !names.is_empty() {
                did.push(format!("{verb} {}", names.join(", ")));
            }
        }
        let key = super::keyed(&change.key);
        writeln!(
            out,
            "  {}{key} ({}): {}",
            change.plugin,
            change.layer,
            did.join("; ")
        )?;
    }

    // What each plugin this scope sees may reach beyond its sandbox.
    writeln!(out)?;
    writeln!(out, "{:<24} {:<16} GRANTS", "PLUGIN", "LAYER")?;
    for plugin in &report.plugins {
        writeln!(
            out,
            "{:<24} {:<16} {}",
            plugin.name, plugin.layer, plugin.grants
        )?;
    }

    // The MCP servers this scope sees, and what each injects.
    if !report.mcp_servers.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{:<24} {:<16} {:<9} {:<11} {:<11} {:<12} {:>9}",
            "MCP SERVER", "LAYER", "TRANSPORT", "LIFECYCLE", "PROTOCOL", "INSTRUCTIONS", "BYTES"
        )?;
        for s in &report.mcp_servers {
            writeln!(
                out,
                "{:<24} {:<16} {:<9} {:<11} {:<11} {:<12} {:>9}",
                s.server,
                s.layer,
                s.transport,
                s.lifecycle.as_deref().unwrap_or("-"),
                s.protocol.as_deref().unwrap_or("-"),
                if s.instructions_enabled { "on" } else { "off" },
                s.instructions_bytes
            )?;
        }
    }

    // A server's instructions cut to their budget: said here as the prompt says it.
    if !report.cuts.is_empty() {
        writeln!(out)?;
        writeln!(out, "MCP instructions cut to their budgets:")?;
        for cut in &report.cuts {
            writeln!(
                out,
                "  {} (generation {}): kept {} of {} tokens ({} of {} bytes), budget {} ({})",
                cut.server,
                cut.generation,
                cut.kept_tokens,
                cut.tokens
                    .map_or_else(|| "uncounted".to_string(), |t| t.to_string()),
                cut.kept_bytes,
                cut.bytes,
                cut.budget,
                cut.tokenizer
            )?;
        }
    }
    Ok(())
}

/// Totals by category, and their share of the context window when one was named: what a
/// request spends before the model reads a word of the conversation.
fn categories(out: &mut impl Write, tokens: &Tokens) -> anyhow::Result<()> {
    let total: usize = tokens.categories.iter().map(|c| c.tokens).sum();
    let share = |n: usize| {
        tokens.context_window.map_or_else(String::new, |window| {
            format!(" {:>6.1}%", n as f64 * 100.0 / window.max(1) as f64)
        })
    };
    match tokens.context_window {
        Some(window) => writeln!(
            out,
            "{:<20} {:>9} {:>7}   (of a {window}-token context window)",
            "CATEGORY", "TOKENS", "SHARE"
        )?,
        None => writeln!(out, "{:<20} {:>9}", "CATEGORY", "TOKENS")?,
    }
    for category in &tokens.categories {
        writeln!(
            out,
            "{:<20} {:>9}{}",
            category.name,
            category.tokens,
            share(category.tokens)
        )?;
    }
    writeln!(out, "{:<20} {:>9}{}", "total", total, share(total))?;
    if let Some(window) = tokens.context_window {
        match window.checked_sub(total) {
            Some(free) => writeln!(out, "{:<20} {:>9}{}", "free", free, share(free))?,
            None => writeln!(
                out,
                "{:<20} {:>9}   OVER the context window by {} tokens",
                "free",
                0,
                total - window
            )?,
        }
    }
    Ok(())
}

fn none_if_empty(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".into()
    } else {
        items.join(", ")
    }
}
