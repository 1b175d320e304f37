//! The registry's copy-on-write state: layers, listeners and the scope parent relation.
//!
//! An assembly clones the `Arc<State>` under a read lock and runs with no lock held. A
//! registration takes the write lock and mutates through `Arc::make_mut`, so it copies only
//! what a running assembly still shares (the state shell and the one layer it touches; every
//! entry is itself behind an `Arc`).

use std::collections::HashMap;
use std::sync::Arc;

use super::super::provider::{AssembleListener, TextSource, ToolSource, VariableProvider};
use super::{EntryId, FiberId, ListenerOptions};

/// Who registered an entry and where: used for removal and for error attribution.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub id: EntryId,
    /// Where the entry stands among the entries of its table that tie with it: its own id,
    /// or the rank its fiber was given (`rank.rs`). Every table is kept sorted by it.
    pub rank: u64,
    pub fiber: FiberId,
    /// The fiber's owner (plugin name).
    pub owner: Arc<str>,
    /// The layer key the entry lives in; `None` = global.
    pub scope: Option<Arc<str>>,
}

impl Meta {
    /// The scope for messages: the key, or `global`.
    pub fn scope_label(&self) -> &str {
        self.scope.as_deref().unwrap_or("global")
    }
}

/// A section or a context.
#[derive(Debug)]
pub(crate) struct TextEntry {
    pub meta: Meta,
    pub name: Arc<str>,
    pub order: f64,
    pub text: TextSource,
    pub complete: bool,
}

/// A variable provider.
pub(crate) struct VariableEntry {
    pub meta: Meta,
    pub name: Arc<str>,
    pub provider: Arc<dyn VariableProvider>,
}

/// A tool provider.
#[derive(Debug)]
pub(crate) struct ToolEntry {
    pub meta: Meta,
    pub source: ToolSource,
}

/// A waterfall listener with its scope tag (`meta.scope`) and options.
pub(crate) struct ListenerEntry {
    pub meta: Meta,
    pub options: ListenerOptions,
    pub listener: Arc<dyn AssembleListener>,
}

/// One layer: named tables in insertion order (names unique per table) and anonymous tables.
#[derive(Clone, Default)]
pub(crate) struct Layer {
    pub sections: Vec<Arc<TextEntry>>,
    pub contexts: Vec<Arc<TextEntry>>,
    pub variables: Vec<Arc<VariableEntry>>,
    pub tools: Vec<Arc<ToolEntry>>,
    pub suppressors: Vec<Meta>,
}

impl Layer {
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
            && self.contexts.is_empty()
            && self.variables.is_empty()
            && self.tools.is_empty()
            && self.suppressors.is_empty()
    }

    /// Take entry `id` out of whichever table holds it.
    pub fn remove(&mut self, id: EntryId) -> Option<Removed> {
        fn take<T>(table: &mut Vec<T>, id: EntryId, meta: impl Fn(&T) -> &Meta) -> Option<T> {
            let index = table.iter().position(|e| meta(e).id == id)?;
            Some(table.remove(index))
        }
        take(&mut self.sections, id, |e| &e.meta)
            .or_else(|| take(&mut self.contexts, id, |e| &e.meta))
            .map(Removed::Text)
            .or_else(|| take(&mut self.variables, id, |e| &e.meta).map(Removed::Variable))
            .or_else(|| take(&mut self.tools, id, |e| &e.meta).map(Removed::Tool))
            .or_else(|| take(&mut self.suppressors, id, |m| m).map(Removed::Suppressor))
    }
}

/// An entry taken out of the state. The registry drops these only after releasing its
/// lock: a provider may own the last handle to a `Fiber`, whose drop disposes through the
/// registry again.
#[allow(dead_code)] // Held only to control when the entry is dropped.
pub(crate) enum Removed {
    Text(Arc<TextEntry>),
    Variable(Arc<VariableEntry>),
    Tool(Arc<ToolEntry>),
    Suppressor(Meta),
    Listener(Arc<ListenerEntry>),
}

/// Everything an assembly reads.
#[derive(Clone, Default)]
pub(crate) struct State {
    pub global: Arc<Layer>,
    pub scoped: Arc<HashMap<Arc<str>, Arc<Layer>>>,
    /// Execution order: prepended listeners at the front.
    pub listeners: Arc<Vec<Arc<ListenerEntry>>>,
    /// key → parent, each key bound at most once, never cyclic.
    pub parents: Arc<HashMap<Arc<str>, Arc<str>>>,
}

impl State {
    /// `[key, parent, grandparent, …]`, nearest first.
    pub fn chain(&self, key: &str) -> Vec<Arc<str>> {
        let mut chain: Vec<Arc<str>> = Vec::new();
        let mut current: Arc<str> = match self.parents.get_key_value(key) {
            Some((k, _)) => Arc::clone(k),
            None => Arc::from(key),
        };
        loop {
            let parent = self.parents.get(&current).cloned();
            chain.push(current);
            match parent {
                // Binding refuses cycles, so this walk ends; the length guard is belt and braces.
                Some(p) if chain.len() <= self.parents.len() => current = p,
                _ => break,
            }
        }
        chain
    }

    /// The existing layers of `chain`, farthest ancestor first (step 1 of the assembly).
    pub fn chain_layers(&self, chain: &[Arc<str>]) -> Vec<&Layer> {
        chain
            .iter()
            .rev()
            .filter_map(|key| self.scoped.get(key).map(|layer| &**layer))
            .collect()
    }

    /// The layer for `scope`, created if missing (writes only).
    pub fn layer_mut(&mut self, scope: Option<&Arc<str>>) -> &mut Layer {
        match scope {
            None => Arc::make_mut(&mut self.global),
            Some(key) => Arc::make_mut(
                Arc::make_mut(&mut self.scoped)
                    .entry(Arc::clone(key))
                    .or_default(),
            ),
        }
    }

    /// The layer for `scope` if it exists (reads never create layers).
    pub fn layer(&self, scope: Option<&str>) -> Option<&Layer> {
        match scope {
            None => Some(&self.global),
            Some(key) => self.scoped.get(key).map(|layer| &**layer),
        }
    }

    /// Take entry `id` out of `scope`'s layer, deleting a scoped layer left empty.
    pub fn remove_from_layer(&mut self, scope: Option<&Arc<str>>, id: EntryId) -> Option<Removed> {
        self.layer(scope.map(|s| &**s))?;
        let layer = self.layer_mut(scope);
        let removed = layer.remove(id);
        let now_empty = layer.is_empty();
        if let (Some(key), true) = (scope, now_empty) {
            Arc::make_mut(&mut self.scoped).remove(key);
        }
        removed
    }

    /// Take listener `id` out of the listener list.
    pub fn remove_listener(&mut self, id: EntryId) -> Option<Removed> {
        let index = self.listeners.iter().position(|l| l.meta.id == id)?;
        Some(Removed::Listener(
            Arc::make_mut(&mut self.listeners).remove(index),
        ))
    }
}
