//! `prompt-host inspect`: who contributed what, where, and how big; with `--against`, where
//! a model's KV-cache reuse stops compared with a previous rendering. The findings are one
//! [`report::Report`], shown as tables, as JSON (`--json`) or as a page (`--html`).

use std::io::Write;
use std::path::Path;

use anyhow::Context;

pub(crate) mod html;
pub(crate) mod report;
mod session;
mod text;
mod timeline;
mod timings;

use super::commands::{facts, load_ready_host};
use super::Target;
use prompt_host::prompt::cache_prefix::{compare, section_spans};
use prompt_host::prompt::EntryKind;
use report::{label, Report, Visible};

/// The largest `--against` file read.
const MAX_PREVIOUS_BYTES: u64 = 256 << 20;

/// How `inspect` shows what it found, and what it adds.
pub struct Options<'a> {
    /// `--against`: a previous rendering to compare the prompt with.
    pub against: Option<&'a Path>,
    /// `--session`: a log whose newest request is reported too.
    pub session: Option<&'a Path>,
    /// `--tokenizer`.
    pub tokenizer: Option<&'a str>,
    /// `--timings`.
    pub timed: bool,
    /// `--json`: the report as JSON instead of the tables.
    pub json: bool,
    /// `--html`: write the report as a page to this file.
    pub html: Option<&'a Path>,
    /// `--context-window`: the tokens the model's window holds.
    pub context_window: Option<usize>,
    /// `--tools-as`: the route whose request shape tool schemas are counted in.
    pub tools_as: Option<prompt_host::session::route::RouteName>,
}

/// Run `inspect`.
pub async fn run(target: &Target, options: Options<'_>) -> anyhow::Result<()> {
    let named = options
        .tokenizer
        .map(super::commands::load_tokenizer)
        .transpose()?;
    let host = load_ready_host(&target.config, target.scope.as_deref()).await?;
    let scope = target.scope.as_deref();
    let max_bytes = host.registry().config().max_prompt_bytes;
    // `--tokenizer`'s, else host.toml's `[prompt] tokenizer`.
    let tokenizer = named
        .map(std::sync::Arc::new)
        .or_else(|| host.tokenizer().cloned());
    // Always watched: what each listener changed is part of the report; the times are
    // shown with --timings only.
    let watch = prompt_host::prompt::Timings::tracing_listeners();
    let facts = facts(target).timings(std::sync::Arc::clone(&watch));
    let log = match options.session {
        Some(path) => {
            let path = host.session_name(path)?;
            Some((session::open(&path)?, path))
        }
        None => None,
    };
    // Tools are counted as the requests of the log's route carry them, unless told.
    let tools_as = options.tools_as.or_else(|| {
        log.as_ref()
            .map(|(session, _)| prompt_host::session::context_in_force(session.events()).name)
    });
    let found = rendering(
        &host,
        scope,
        facts,
        tokenizer.as_deref(),
        Some(&watch),
        tools_as,
    )
    .await?;
    let messages = match (&log, &tokenizer) {
        (Some((session, _)), Some(tokenizer)) => session::message_tokens(session, tokenizer)?,
        _ => None,
    };
    let report = build(
        &host,
        scope,
        &found,
        Extra {
            messages,
            context_window: options.context_window,
            timings: options.timed.then(|| watch.report()),
            listener_changes: watch.listener_changes(),
            // The timeline is for the page and the JSON; the tables keep their summary.
            timeline: match &log {
                Some((session, path)) if options.json || options.html.is_some() => Some(
                    timeline::timeline(session, &prompt_host::session::display_name(path)),
                ),
                _ => None,
            },
        },
    );
    let mut out = std::io::stdout().lock();
    if let Some(path) = options.html {
        let page = html::page(&report, None)?;
        html::write(path, &page)
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
        writeln!(out, "report: {} ({} bytes)", path.display(), page.len())?;
    } else if options.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        text::print(&mut out, &report)?;
        if let Some(report) = &report.timings {
            timings::print(&mut out, &host, report, |s| visible_layer(&host, scope, s))?;
        }
        if let Some(path) = options.against {
            let (prompt, spans) = (&found.prompt, &found.spans);
            let text = prompt_host::fsutil::read_regular_to_string(path, MAX_PREVIOUS_BYTES)?;
            let previous = super::prefix::previous_prompt(&text, max_bytes)
                .with_context(|| format!("{} holds no previous prompt", path.display()))?;
            let report = compare(&previous, prompt, spans);
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
        if let Some((session, path)) = &log {
            session::print(&mut out, session, path)?;
        }
    }
    out.flush()?;
    drop(out);
    // Shown above beside the tables; the command still fails, as a step would.
    match found.overrun {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// A scope's rendering as `inspect` shows it.
struct Rendering {
    rendered: prompt_host::Rendered,
    /// The prompt, and where each section landed in it.
    prompt: String,
    spans: Vec<prompt_host::prompt::cache_prefix::SectionSpan>,
    tokens: Option<prompt_host::tokens::TokenReport>,
    /// The token budget it is over, if any.
    overrun: Option<anyhow::Error>,
}

/// Assemble and render for `scope` within the byte budgets, but not the token budgets: a
/// prompt over those is the one whose tokens most need showing. The overrun is kept, to be
/// reported beside the tables and then returned.
async fn rendering(
    host: &prompt_host::Host,
    scope: Option<&str>,
    facts: prompt_host::Facts,
    tokenizer: Option<&prompt_host::tokens::Tokenizer>,
    timings: Option<&prompt_host::prompt::Timings>,
    tools_as: Option<prompt_host::session::route::RouteName>,
) -> anyhow::Result<Rendering> {
    let started = std::time::Instant::now();
    let assembly = host.assemble(scope, facts).await?;
    let assembled = std::time::Instant::now();
    let rendered = host.render_assembly_within_bytes(assembly, scope)?;
    if let Some(timings) = timings {
        timings.phase("assemble", assembled - started);
        timings.phase("render", assembled.elapsed());
    }
    let overrun = host
        .check_token_budgets(&rendered, scope)
        .err()
        .map(Into::into);
    let tokens = tokenizer
        .map(|t| host.token_report_as(&rendered, scope, t, tools_as))
        .transpose()?;
    let max_bytes = host.registry().config().max_prompt_bytes;
    let (prompt, spans) = section_spans(&rendered.assembly, max_bytes)
        .map_err(|source| host.render_error(scope, source))?;
    Ok(Rendering {
        rendered,
        prompt,
        spans,
        tokens,
        overrun,
    })
}

/// The report `dev --ui` draws: the scope's rendering, counted with `[prompt] tokenizer`.
pub async fn live_report(host: &prompt_host::Host, target: &Target) -> anyhow::Result<Report> {
    let scope = target.scope.as_deref();
    let tokenizer = host.tokenizer().cloned();
    let watch = prompt_host::prompt::Timings::tracing_listeners();
    let facts = facts(target).timings(std::sync::Arc::clone(&watch));
    let found = rendering(host, scope, facts, tokenizer.as_deref(), Some(&watch), None).await?;
    Ok(build(
        host,
        scope,
        &found,
        Extra {
            messages: None,
            context_window: None,
            timings: None,
            listener_changes: watch.listener_changes(),
            timeline: None,
        },
    ))
}

/// What the report holds beyond the rendering itself.
struct Extra {
    messages: Option<usize>,
    context_window: Option<usize>,
    timings: Option<prompt_host::prompt::TimingReport>,
    listener_changes: Vec<prompt_host::prompt::ListenerChange>,
    timeline: Option<timeline::Timeline>,
}

/// The layers visible to `scope`, farthest first: global, then the chain reversed.
fn layers(host: &prompt_host::Host, scope: Option<&str>) -> Vec<Option<String>> {
    let mut layers: Vec<Option<String>> = vec![None];
    if let Some(key) = scope {
        let mut chain: Vec<Option<String>> = host
            .registry()
            .scope_chain(key)
            .iter()
            .map(|k| Some(k.to_string()))
            .collect();
        chain.reverse();
        layers.extend(chain);
    }
    layers
}

fn visible_layer(host: &prompt_host::Host, scope: Option<&str>, layer: &Option<String>) -> bool {
    layers(host, scope).contains(layer)
}

/// The report of `rendered`, made for `scope`.
fn build(host: &prompt_host::Host, scope: Option<&str>, found: &Rendering, extra: Extra) -> Report {
    let (rendered, prompt, spans) = (&found.rendered, found.prompt.as_str(), &found.spans);
    let tokens = found.tokens.as_ref();
    let layers = layers(host, scope);
    let rank = |s: &Option<String>| layers.iter().position(|l| l == s);
    let registry = host.registry();
    let entries = registry.entries();
    let visible = Visible::new(&entries, &layers);
    let assembly = &rendered.assembly;
    let context_texts: Vec<(String, String)> = rendered
        .context_sections
        .iter()
        .map(|c| (c.name.clone(), c.text.clone()))
        .collect();

    let sections = report::sections(assembly, prompt, spans, &visible, tokens);
    let contexts = report::contexts(assembly, &context_texts, &visible, tokens);
    let tool_providers: Vec<String> = visible
        .of(EntryKind::ToolProvider)
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
    // An MCP server's tools are named `mcp__<server>__<tool>` by the host, and provided by
    // its `mcp:<server>` plugin: attributed to it when this scope sees that provider.
    let mcp_providers: Vec<(String, String, String)> = visible
        .of(EntryKind::ToolProvider)
        .filter_map(|e| {
            let server = e.owner.strip_prefix("mcp:")?;
            Some((format!("mcp__{server}__"), e.owner.clone(), label(&e.scope)))
        })
        .collect();
    let declared = host.tool_owners();
    let tools: Vec<report::Tool> = assembly
        .tools
        .iter()
        .map(|tool| {
            let (provider, layer) = match declared.get(&tool.name) {
                Some(owner) => (owner.plugin.clone(), owner.layer.clone()),
                None => mcp_providers
                    .iter()
                    .find(|(prefix, _, _)| tool.name.starts_with(prefix.as_str()))
                    .map_or_else(
                        || ("(dynamic provider or listener)".into(), "-".into()),
                        |(_, plugin, layer)| (plugin.clone(), layer.clone()),
                    ),
            };
            report::Tool {
                name: tool.name.clone(),
                provider,
                layer,
                description: tool.description.clone(),
                tokens: tokens
                    .and_then(|t| t.tools.iter().find(|p| p.name == tool.name))
                    .map(|p| p.tokens),
            }
        })
        .collect();
    let suppressors = visible
        .of(EntryKind::Suppressor)
        .map(|e| format!("{} in {}", e.owner, label(&e.scope)))
        .collect();
    let listeners = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Listener)
        .map(|e| format!("{}{} ({})", e.owner, keyed(&e.name), label(&e.scope)))
        .collect();

    let servers: Vec<_> = host
        .mcp_status()
        .into_iter()
        .map(|kept| kept.status)
        .filter(|s| rank(&s.scope).is_some())
        .collect();
    // What each plugin put in this rendering, in tokens.
    let spent = |plugin: &str| -> Option<usize> {
        tokens?;
        let in_sections = sections.iter().filter(|s| s.plugin == plugin);
        let in_contexts = contexts.iter().filter(|c| c.plugin == plugin);
        let in_tools = tools.iter().filter(|t| t.provider == plugin);
        Some(
            in_sections.filter_map(|s| s.tokens).sum::<usize>()
                + in_contexts.filter_map(|c| c.tokens).sum::<usize>()
                + in_tools.filter_map(|t| t.tokens).sum::<usize>(),
        )
    };
    let mut plugins: Vec<report::Plugin> = host
        .plugins()
        .into_iter()
        .filter(|p| rank(&p.scope).is_some())
        .map(|p| report::Plugin {
            tokens: spent(&p.name),
            layer: label(&p.scope),
            grants: p.grants.describe(),
            name: p.name,
        })
        .collect();
    for s in &servers {
        if plugins.iter().all(|p| p.name != s.plugin) {
            plugins.push(report::Plugin {
                name: s.plugin.clone(),
                layer: label(&s.scope),
                grants: format!(
                    "(none: the instruction provider of MCP server {})",
                    s.server
                ),
                tokens: spent(&s.plugin),
            });
        }
    }
    let mcp_servers = servers
        .iter()
        .map(|s| report::McpServer {
            server: s.server.clone(),
            plugin: s.plugin.clone(),
            layer: label(&s.scope),
            transport: s.transport.to_string(),
            lifecycle: s.lifecycle.map(|l| l.as_str().to_string()),
            protocol: s.protocol_version.clone(),
            instructions_enabled: s.instructions_enabled,
            instructions_bytes: s.instructions.len(),
        })
        .collect();
    let cuts = host
        .instructions_cuts_for(scope)
        .into_iter()
        .map(|cut| report::Cut {
            server: cut.server,
            generation: cut.generation,
            kept_tokens: cut.kept_tokens,
            tokens: cut.tokens,
            kept_bytes: cut.kept_bytes,
            bytes: cut.bytes,
            budget: cut.budget,
            tokenizer: cut.tokenizer,
        })
        .collect();
    let tokens = tokens.map(|t| {
        let mcp = |plugin: &str| plugin.starts_with("mcp:");
        let mcp_instructions: usize = sections
            .iter()
            .filter(|s| mcp(&s.plugin))
            .filter_map(|s| s.tokens)
            .sum();
        let tool_tokens = |of_mcp: bool| -> usize {
            tools
                .iter()
                .filter(|t| mcp(&t.provider) == of_mcp)
                .filter_map(|t| t.tokens)
                .sum()
        };
        let mut categories = vec![
            report::Category {
                name: "system prompt",
                tokens: t.prompt.saturating_sub(mcp_instructions),
            },
            report::Category {
                name: "MCP instructions",
                tokens: mcp_instructions,
            },
            report::Category {
                name: "tools",
                tokens: tool_tokens(false),
            },
            report::Category {
                name: "MCP tools",
                tokens: tool_tokens(true),
            },
            report::Category {
                name: "runtime context",
                tokens: t.context,
            },
        ];
        if let Some(messages) = extra.messages {
            categories.push(report::Category {
                name: "messages",
                tokens: messages,
            });
        }
        report::Tokens {
            tokenizer: t.tokenizer.clone(),
            prompt: t.prompt,
            sections_sum: t.sections_sum,
            context: t.context,
            tools: t.tools.iter().map(|p| p.tokens).sum(),
            categories,
            context_window: extra.context_window,
            tools_as: t.tools_as.map(|route| route.to_string()),
        }
    });
    let config = registry.config();
    Report {
        scope: scope.unwrap_or("global").to_string(),
        prompt: prompt.to_string(),
        prompt_bytes: prompt.len(),
        context: rendered.context.clone(),
        tokens,
        budgets: report::Budgets {
            max_prompt_tokens: config.max_prompt_tokens,
            max_context_tokens: config.max_context_tokens,
            max_prompt_bytes: config.max_prompt_bytes,
        },
        overrun: found.overrun.as_ref().map(super::chain),
        sections,
        contexts,
        tools,
        tool_providers,
        variables: report::variables(assembly, &visible),
        suppressors,
        listeners,
        plugins,
        mcp_servers,
        cuts,
        timings: extra.timings,
        listener_changes: extra.listener_changes,
        timeline: extra.timeline,
        changes: None,
        error: None,
    }
}

/// ` "key"` for an entry registered under a key (a dynamic tool provider, a listener).
fn keyed(name: &Option<String>) -> String {
    name.as_deref()
        // JSON-quoted: a key is the plugin's text, control characters included.
        .map(|key| format!(" {}", serde_json::Value::from(key)))
        .unwrap_or_default()
}
