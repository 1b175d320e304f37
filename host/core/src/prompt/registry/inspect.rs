//! A read-only listing of what is registered where, for `inspect`-style tooling.

use super::super::errors::EntryKind;
use super::state::{Layer, Meta};
use super::{EntryId, FiberId, Registry};

/// One registered entry as seen from outside.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryInfo {
    /// The entry's id (built-ins included).
    pub id: EntryId,
    /// The fiber that owns it (`FiberId(0)` = built-in).
    pub fiber: FiberId,
    /// What it is.
    pub kind: EntryKind,
    /// Its name, for sections, contexts and variables.
    pub name: Option<String>,
    /// The owning fiber's owner (plugin name; `prompt-host` for built-ins).
    pub owner: String,
    /// The layer or listener tag; `None` = global.
    pub scope: Option<String>,
    /// The order, for sections and contexts.
    pub order: Option<f64>,
    /// Whether a section is complete.
    pub complete: bool,
    /// Whether the text or tool set is computed per assembly (a plugin call).
    pub dynamic: bool,
    /// Length in bytes of a static text.
    pub static_len: Option<usize>,
}

impl Registry {
    /// Every entry: the global layer, then scoped layers by key, then listeners in
    /// execution order. Within a layer: sections, contexts, variables, tools, suppressors.
    pub fn entries(&self) -> Vec<EntryInfo> {
        let state = self.snapshot();
        let mut out = Vec::new();
        layer_entries(&state.global, &mut out);
        let mut keys: Vec<_> = state.scoped.keys().cloned().collect();
        keys.sort();
        for key in keys {
            if let Some(layer) = state.scoped.get(&key) {
                layer_entries(layer, &mut out);
            }
        }
        for listener in state.listeners.iter() {
            // A plugin's listener is named by its key.
            let key = listener.listener.key();
            out.push(info(&listener.meta, EntryKind::Listener, key));
        }
        out
    }
}

/// Who registered the entry an assembly for a scope sees under a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The owning fiber's owner (plugin name; `prompt-host` for built-ins).
    pub plugin: String,
    /// The layer it is in; `None` = global.
    pub scope: Option<String>,
}

impl Registry {
    /// The owner of the section, context or variable `name` that an assembly for `scope`
    /// sees (the nearest layer on the chain wins, then global); `None` when no such entry
    /// is registered (e.g. a listener added it).
    pub fn owner_of(&self, kind: EntryKind, name: &str, scope: Option<&str>) -> Option<Owner> {
        let state = self.snapshot();
        let chain = scope.map(|key| state.chain(key)).unwrap_or_default();
        let nearest_first = chain
            .iter()
            .filter_map(|key| state.scoped.get(key).map(|layer| &**layer))
            .chain(std::iter::once(&*state.global));
        for layer in nearest_first {
            let meta = match kind {
                EntryKind::Section => find_text(&layer.sections, name),
                EntryKind::Context => find_text(&layer.contexts, name),
                EntryKind::Variable => layer
                    .variables
                    .iter()
                    .find(|e| &*e.name == name)
                    .map(|e| &e.meta),
                _ => None,
            };
            if let Some(meta) = meta {
                return Some(Owner {
                    plugin: meta.owner.to_string(),
                    scope: meta.scope.as_deref().map(str::to_string),
                });
            }
        }
        None
    }
}

fn find_text<'a>(
    table: &'a [std::sync::Arc<super::state::TextEntry>],
    name: &str,
) -> Option<&'a Meta> {
    table.iter().find(|e| &*e.name == name).map(|e| &e.meta)
}

fn info(meta: &Meta, kind: EntryKind, name: Option<&str>) -> EntryInfo {
    EntryInfo {
        id: meta.id,
        fiber: meta.fiber,
        kind,
        name: name.map(str::to_string),
        owner: meta.owner.to_string(),
        scope: meta.scope.as_deref().map(str::to_string),
        order: None,
        complete: false,
        dynamic: false,
        static_len: None,
    }
}

fn layer_entries(layer: &Layer, out: &mut Vec<EntryInfo>) {
    use super::super::provider::{TextSource, ToolSource};
    for (kind, table) in [
        (EntryKind::Section, &layer.sections),
        (EntryKind::Context, &layer.contexts),
    ] {
        for entry in table {
            let mut e = info(&entry.meta, kind, Some(&entry.name));
            e.order = Some(entry.order);
            e.complete = entry.complete;
            e.dynamic = entry.text.is_dynamic();
            if let TextSource::Static(text) = &entry.text {
                e.static_len = Some(text.len());
            }
            out.push(e);
        }
    }
    for entry in &layer.variables {
        let mut e = info(&entry.meta, EntryKind::Variable, Some(&entry.name));
        e.dynamic = true;
        out.push(e);
    }
    for entry in &layer.tools {
        // A dynamic provider is named by its key; a fixed set has none.
        let mut e = info(&entry.meta, EntryKind::ToolProvider, entry.source.key());
        e.dynamic = matches!(entry.source, ToolSource::Dynamic(_));
        out.push(e);
    }
    for meta in &layer.suppressors {
        out.push(info(meta, EntryKind::Suppressor, None));
    }
}
