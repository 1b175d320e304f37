//! The assembly algorithm, in twelve steps (numbered in the comments of `assemble`), over one
//! snapshot of the registry.
//!
//! Snapshot semantics: the whole pass reads the `State` it started with. A provider or
//! listener that registers or disposes entries while the pass runs changes only later
//! assemblies. This diverges from the TypeScript DeepSeek Harness, which iterates its live
//! JavaScript maps: there, a variable registered by an earlier variable provider is evaluated
//! in the same pass.
//!
//! Errors come in this order: provider failures as they happen (variables, then tool
//! providers, then section and context texts), the complete-section check after the variable
//! and tool providers and before any section text, then the reserved tool name and unknown
//! `tool_order` names, then the waterfall.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::assembly::{Assembly, NamedText};
use super::context::AssembleContext;
use super::error::ProviderError;
use super::errors::{AssembleError, EntryKind};
use super::provider::{TextSource, ToolSource};
use super::registry::state::{Layer, Meta, State, TextEntry};
use super::timings::timed;
use super::tool_order::{order_tools, CollectedTool};
use super::waterfall;

/// Assemble for `scope` over `state`.
pub(crate) fn assemble(
    state: &State,
    tool_order: Option<&[String]>,
    scope: Option<&str>,
    mut ctx: AssembleContext,
) -> Result<Assembly, AssembleError> {
    // Step 1: the chain, and its existing layers farthest first.
    ctx.scope_chain = scope.map(|key| state.chain(key)).unwrap_or_default();
    let ctx = Arc::new(ctx);
    let layers = state.chain_layers(&ctx.scope_chain);
    let all_layers = || std::iter::once(&*state.global).chain(layers.iter().copied());

    // Step 2: a suppressor in the global layer or anywhere on the chain.
    let suppressed = all_layers().any(|layer| !layer.suppressors.is_empty());

    // Step 3: every visible variable provider runs, shadowed ones included; nearer
    // overwrites farther, keys keep their first-insertion position.
    let mut variables: Vec<(String, Option<String>)> = Vec::new();
    let mut slots: HashMap<&str, usize> = HashMap::new();
    for entry in all_layers().flat_map(|layer| layer.variables.iter()) {
        check_cancelled(&ctx)?;
        let value = match timed(
            &ctx,
            EntryKind::Variable,
            Some(&entry.name),
            &entry.meta,
            || entry.provider.value(&ctx),
        ) {
            Ok(value) => value,
            // Left out: a farther value of the name stands, else the name is unregistered.
            Err(e) if e.is_skip() => continue,
            Err(e) => {
                return Err(provider_error(
                    &ctx,
                    EntryKind::Variable,
                    Some(&entry.name),
                    &entry.meta,
                    e,
                ))
            }
        };
        match slots.get(&*entry.name) {
            Some(&slot) => variables[slot].1 = value,
            None => {
                slots.insert(&entry.name, variables.len());
                variables.push((entry.name.to_string(), value));
            }
        }
    }

    // Step 5: every tool provider contributes; only name, description and parameters are
    // kept, as fresh values.
    let (collected, known) = collect_tools(all_layers(), &ctx, tool_order.is_some())?;

    // Steps 4 and 6–8: merged sections, stably sorted by order (ties keep the merge order),
    // at most one effective complete section, then their texts; keep the complete
    // section's pre-waterfall copy.
    let sections_table = Table {
        global: &state.global,
        layers: &layers,
        entries: sections_of,
        kind: EntryKind::Section,
    };
    let (sections, resolved_sections) = sections_table.resolve(&ctx, check_complete)?;
    let complete_section = sections
        .iter()
        .position(|s| s.complete)
        .map(|index| resolved_sections[index].clone());

    // Step 9: contexts, unless suppressed (then no context provider is called).
    let (resolved_contexts, context_entries) = if suppressed {
        (Vec::new(), Vec::new())
    } else {
        let contexts_table = Table {
            global: &state.global,
            layers: &layers,
            entries: contexts_of,
            kind: EntryKind::Context,
        };
        let (contexts, resolved) = contexts_table.resolve(&ctx, |_| Ok(()))?;
        (resolved, contexts)
    };

    // Registered entries can break an invariant only with an empty name; blame the plugin
    // that registered it rather than the first listener to return.
    let empty_tool_owner = collected
        .iter()
        .find(|t| t.schema.name.is_empty())
        .map(|t| Arc::clone(&t.plugin));

    // Step 10: canonical tool order (reserved name, unknown `tool_order` names).
    let tools = order_tools(collected, tool_order, &known)?;

    check_registered(&sections, &context_entries, empty_tool_owner)?;

    // Step 11: the waterfall, in place.
    let mut assembly = Assembly {
        sections: resolved_sections,
        contexts: resolved_contexts,
        tools,
        variables,
    };
    waterfall::run(&state.listeners, &ctx, &mut assembly)?;

    // Step 12: the complete section and suppression override what listeners did.
    if let Some(section) = complete_section {
        assembly.sections = vec![section];
    }
    if suppressed {
        assembly.contexts.clear();
    }
    Ok(assembly)
}

fn sections_of(layer: &Layer) -> &Vec<Arc<TextEntry>> {
    &layer.sections
}

fn contexts_of(layer: &Layer) -> &Vec<Arc<TextEntry>> {
    &layer.contexts
}

/// Step 7: at most one effective complete section.
fn check_complete(sections: &[&TextEntry]) -> Result<(), AssembleError> {
    let complete: Vec<&TextEntry> = sections.iter().copied().filter(|s| s.complete).collect();
    if complete.len() > 1 {
        return Err(AssembleError::MultipleComplete {
            names: complete.iter().map(|s| s.name.to_string()).collect(),
        });
    }
    Ok(())
}

/// The section or context table of the visible layers.
struct Table<'a, F> {
    global: &'a Layer,
    layers: &'a [&'a Layer],
    entries: F,
    kind: EntryKind,
}

impl<'a, F> Table<'a, F>
where
    F: Fn(&'a Layer) -> &'a Vec<Arc<TextEntry>> + Copy,
{
    /// Merge, sort, `check` the sorted entries, and resolve their texts. An entry whose
    /// provider answers "skipped" (`on_error = "skip"`) is left out as if it were not
    /// registered: the merge is redone without it, so the entry it shadowed takes its place,
    /// and `check` sees the new set. Texts already resolved are not asked for again.
    fn resolve(
        &self,
        ctx: &AssembleContext,
        check: impl Fn(&[&TextEntry]) -> Result<(), AssembleError>,
    ) -> Result<(Vec<&'a TextEntry>, Vec<NamedText>), AssembleError> {
        let mut skipped: Vec<*const TextEntry> = Vec::new();
        let mut done: HashMap<*const TextEntry, String> = HashMap::new();
        loop {
            let mut entries = merge(self.global, self.layers, self.entries, &skipped);
            sort_by_order(&mut entries);
            check(&entries)?;
            let mut resolved = Vec::with_capacity(entries.len());
            let mut newly_skipped = false;
            for entry in &entries {
                let key: *const TextEntry = *entry;
                let text = match done.remove(&key) {
                    Some(text) => text,
                    None => match check_cancelled(ctx).and_then(|()| {
                        let resolve = || entry.text.resolve(ctx);
                        let resolved = match entry.text {
                            TextSource::Static(_) => resolve(),
                            TextSource::Dynamic(_) => {
                                timed(ctx, self.kind, Some(&entry.name), &entry.meta, resolve)
                            }
                        };
                        resolved.map_err(|e| {
                            provider_error(ctx, self.kind, Some(&entry.name), &entry.meta, e)
                        })
                    }) {
                        Ok(text) => text,
                        Err(AssembleError::Provider { error, .. }) if error.is_skip() => {
                            skipped.push(key);
                            newly_skipped = true;
                            continue;
                        }
                        Err(e) => return Err(e),
                    },
                };
                resolved.push((
                    key,
                    NamedText {
                        name: entry.name.to_string(),
                        text,
                    },
                ));
            }
            if !newly_skipped {
                return Ok((entries, resolved.into_iter().map(|(_, n)| n).collect()));
            }
            done.extend(resolved.into_iter().map(|(key, n)| (key, n.text)));
        }
    }
}

/// Global entries in insertion order, then each chain layer farthest first: a shadowing
/// entry takes over the slot its name first had; a new name is appended. Entries in
/// `skipped` are left out.
fn merge<'a>(
    global: &'a Layer,
    layers: &[&'a Layer],
    table: impl Fn(&'a Layer) -> &'a Vec<Arc<TextEntry>>,
    skipped: &[*const TextEntry],
) -> Vec<&'a TextEntry> {
    let kept = |entry: &&'a Arc<TextEntry>| !skipped.contains(&Arc::as_ptr(entry));
    let mut merged: Vec<&TextEntry> = table(global).iter().filter(kept).map(|e| &**e).collect();
    if layers.iter().all(|layer| table(layer).is_empty()) {
        return merged;
    }
    let mut slots: HashMap<&str, usize> = merged
        .iter()
        .enumerate()
        .map(|(index, entry)| (&*entry.name, index))
        .collect();
    for layer in layers {
        for entry in table(layer).iter().filter(kept) {
            match slots.get(&*entry.name) {
                Some(&index) => merged[index] = entry,
                None => {
                    slots.insert(&entry.name, merged.len());
                    merged.push(entry);
                }
            }
        }
    }
    merged
}

/// Stable ascending sort. Orders are finite (checked at registration), so `partial_cmp`
/// never fails; it also treats `-0.0` and `0.0` as equal, like the comparator
/// `a.order - b.order` of the TypeScript DeepSeek Harness.
fn sort_by_order(entries: &mut [&TextEntry]) {
    entries.sort_by(|a, b| a.order.partial_cmp(&b.order).unwrap_or(Ordering::Equal));
}

fn collect_tools<'a>(
    layers: impl Iterator<Item = &'a Layer>,
    ctx: &AssembleContext,
    want_known: bool,
) -> Result<(Vec<CollectedTool>, HashSet<String>), AssembleError> {
    let mut collected = Vec::new();
    let mut known = HashSet::new();
    for entry in layers.flat_map(|layer| layer.tools.iter()) {
        check_cancelled(ctx)?;
        let resolve = || entry.source.resolve(ctx);
        let resolved = match entry.source {
            ToolSource::Static(_) => resolve(),
            ToolSource::Dynamic(_) => timed(
                ctx,
                EntryKind::ToolProvider,
                entry.source.key(),
                &entry.meta,
                resolve,
            ),
        };
        let set = match resolved {
            Ok(set) => set,
            // Left out: contributes no tools and no known names.
            Err(e) if e.is_skip() => continue,
            Err(e) => {
                return Err(provider_error(
                    ctx,
                    EntryKind::ToolProvider,
                    entry.source.key(),
                    &entry.meta,
                    e,
                ))
            }
        };
        if want_known {
            match set.known_names {
                Some(names) => known.extend(names),
                None => known.extend(set.schemas.iter().map(|s| s.name.clone())),
            }
        }
        collected.extend(set.schemas.into_iter().map(|schema| CollectedTool {
            schema,
            plugin: Arc::clone(&entry.meta.owner),
        }));
    }
    Ok((collected, known))
}

fn check_registered(
    sections: &[&TextEntry],
    contexts: &[&TextEntry],
    empty_tool_owner: Option<Arc<str>>,
) -> Result<(), AssembleError> {
    let invariant = |text: &str, owner: &Arc<str>| AssembleError::Invariant {
        text: text.to_string(),
        plugin: owner.to_string(),
        after_listener: false,
    };
    if let Some(entry) = sections.iter().find(|e| e.name.is_empty()) {
        return Err(invariant(
            "assembled section names must be non-empty",
            &entry.meta.owner,
        ));
    }
    if let Some(entry) = contexts.iter().find(|e| e.name.is_empty()) {
        return Err(invariant(
            "assembled context names must be non-empty",
            &entry.meta.owner,
        ));
    }
    match empty_tool_owner {
        Some(owner) => Err(invariant("assembled tool names must be non-empty", &owner)),
        None => Ok(()),
    }
}

/// `Cancelled` once the caller cancelled the assembly: checked before every provider.
pub(crate) fn check_cancelled(ctx: &AssembleContext) -> Result<(), AssembleError> {
    if ctx.is_cancelled() {
        return Err(AssembleError::Cancelled(
            "the caller cancelled the assembly".to_string(),
        ));
    }
    Ok(())
}

/// A provider's failure as an assembly error. Once the caller cancelled the assembly, any
/// failure (a plugin that saw the cancellation and stopped, or was interrupted) is reported
/// as the cancellation it is.
fn provider_error(
    ctx: &AssembleContext,
    kind: EntryKind,
    name: Option<&str>,
    meta: &Meta,
    error: ProviderError,
) -> AssembleError {
    if error.kind == super::error::ProviderErrorKind::Cancelled || ctx.is_cancelled() {
        return AssembleError::Cancelled(format!(
            "the caller cancelled the assembly while {kind} of plugin \"{}\" ran ({})",
            meta.owner, error.message
        ));
    }
    AssembleError::Provider {
        kind,
        name: name.map(str::to_string),
        plugin: meta.owner.to_string(),
        scope: meta.scope_label().to_string(),
        error,
    }
}
