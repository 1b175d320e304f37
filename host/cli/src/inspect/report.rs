//! What `inspect` found, as data: who contributed each part of one scope's prompt, where,
//! how big, and what shadowed what. The terminal table (`text`), `--json` and the `--html`
//! page are three renderings of this one value, so they cannot disagree.

use serde::Serialize;

use prompt_host::prompt::cache_prefix::SectionSpan;
use prompt_host::prompt::{Assembly, EntryInfo, EntryKind, TimingReport};
use prompt_host::tokens::{PartTokens, TokenReport};

/// The layer label of an entry's scope.
pub fn label(scope: &Option<String>) -> String {
    scope.clone().unwrap_or_else(|| "global".into())
}

/// The report of one scope's assembly.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The scope inspected (`global` for none).
    pub scope: String,
    /// The rendered system prompt.
    pub prompt: String,
    /// Its bytes.
    pub prompt_bytes: usize,
    /// The rendered runtime-context snapshot.
    pub context: String,
    /// Token counts, when a tokenizer was given or configured.
    pub tokens: Option<Tokens>,
    /// The `[prompt]` budgets the rendering is checked against.
    pub budgets: Budgets,
    /// Why the rendering is over a token budget (the error a step would fail with).
    pub overrun: Option<String>,
    /// Sections in render order.
    pub sections: Vec<Section>,
    /// Runtime contexts in render order.
    pub contexts: Vec<Context>,
    /// Tools in request order.
    pub tools: Vec<Tool>,
    /// The tool providers this scope sees.
    pub tool_providers: Vec<String>,
    /// Variables, in first-insertion order.
    pub variables: Vec<Variable>,
    /// Who suppresses the runtime context here.
    pub suppressors: Vec<String>,
    /// The listener chain, outermost first.
    pub listeners: Vec<String>,
    /// The plugins this scope sees (MCP servers' instruction providers included).
    pub plugins: Vec<Plugin>,
    /// The MCP servers this scope sees.
    pub mcp_servers: Vec<McpServer>,
    /// MCP instructions cut to their budgets.
    pub cuts: Vec<Cut>,
    /// Each plugin call's time, with `--timings`.
    pub timings: Option<TimingReport>,
    /// What each listener changed, outermost first.
    pub listener_changes: Vec<prompt_host::prompt::ListenerChange>,
    /// With `--session`: the session's steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<super::timeline::Timeline>,
    /// Live (`dev --ui`): what the last change did to the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Changes>,
    /// Live: why the last change left the previous prompt in place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a change (a rebuilt plugin, an edited host.toml) did to the prompt.
#[derive(Debug, Serialize)]
pub struct Changes {
    /// What changed: `plugin "persona" reloaded`, `host.toml reloaded`.
    pub cause: String,
    /// Sections that were not there before.
    pub added: Vec<String>,
    /// Sections that are gone.
    pub removed: Vec<String>,
    /// Sections whose text changed.
    pub changed: Vec<String>,
    /// The prompt's tokens now minus before, when counted.
    pub tokens_delta: Option<i64>,
    /// The new prompt starts with the whole previous one.
    pub prefix_kept: bool,
    /// Bytes of the previous prompt a KV cache can still reuse.
    pub reusable_bytes: usize,
    /// The section the first difference lies in.
    pub first_changed_section: Option<String>,
}

impl Changes {
    /// What changed from `before` to `after`, caused by `cause`.
    pub fn between(before: &Report, after: &Report, cause: String) -> Self {
        let names =
            |r: &Report| -> Vec<String> { r.sections.iter().map(|s| s.name.clone()).collect() };
        let (was, now) = (names(before), names(after));
        let changed = after
            .sections
            .iter()
            .filter(|s| {
                before
                    .sections
                    .iter()
                    .any(|b| b.name == s.name && b.text != s.text)
            })
            .map(|s| s.name.clone())
            .collect();
        // The cache-prefix report `inspect --against` and `dev` print, on the new spans.
        let spans: Vec<SectionSpan> = after
            .sections
            .iter()
            .filter_map(|s| {
                Some(SectionSpan {
                    name: s.name.clone(),
                    start: s.start?,
                    end: s.start? + s.bytes,
                })
            })
            .collect();
        let prefix =
            prompt_host::prompt::cache_prefix::compare(&before.prompt, &after.prompt, &spans);
        let tokens = |r: &Report| r.tokens.as_ref().map(|t| t.prompt as i64);
        Self {
            cause,
            added: now.iter().filter(|n| !was.contains(n)).cloned().collect(),
            removed: was.iter().filter(|n| !now.contains(n)).cloned().collect(),
            changed,
            tokens_delta: tokens(after).zip(tokens(before)).map(|(a, b)| a - b),
            prefix_kept: prefix.keeps_prefix,
            reusable_bytes: prefix.reusable_bytes,
            first_changed_section: prefix.first_changed_section,
        }
    }
}

/// Token totals and the tokenizer that counted.
#[derive(Debug, Serialize)]
pub struct Tokens {
    /// The tokenizer's name.
    pub tokenizer: String,
    /// The whole prompt counted as one text.
    pub prompt: usize,
    /// The sections' own counts, summed.
    pub sections_sum: usize,
    /// The runtime context as one text.
    pub context: usize,
    /// The tool schemas, summed.
    pub tools: usize,
    /// Totals by category, in the order a context window fills.
    pub categories: Vec<Category>,
    /// The context window the shares are of (`--context-window`).
    pub context_window: Option<usize>,
    /// The route whose request shape the tool schemas were counted in; `None`: as the
    /// schema itself.
    pub tools_as: Option<String>,
}

/// One category's tokens.
#[derive(Debug, Serialize)]
pub struct Category {
    /// `system prompt`, `MCP instructions`, `tools`, `MCP tools`, `runtime context` or
    /// `messages`.
    pub name: &'static str,
    /// Its tokens.
    pub tokens: usize,
}

/// The `[prompt]` budgets.
#[derive(Debug, Serialize)]
pub struct Budgets {
    /// `max_prompt_tokens`.
    pub max_prompt_tokens: Option<usize>,
    /// `max_context_tokens`.
    pub max_context_tokens: Option<usize>,
    /// `max_prompt_bytes`.
    pub max_prompt_bytes: usize,
}

/// One section of the prompt.
#[derive(Debug, Serialize)]
pub struct Section {
    /// Its name.
    pub name: String,
    /// Its order; `None` for a section a listener added.
    pub order: Option<f64>,
    /// The plugin whose entry won (`(listener)` for one a listener added).
    pub plugin: String,
    /// The layer it won in (`-` for a listener's).
    pub layer: String,
    /// The entries of the same name it shadowed, farthest layer first.
    pub shadows: Vec<Shadowed>,
    /// Its bytes in the prompt.
    pub bytes: usize,
    /// Its tokens counted alone.
    pub tokens: Option<usize>,
    /// Where it starts in the prompt (bytes); `None` when it rendered empty.
    pub start: Option<usize>,
    /// Its rendered text, as it lands in the prompt.
    pub text: String,
}

/// An entry a nearer layer's entry shadowed.
#[derive(Debug, Serialize)]
pub struct Shadowed {
    /// Its plugin.
    pub plugin: String,
    /// Its layer.
    pub layer: String,
}

/// One runtime context.
#[derive(Debug, Serialize)]
pub struct Context {
    /// Its name.
    pub name: String,
    /// Its plugin (`(listener)` for one a listener added).
    pub plugin: String,
    /// Its layer.
    pub layer: String,
    /// Its tokens counted alone.
    pub tokens: Option<usize>,
    /// Its rendered text.
    pub text: String,
}

/// One tool.
#[derive(Debug, Serialize)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// The plugin that declared or provided it; `(dynamic provider or listener)` when the
    /// host cannot tell.
    pub provider: String,
    /// Its layer.
    pub layer: String,
    /// Its description.
    pub description: String,
    /// Its schema's tokens.
    pub tokens: Option<usize>,
}

/// One variable.
#[derive(Debug, Serialize)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its plugin.
    pub plugin: String,
    /// Its layer.
    pub layer: String,
    /// Its value; `None` when registered without one.
    pub value: Option<String>,
}

/// One plugin this scope sees.
#[derive(Debug, Serialize)]
pub struct Plugin {
    /// Its name.
    pub name: String,
    /// Its layer.
    pub layer: String,
    /// What it may reach beyond its sandbox.
    pub grants: String,
    /// The tokens of what it contributed to this rendering (sections, contexts, tools).
    pub tokens: Option<usize>,
}

/// One MCP server.
#[derive(Debug, Serialize)]
pub struct McpServer {
    /// The server's name.
    pub server: String,
    /// Its instruction provider (`mcp:<server>`).
    pub plugin: String,
    /// Its layer.
    pub layer: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The lifecycle the last connection used.
    pub lifecycle: Option<String>,
    /// The protocol revision agreed.
    pub protocol: Option<String>,
    /// Whether its instructions reach the prompt.
    pub instructions_enabled: bool,
    /// The bytes of the instructions it injects.
    pub instructions_bytes: usize,
}

/// MCP instructions cut to a budget.
#[derive(Debug, Serialize)]
pub struct Cut {
    /// The server.
    pub server: String,
    /// The generation cut.
    pub generation: u64,
    /// Tokens kept.
    pub kept_tokens: usize,
    /// Tokens sent; `None` when not counted to the end.
    pub tokens: Option<usize>,
    /// Bytes kept.
    pub kept_bytes: usize,
    /// Bytes sent.
    pub bytes: usize,
    /// The budget, in tokens.
    pub budget: usize,
    /// The tokenizer that counted.
    pub tokenizer: String,
}

/// The entries of one kind visible to an assembly, by name, farthest layer first.
pub struct Visible<'a> {
    entries: Vec<&'a EntryInfo>,
    /// The layers the assembly sees, farthest first.
    layers: &'a [Option<String>],
}

impl<'a> Visible<'a> {
    /// The non-listener entries of `entries` in one of `layers` (farthest first).
    pub fn new(entries: &'a [EntryInfo], layers: &'a [Option<String>]) -> Self {
        let entries = entries
            .iter()
            .filter(|e| e.kind != EntryKind::Listener && layers.contains(&e.scope))
            .collect();
        Self { entries, layers }
    }

    fn rank(&self, scope: &Option<String>) -> Option<usize> {
        self.layers.iter().position(|l| l == scope)
    }

    /// The visible entries of `kind` named `name`, farthest layer first (the last wins).
    pub fn named(&self, kind: EntryKind, name: &str) -> Vec<&'a EntryInfo> {
        let mut list: Vec<&EntryInfo> = self
            .entries
            .iter()
            .filter(|e| e.kind == kind && e.name.as_deref() == Some(name))
            .copied()
            .collect();
        list.sort_by_key(|e| self.rank(&e.scope));
        list
    }

    /// The visible entries of `kind`.
    pub fn of(&self, kind: EntryKind) -> impl Iterator<Item = &'a EntryInfo> + '_ {
        self.entries.iter().copied().filter(move |e| e.kind == kind)
    }
}

/// The winner of a named entry and its layer, or the listener's marks.
fn owner(list: &[&EntryInfo]) -> (String, String) {
    list.last().map_or_else(
        || ("(listener)".into(), "-".into()),
        |e| (e.owner.clone(), label(&e.scope)),
    )
}

/// The tokens of part `name`, when counted.
fn part_tokens(parts: Option<&Vec<PartTokens>>, name: &str) -> Option<usize> {
    parts?.iter().find(|p| p.name == name).map(|p| p.tokens)
}

/// The section rows of `assembly`, placed by `spans` in `prompt`.
pub fn sections(
    assembly: &Assembly,
    prompt: &str,
    spans: &[SectionSpan],
    visible: &Visible<'_>,
    tokens: Option<&TokenReport>,
) -> Vec<Section> {
    assembly
        .sections
        .iter()
        .map(|section| {
            let span = spans.iter().find(|s| s.name == section.name);
            let list = visible.named(EntryKind::Section, &section.name);
            let (plugin, layer) = owner(&list);
            let shadows = list
                .iter()
                .take(list.len().saturating_sub(1))
                .map(|e| Shadowed {
                    plugin: e.owner.clone(),
                    layer: label(&e.scope),
                })
                .collect();
            Section {
                name: section.name.clone(),
                order: list.last().and_then(|e| e.order),
                plugin,
                layer,
                shadows,
                bytes: span.map_or(0, |s| s.end - s.start),
                tokens: part_tokens(tokens.map(|t| &t.sections), &section.name),
                start: span.map(|s| s.start),
                text: span
                    .and_then(|s| prompt.get(s.start..s.end))
                    .unwrap_or_default()
                    .to_string(),
            }
        })
        .collect()
}

/// The runtime-context rows of `assembly`, with their rendered `texts` (name, text).
pub fn contexts(
    assembly: &Assembly,
    texts: &[(String, String)],
    visible: &Visible<'_>,
    tokens: Option<&TokenReport>,
) -> Vec<Context> {
    assembly
        .contexts
        .iter()
        .map(|context| {
            let (plugin, layer) = owner(&visible.named(EntryKind::Context, &context.name));
            Context {
                name: context.name.clone(),
                plugin,
                layer,
                tokens: part_tokens(tokens.map(|t| &t.contexts), &context.name),
                text: texts
                    .iter()
                    .find(|(name, _)| *name == context.name)
                    .map(|(_, text)| text.clone())
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The variable rows of `assembly`.
pub fn variables(assembly: &Assembly, visible: &Visible<'_>) -> Vec<Variable> {
    assembly
        .variables
        .iter()
        .map(|(name, value)| {
            let (plugin, layer) = owner(&visible.named(EntryKind::Variable, name));
            Variable {
                name: name.clone(),
                plugin,
                layer,
                value: value.clone(),
            }
        })
        .collect()
}
