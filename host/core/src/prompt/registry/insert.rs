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

/// Insert into `meta.scope`'s layer (or the listener list); `duplicate_of` ran first.
pub(super) fn insert(state: &mut State, meta: Meta, registration: Registration) {
    match registration {
        Registration::Section(def) => {
            let entry = text_entry(meta, def, true);
            let layer = state.layer_mut(entry.meta.scope.clone().as_ref());
            layer.sections.push(Arc::new(entry));
        }
        Registration::Context(def) => {
            let entry = text_entry(meta, def, false);
            let layer = state.layer_mut(entry.meta.scope.clone().as_ref());
            layer.contexts.push(Arc::new(entry));
        }
        Registration::Variable(name, provider) => {
            let scope = meta.scope.clone();
            state
                .layer_mut(scope.as_ref())
                .variables
                .push(Arc::new(VariableEntry {
                    meta,
                    name: Arc::from(name),
                    provider,
                }));
        }
        Registration::Tools(source) => {
            let scope = meta.scope.clone();
            state
                .layer_mut(scope.as_ref())
                .tools
                .push(Arc::new(ToolEntry { meta, source }));
        }
        Registration::Suppressor => {
            let scope = meta.scope.clone();
            state.layer_mut(scope.as_ref()).suppressors.push(meta);
        }
        Registration::Listener(listener, options) => {
            let entry = Arc::new(ListenerEntry {
                meta,
                options,
                listener,
            });
            let listeners = Arc::make_mut(&mut state.listeners);
            if options.prepend {
                listeners.insert(0, entry);
            } else {
                listeners.push(entry);
            }
        }
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
