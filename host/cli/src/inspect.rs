//! `prompt-host inspect`: who contributed what, where, and how big; with `--against`, where
//! a model's KV-cache reuse stops compared with a previous rendering.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context;

mod timings;

use super::commands::{facts, load_ready_host};
use super::Target;
use prompt_host::prompt::cache_prefix::{compare, section_spans};
use prompt_host::prompt::{EntryInfo, EntryKind};

/// The largest `--against` file read.
const MAX_PREVIOUS_BYTES: u64 = 256 << 20;

/// Run `inspect`.
pub async fn run(
    target: &Target,
    against: Option<&Path>,
    session: Option<&Path>,
    tokenizer: Option<&str>,
    timed: bool,
) -> anyhow::Result<()> {
    let named = tokenizer.map(super::commands::load_tokenizer).transpose()?;
    let host = load_ready_host(&target.config, target.scope.as_deref()).await?;
    let scope = target.scope.as_deref();
    let max_bytes = host.registry().config().max_prompt_bytes;
    // `--tokenizer`'s, else host.toml's `[prompt] tokenizer`.
    let tokenizer = named
        .map(std::sync::Arc::new)
        .or_else(|| host.tokenizer().cloned());
    // With a tokenizer, the rendering (its contexts resolved) is what gets counted; with
    // --timings, the rendering is what gets timed.
    let timings = timed.then(prompt_host::prompt::Timings::new);
    let mut facts = facts(target);
    if let Some(timings) = &timings {
        facts = facts.timings(std::sync::Arc::clone(timings));
    }
    let (assembly, tokens) = match &tokenizer {
        Some(tokenizer) => {
            let rendered = host.render(scope, facts).await?;
            let report = host.token_report(&rendered, scope, tokenizer)?;
            (rendered.assembly, Some(report))
        }
        None if timed => (host.render(scope, facts).await?.assembly, None),
        None => (host.assemble(scope, facts).await?, None),
    };
    let (prompt, spans) =
        section_spans(&assembly, max_bytes).map_err(|source| host.render_error(scope, source))?;
    let registry = host.registry();
    // Layers visible to this scope, farthest first: global, then the chain reversed.
    let mut layers: Vec<Option<String>> = vec![None];
    if let Some(key) = scope {
        let mut chain: Vec<Option<String>> = registry
            .scope_chain(key)
            .iter()
            .map(|k| Some(k.to_string()))
            .collect();
        chain.reverse();
        layers.extend(chain);
    }
    let rank = |s: &Option<String>| layers.iter().position(|l| l == s);
    let entries = registry.entries();
    let visible: Vec<&EntryInfo> = entries
        .iter()
        .filter(|e| e.kind != EntryKind::Listener && rank(&e.scope).is_some())
        .collect();
    let by_name = |kind: EntryKind| {
        let mut map: HashMap<&str, Vec<&EntryInfo>> = HashMap::new();
        for e in visible.iter().filter(|e| e.kind == kind) {
            if let Some(name) = e.name.as_deref() {
                map.entry(name).or_default().push(e);
            }
        }
        for list in map.values_mut() {
            list.sort_by_key(|e| rank(&e.scope));
        }
        map
    };
    let sections = by_name(EntryKind::Section);
    let label = |s: &Option<String>| s.clone().unwrap_or_else(|| "global".into());
    let mut out = std::io::stdout().lock();

    writeln!(out, "scope: {}", scope.unwrap_or("global"))?;
    writeln!(
        out,
        "prompt: {} bytes, {} sections",
        prompt.len(),
        spans.len()
    )?;
    // The TOKENS column is there only when counting was asked for, so the output without
    // `--tokenizer` stays what scripts reading it already parse.
    let token_cell = |list: Option<&Vec<prompt_host::tokens::PartTokens>>, name: &str| {
        list.map_or_else(String::new, |parts| {
            let count = parts
                .iter()
                .find(|p| p.name == name)
                .map_or_else(|| "-".to_string(), |p| p.tokens.to_string());
            format!(" {count:>7}")
        })
    };
    let token_header = if tokens.is_some() {
        format!(" {:>7}", "TOKENS")
    } else {
        String::new()
    };
    if let Some(report) = &tokens {
        writeln!(
            out,
            "tokens ({}): prompt {}, sections counted alone {}, runtime context {}, tool schemas {}",
            report.tokenizer,
            report.prompt,
            report.sections_sum,
            report.context,
            report.tools.iter().map(|t| t.tokens).sum::<usize>()
        )?;
    }
    let sections_tokens = tokens.as_ref().map(|r| &r.sections);
    let contexts_tokens = tokens.as_ref().map(|r| &r.contexts);
    let tools_tokens = tokens.as_ref().map(|r| &r.tools);
    writeln!(out)?;
    writeln!(
        out,
        "{:<34} {:>7} {:<18} {:<16} {:>7}{token_header}  shadows",
        "SECTION", "ORDER", "PLUGIN", "LAYER", "BYTES"
    )?;
    for section in &assembly.sections {
        let bytes = spans
            .iter()
            .find(|s| s.name == section.name)
            .map_or(0, |s| s.end - s.start);
        let (order, owner, layer, shadows) = match sections.get(section.name.as_str()) {
            Some(list) => {
                let winner = list[list.len() - 1];
                let shadows: Vec<String> = list[..list.len() - 1]
                    .iter()
                    .map(|e| format!("{} in {}", e.owner, label(&e.scope)))
                    .collect();
                (
                    winner.order.map_or("-".into(), |o| o.to_string()),
                    winner.owner.clone(),
                    label(&winner.scope),
                    shadows.join(", "),
                )
            }
            None => ("-".into(), "(listener)".into(), "-".into(), String::new()),
        };
        writeln!(
            out,
            "{:<34} {:>7} {:<18} {:<16} {:>7}{}  {}",
            section.name,
            order,
            owner,
            layer,
            bytes,
            token_cell(sections_tokens, &section.name),
            shadows
        )?;
    }

    writeln!(out)?;
    writeln!(
        out,
        "{:<34} {:<18} {:<16}{token_header}",
        "CONTEXT", "PLUGIN", "LAYER"
    )?;
    let contexts = by_name(EntryKind::Context);
    for context in &assembly.contexts {
        let (owner, layer) = contexts
            .get(context.name.as_str())
            .map(|l| (l[l.len() - 1].owner.clone(), label(&l[l.len() - 1].scope)))
            .unwrap_or_else(|| ("(listener)".into(), "-".into()));
        writeln!(
            out,
            "{:<34} {:<18} {:<16}{}",
            context.name,
            owner,
            layer,
            token_cell(contexts_tokens, &context.name)
        )?;
    }

    writeln!(out)?;
    writeln!(
        out,
        "{:<34} {:<18} {:<16}{token_header}",
        "TOOL", "PROVIDER", "LAYER"
    )?;
    let declared = host.tool_owners();
    for tool in &assembly.tools {
        let (owner, layer) = declared
            .get(&tool.name)
            .map_or(("(dynamic provider or listener)", "-"), |o| {
                (o.plugin.as_str(), o.layer.as_str())
            });
        writeln!(
            out,
            "{:<34} {:<18} {:<16}{}",
            tool.name,
            owner,
            layer,
            token_cell(tools_tokens, &tool.name)
        )?;
    }
    let providers: Vec<String> = visible
        .iter()
        .filter(|e| e.kind == EntryKind::ToolProvider)
        .map(|e| {
            format!(
                "{}{} in {} ({})",
                e.owner,
                keyed(&e.name),
                label(&e.scope),
                if e.dynamic { "dynamic" } else { "fixed" }
            )
        })
        .collect();
    writeln!(out, "tool providers: {}", none_if_empty(&providers))?;

    writeln!(out)?;
    writeln!(
        out,
        "{:<34} {:<18} {:<16} VALUE",
        "VARIABLE", "PLUGIN", "LAYER"
    )?;
    let variables = by_name(EntryKind::Variable);
    for (name, value) in &assembly.variables {
        let (owner, layer) = variables
            .get(name.as_str())
            .map(|l| (l[l.len() - 1].owner.clone(), label(&l[l.len() - 1].scope)))
            .unwrap_or_else(|| ("(listener)".into(), "-".into()));
        let shown = match value {
            Some(v) => format!("{:?}", v),
            None => "(no value)".into(),
        };
        writeln!(out, "{name:<34} {owner:<18} {layer:<16} {shown}")?;
    }
    let suppressors: Vec<String> = visible
        .iter()
        .filter(|e| e.kind == EntryKind::Suppressor)
        .map(|e| format!("{} in {}", e.owner, label(&e.scope)))
        .collect();
    writeln!(out)?;
    writeln!(
        out,
        "runtime context suppressed by: {}",
        none_if_empty(&suppressors)
    )?;
    let listeners: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Listener)
        .map(|e| format!("{}{} ({})", e.owner, keyed(&e.name), label(&e.scope)))
        .collect();
    writeln!(
        out,
        "listeners (outermost first): {}",
        none_if_empty(&listeners)
    )?;

    // What each plugin this scope sees may reach beyond its sandbox.
    writeln!(out)?;
    writeln!(out, "{:<24} {:<16} GRANTS", "PLUGIN", "LAYER")?;
    for plugin in host.plugins() {
        if rank(&plugin.scope).is_none() {
            continue;
        }
        let granted = plugin.grants.describe();
        writeln!(
            out,
            "{:<24} {:<16} {granted}",
            plugin.name,
            label(&plugin.scope)
        )?;
    }

    // The MCP servers this scope sees, and what each injects.
    let servers: Vec<_> = host
        .mcp_status()
        .into_iter()
        .map(|kept| kept.status)
        .filter(|s| rank(&s.scope).is_some())
        .collect();
    if !servers.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{:<24} {:<16} {:<9} {:<11} {:<11} {:<12} {:>9}",
            "MCP SERVER", "LAYER", "TRANSPORT", "LIFECYCLE", "PROTOCOL", "INSTRUCTIONS", "BYTES"
        )?;
        for s in &servers {
            writeln!(
                out,
                "{:<24} {:<16} {:<9} {:<11} {:<11} {:<12} {:>9}",
                s.server,
                label(&s.scope),
                s.transport,
                s.lifecycle.map_or("-", |l| l.as_str()),
                s.protocol_version.as_deref().unwrap_or("-"),
                if s.instructions_enabled { "on" } else { "off" },
                s.instructions.len()
            )?;
        }
    }

    // A server's instructions cut to their budget: said here as the prompt says it.
    let cuts = host.instructions_cuts_for(scope);
    if !cuts.is_empty() {
        writeln!(out)?;
        writeln!(out, "MCP instructions cut to their budgets:")?;
        for cut in &cuts {
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

    if let Some(timings) = &timings {
        timings::print(&mut out, &host, &timings.report(), |s| rank(s).is_some())?;
    }

    if let Some(path) = against {
        let text = prompt_host::fsutil::read_regular_to_string(path, MAX_PREVIOUS_BYTES)?;
        let previous = super::prefix::previous_prompt(&text, max_bytes)
            .with_context(|| format!("{} holds no previous prompt", path.display()))?;
        let report = compare(&previous, &prompt, &spans);
        writeln!(out)?;
        writeln!(out, "cache prefix against {}:", path.display())?;
        if report.keeps_prefix {
            writeln!(out,
                "  kept: the new prompt ({} bytes) starts with the whole previous prompt ({} bytes); KV-cache reuse covers all of it",
                report.current_bytes, report.previous_bytes
            )?;
        } else {
            writeln!(
                out,
                "  broken at byte {} of {} (previous) / {} (new): KV-cache reuse stops there",
                report.reusable_bytes, report.previous_bytes, report.current_bytes
            )?;
            match &report.first_changed_section {
                Some(name) => writeln!(out, "  first changed section: {name}")?,
                None => writeln!(out, "  the new prompt ends before the previous one")?,
            }
        }
    }
    if let Some(path) = session {
        session_report(&mut out, &host.session_name(path)?)?;
    }
    Ok(())
}

/// How many recorded replies `--session` lists.
const USAGE_SHOWN: usize = 5;

/// The breakpoints of the log's newest request and the usage its providers reported.
fn session_report(out: &mut impl Write, path: &Path) -> anyhow::Result<()> {
    use prompt_host::session::ASSISTANT_MESSAGE;
    use prompt_host::session::{EventData, Session, Usage};
    let (session, _) = Session::open(path).with_context(|| {
        format!(
            "cannot open session log {}",
            prompt_host::session::display_name(path)
        )
    })?;
    writeln!(out)?;
    let route = prompt_host::session::context_in_force(session.events());
    writeln!(
        out,
        "session {} (route {}, model {}):",
        prompt_host::session::display_name(path),
        route.name,
        route.model.as_deref().unwrap_or("none")
    )?;
    match prompt_host::session::request_at(&session, None) {
        Ok((step, request)) if request.cache_breakpoints.is_empty() => writeln!(
            out,
            "  step {step}'s request carries no prompt-cache breakpoints{}",
            if route.capabilities().cache_breakpoints == 0 {
                " (the route's provider caches on its own)"
            } else {
                ""
            }
        )?,
        Ok((step, request)) => {
            let at: Vec<String> = request
                .cache_breakpoints
                .iter()
                .map(|b| match b.at {
                    "system" => format!("end of system (block {})", b.index),
                    "tools" => format!("last tool (tool {})", b.index),
                    _ => format!("latest user turn (message {})", b.index),
                })
                .collect();
            writeln!(out, "  step {step}'s cache breakpoints: {}", at.join(", "))?;
        }
        Err(_) => writeln!(out, "  no completed step yet")?,
    }
    let usages: Vec<(u64, Usage)> = session
        .events()
        .iter()
        .rev()
        .filter(|e| e.kind == ASSISTANT_MESSAGE)
        .filter_map(|e| match &e.data {
            EventData::Message(data) => {
                let usage = serde_json::from_value(data.extra.get("usage")?.clone()).ok()?;
                Some((e.seq, usage))
            }
            EventData::Other(_) => None,
        })
        .take(USAGE_SHOWN)
        .collect();
    if usages.is_empty() {
        writeln!(out, "  no reply with usage recorded")?;
        return Ok(());
    }
    writeln!(out, "  usage recorded with the replies, newest first:")?;
    for (seq, usage) in usages {
        writeln!(out, "    seq {seq}: {}", usage_line(&usage))?;
    }
    Ok(())
}

fn usage_line(usage: &prompt_host::session::Usage) -> String {
    let n = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    let cached = match (usage.cached_input_tokens, usage.input_tokens) {
        (Some(c), Some(i)) if i > 0 => format!("{c} from cache ({}%)", c * 100 / i),
        (c, _) => format!("{} from cache", n(c)),
    };
    let mut line = format!("{} input tokens, {cached}", n(usage.input_tokens));
    if let Some(written) = usage.cache_creation_input_tokens {
        line.push_str(&format!(", {written} written to the cache"));
    }
    line.push_str(&format!(", {} output", n(usage.output_tokens)));
    line
}

fn none_if_empty(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".into()
    } else {
        items.join(", ")
    }
}

/// ` "key"` for an entry registered under a key (a dynamic tool provider, a listener).
fn keyed(name: &Option<String>) -> String {
    name.as_deref()
        // JSON-quoted: a key is the plugin's text, control characters included.
        .map(|key| format!(" {}", serde_json::Value::from(key)))
        .unwrap_or_default()
}
