//! The write path of registration: validation that needs no layer, the per-layer duplicate
//! check, and insertion.

use std::sync::Arc;

use super::super::errors::{EntryKind, RegisterError};
use super::super::names::is_variable_name;
use super::state::{ListenerEntry, Meta, State, TextEntry, ToolEntry, VariableEntry};
use super::{Registration, SectionDef};

/// Checks that need no layer, run before the duplicate check: finite orders and variable
/// names.
pub(super) fn precheck(registration: &Registration) -> Result<(), RegisterError> {
    match registration {
        Registration::Section(def) | Registration::Context(def) if !def.order.is_finite() => {
            Err(RegisterError::NonFiniteOrder {
                kind: if matches!(registration, Registration::Section(_)) {
                    EntryKind::Section
                } else {
                    EntryKind::Context
                },
                name: def.name.clone(),
            })
        }
        Registration::Variable(name, _) if !is_variable_name(name) => {
            Err(RegisterError::InvalidVariableName(name.clone()))
        }
        _ => Ok(()),
    }
}

/// The duplicate-name error this registration would hit in `scope`'s layer (duplicates are
/// per layer). Reads only, so a refused registration creates no layer.
pub(super) fn duplicate_of(
    state: &State,
    scope: Option<&str>,
    registration: &Registration,
) -> Option<RegisterError> {
    let layer = state.layer(scope)?;
    let (kind, name, taken) = match registration {
        Registration::Section(def) => (
            EntryKind::Section,
            def.name.as_str(),
            layer.sections.iter().any(|e| *e.name == *def.name),
        ),
        Registration::Context(def) => (
            EntryKind::Context,
            def.name.as_str(),
            layer.contexts.iter().any(|e| *e.name == *def.name),
        ),
        Registration::Variable(name, _) => (
            EntryKind::Variable,
            name.as_str(),
            layer.variables.iter().any(|e| *e.name == **name),
        ),
        _ => return None,
    };
    taken.then(|| RegisterError::Duplicate {
        kind,
        name: name.to_string(),
        scoped: scope.is_some(),
    })
}

/// Insert into `meta.scope`'s layer (or the listener list) at the entry's rank;
/// `duplicate_of` ran first.
pub(super) fn insert(state: &mut State, meta: Meta, registration: Registration) {
    let rank = meta.rank;
    match registration {
        Registration::Section(def) => {
            let entry = text_entry(meta, def, true);
            let layer = state.layer_mut(entry.meta.scope.clone().as_ref());
            ranked(&mut layer.sections, Arc::new(entry), |e| e.meta.rank);
        }
        Registration::Context(def) => {
            let entry = text_entry(meta, def, false);
            let layer = state.layer_mut(entry.meta.scope.clone().as_ref());
            ranked(&mut layer.contexts, Arc::new(entry), |e| e.meta.rank);
        }
        Registration::Variable(name, provider) => {
            let scope = meta.scope.clone();
            let entry = Arc::new(VariableEntry {
                meta,
                name: Arc::from(name),
                provider,
            });
            let layer = state.layer_mut(scope.as_ref());
            ranked(&mut layer.variables, entry, |e| e.meta.rank);
        }
        Registration::Tools(source) => {
            let scope = meta.scope.clone();
            let layer = state.layer_mut(scope.as_ref());
            ranked(
                &mut layer.tools,
                Arc::new(ToolEntry { meta, source }),
                |e| e.meta.rank,
            );
        }
        Registration::Suppressor => {
            let scope = meta.scope.clone();
            ranked(
                &mut state.layer_mut(scope.as_ref()).suppressors,
                meta,
                |m| m.rank,
            );
        }
        Registration::Listener(listener, options) => {
            let entry = Arc::new(ListenerEntry {
                meta,
                options,
                listener,
            });
            let listeners = Arc::make_mut(&mut state.listeners);
            let at = listener_position(listeners, rank, options.prepend);
            listeners.insert(at, entry);
        }
    }
}

/// Insert `entry` after every entry of `table` ranked at or before it. A table is sorted by
/// rank, and an entry registered now has the highest rank there is unless its fiber was
/// given one (`rank.rs`), so this appends, as registration order asks, in all other cases.
fn ranked<T>(table: &mut Vec<T>, entry: T, rank: impl Fn(&T) -> u64) {
    let mine = rank(&entry);
    let at = table.partition_point(|e| rank(e) <= mine);
    table.insert(at, entry);
}

/// Where a listener of `rank` goes. The prepended listeners come first, the one registered
/// last first; the others follow in registration order. A listener registered now (the
/// highest rank) therefore goes to the very front or the very end, as it always did.
fn listener_position(listeners: &[Arc<ListenerEntry>], rank: u64, prepend: bool) -> usize {
    if prepend {
        listeners
            .iter()
            .position(|l| !l.options.prepend || l.meta.rank < rank)
            .unwrap_or(listeners.len())
    } else {
        listeners
            .iter()
            .rposition(|l| l.options.prepend || l.meta.rank <= rank)
            .map_or(0, |i| i + 1)
    }
}

fn text_entry(meta: Meta, def: SectionDef, is_section: bool) -> TextEntry {
    TextEntry {
        meta,
        name: Arc::from(def.name),
        order: def.order,
        text: def.text,
        // Contexts ignore the flag (only sections can be complete).
        complete: is_section && def.complete,
    }
}
