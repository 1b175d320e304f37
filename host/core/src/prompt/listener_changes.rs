//! What each listener of an assembly's waterfall changed: the sections, runtime contexts and
//! tools it added, removed or rewrote. Recorded only for a [`Timings`] made with
//! [`Timings::tracing_listeners`] (`inspect` asks for it), since it copies the assembly's
//! names and hashes before and after every listener.
//!
//! A listener's call includes the listeners it runs through `next`, so what the assembly
//! looks like after it returns is its work and theirs. Its own changes are its whole effect
//! less its inner listener's whole effect, by name: what the inner one added, removed or
//! rewrote is not counted again for the outer one.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde::Serialize;

use super::assembly::Assembly;
use super::registry::state::Meta;
use super::timings::Timings;

/// What one listener changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListenerChange {
    /// The plugin that registered the listener.
    pub plugin: String,
    /// The listener's key, when it has one.
    pub key: Option<String>,
    /// The layer (or tag) it is registered in: a scope key, or `global`.
    pub layer: String,
    /// What it added: `section NAME`, `context NAME`, `tool NAME`.
    pub added: Vec<String>,
    /// What it removed.
    pub removed: Vec<String>,
    /// What it rewrote (the same name, another text or schema).
    pub rewritten: Vec<String>,
}

impl ListenerChange {
    /// Whether it changed nothing.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.rewritten.is_empty()
    }
}

/// The names and content hashes of an assembly's parts.
pub(crate) type Snapshot = Vec<(String, u64)>;

/// `assembly`'s parts, named by kind, with a hash of each one's content.
pub(crate) fn snapshot(assembly: &Assembly) -> Snapshot {
    let hash = |parts: &[&str]| {
        let mut hasher = DefaultHasher::new();
        parts.hash(&mut hasher);
        hasher.finish()
    };
    let sections = assembly
        .sections
        .iter()
        .map(|s| (format!("section {}", s.name), hash(&[&s.text])));
    let contexts = assembly
        .contexts
        .iter()
        .map(|c| (format!("context {}", c.name), hash(&[&c.text])));
    let tools = assembly.tools.iter().map(|t| {
        let parameters = t.parameters.to_string();
        (
            format!("tool {}", t.name),
            hash(&[&t.description, &parameters]),
        )
    });
    sections.chain(contexts).chain(tools).collect()
}

/// The whole effect of the listener at `index` of the chain: `before` it ran, `after` it
/// returned (its inner listeners' work included).
#[derive(Debug, Clone)]
pub(crate) struct Effect {
    pub(crate) index: usize,
    pub(crate) plugin: String,
    pub(crate) key: Option<String>,
    pub(crate) layer: String,
    pub(crate) added: Vec<String>,
    pub(crate) removed: Vec<String>,
    pub(crate) rewritten: Vec<String>,
}

impl Effect {
    /// The effect of going from `before` to `after` for the listener at `index`.
    pub(crate) fn between(
        index: usize,
        meta: &Meta,
        key: Option<&str>,
        before: &Snapshot,
        after: &Snapshot,
    ) -> Self {
        let find = |list: &Snapshot, name: &str| list.iter().find(|(n, _)| n == name).map(|p| p.1);
        let added = after
            .iter()
            .filter(|(name, _)| find(before, name).is_none())
            .map(|(name, _)| name.clone())
            .collect();
        let removed = before
            .iter()
            .filter(|(name, _)| find(after, name).is_none())
            .map(|(name, _)| name.clone())
            .collect();
        let rewritten = after
            .iter()
            .filter(|(name, hash)| find(before, name).is_some_and(|was| was != *hash))
            .map(|(name, _)| name.clone())
            .collect();
        Self {
            index,
            plugin: meta.owner.to_string(),
            key: key.map(str::to_string),
            layer: meta.scope_label().to_string(),
            added,
            removed,
            rewritten,
        }
    }
}

/// Each listener's own changes, outermost first, from the whole `effects` recorded (in any
/// order, each index once).
pub(crate) fn own_changes(mut effects: Vec<Effect>) -> Vec<ListenerChange> {
    effects.sort_by_key(|e| e.index);
    let mut changes = Vec::with_capacity(effects.len());
    for (i, effect) in effects.iter().enumerate() {
        let inner = effects.get(i + 1).filter(|e| e.index == effect.index + 1);
        let less = |mine: &[String], theirs: Option<&Vec<String>>| -> Vec<String> {
            mine.iter()
                .filter(|name| theirs.is_none_or(|t| !t.contains(name)))
                .cloned()
                .collect()
        };
        changes.push(ListenerChange {
            plugin: effect.plugin.clone(),
            key: effect.key.clone(),
            layer: effect.layer.clone(),
            added: less(&effect.added, inner.map(|e| &e.added)),
            removed: less(&effect.removed, inner.map(|e| &e.removed)),
            rewritten: less(&effect.rewritten, inner.map(|e| &e.rewritten)),
        });
    }
    changes
}

impl Timings {
    /// Whether this collector records what each listener changed.
    pub(crate) fn traces_listeners(&self) -> bool {
        self.trace_listeners
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(index: usize, added: &[&str], rewritten: &[&str]) -> Effect {
        Effect {
            index,
            plugin: format!("p{index}"),
            key: None,
            layer: "global".into(),
            added: added.iter().map(|s| s.to_string()).collect(),
            removed: Vec::new(),
            rewritten: rewritten.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn an_outer_listener_is_not_charged_with_its_inner_listeners_work() {
        let changes = own_changes(vec![
            effect(1, &["section b"], &["section a"]),
            effect(0, &["section b", "section c"], &["section a"]),
        ]);
        assert_eq!(changes[0].plugin, "p0");
        assert_eq!(changes[0].added, vec!["section c".to_string()]);
        assert!(changes[0].rewritten.is_empty());
        assert_eq!(changes[1].added, vec!["section b".to_string()]);
        assert_eq!(changes[1].rewritten, vec!["section a".to_string()]);
    }

    #[test]
    fn a_listener_that_short_circuits_keeps_its_whole_effect() {
        let changes = own_changes(vec![effect(0, &["section x"], &[])]);
        assert_eq!(changes[0].added, vec!["section x".to_string()]);
    }
}
