//! Replacing one fiber's entries with another's in a single step: a plugin reloaded while
//! assemblies run. Every assembly works on a snapshot, so it sees either all the old entries
//! or all the new ones, never a mix and never neither.

use std::sync::Arc;

use super::super::errors::RegisterError;
use super::insert::{duplicate_of, insert, precheck};
use super::state::{Meta, Removed};
use super::{EntryId, Fiber, FiberId, Location, Registration, Registry, BUILT_IN_FIBER};

impl Registry {
    /// Remove every entry of fiber `old` and register `registrations` for `new`, atomically,
    /// at `new`'s rank when it has one (`rank.rs`). All or nothing: the new entries are checked against the registry without the old ones
    /// (so a reloaded plugin may declare the same names), and if one is refused nothing
    /// changes. Observers are told once per entry removed and added.
    pub fn swap(
        &self,
        old: FiberId,
        new: &Fiber,
        registrations: Vec<Registration>,
    ) -> Result<(), RegisterError> {
        for registration in &registrations {
            precheck(registration)?;
        }
        let owner: Arc<str> = Arc::from(new.owner());
        let scope: Option<Arc<str>> = new.scope().map(Arc::from);
        // Whatever is dropped here is dropped after the lock is released: an entry's provider
        // may own the last handle to a fiber.
        let mut graveyard: Vec<Removed> = Vec::new();
        let mut refused: Vec<Registration> = Vec::new();
        let outcome = {
            let mut inner = self.write();
            let mut state = (*inner.state).clone();
            let mut index = inner.index.clone();
            let mut next = inner.next_entry;
            let doomed: Vec<(EntryId, Location)> = index
                .iter()
                .filter(|(_, loc)| loc.fiber == old)
                .map(|(id, loc)| (*id, loc.clone()))
                .collect();
            for (id, loc) in &doomed {
                graveyard.extend(if loc.listener {
                    state.remove_listener(*id)
                } else {
                    state.remove_from_layer(loc.scope.as_ref(), *id)
                });
                index.remove(id);
            }
            let mut added = 0;
            let mut error = None;
            let mut pending = registrations.into_iter();
            for registration in pending.by_ref() {
                if let Some(e) = duplicate_of(&state, scope.as_deref(), &registration) {
                    error = Some(e);
                    refused.push(registration);
                    break;
                }
                let id = EntryId(next);
                next += 1;
                let listener = matches!(registration, Registration::Listener(..));
                let meta = Meta {
                    id,
                    rank: new.rank().unwrap_or(id.0),
                    fiber: new.id(),
                    owner: Arc::clone(&owner),
                    scope: scope.clone(),
                };
                insert(&mut state, meta, registration);
                if new.id() != BUILT_IN_FIBER {
                    index.insert(
                        id,
                        Location {
                            fiber: new.id(),
                            scope: scope.clone(),
                            listener,
                        },
                    );
                }
                added += 1;
            }
            refused.extend(pending);
            match error {
                Some(e) => Err(e),
                None => {
                    inner.state = Arc::new(state);
                    inner.index = index;
                    inner.next_entry = next;
                    Ok(doomed.len() + added)
                }
            }
        };
        drop(refused);
        match outcome {
            Ok(changes) => {
                drop(graveyard);
                self.notify(changes);
                Ok(())
            }
            Err(e) => {
                // Nothing was committed: the old entries are still in place.
                graveyard.clear();
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SectionDef;
    use super::*;
    use crate::prompt::{AssembleContext, PromptConfig};

    fn names(r: &Registry) -> Vec<String> {
        r.assemble_blocking(None, AssembleContext::default())
            .unwrap()
            .sections
            .into_iter()
            .map(|s| s.name)
            .filter(|n| n.starts_with('p'))
            .collect()
    }

    #[test]
    fn the_new_entries_replace_the_old_in_one_step() {
        let r = Registry::new(PromptConfig::default()).unwrap();
        let old = r.fiber("plugin", None);
        old.section(SectionDef::fixed("p:a", 1.0, "old a")).unwrap();
        old.section(SectionDef::fixed("p:b", 2.0, "old b")).unwrap();
        let other = r.fiber("other", None);
        other
            .section(SectionDef::fixed("p:taken", 3.0, "x"))
            .unwrap();
        let new = r.fiber("plugin", None);
        // Same names as the old fiber's: fine, they are gone in the same step.
        r.swap(
            old.id(),
            &new,
            vec![
                Registration::Section(SectionDef::fixed("p:a", 1.0, "new a")),
                Registration::Section(SectionDef::fixed("p:c", 4.0, "new c")),
            ],
        )
        .unwrap();
        assert_eq!(names(&r), ["p:a", "p:taken", "p:c"]);
        // A refused entry (another fiber's name) changes nothing.
        let newer = r.fiber("plugin", None);
        let e = r
            .swap(
                new.id(),
                &newer,
                vec![
                    Registration::Section(SectionDef::fixed("p:z", 0.5, "z")),
                    Registration::Section(SectionDef::fixed("p:taken", 1.0, "dup")),
                ],
            )
            .unwrap_err();
        assert!(matches!(e, RegisterError::Duplicate { .. }));
        assert_eq!(names(&r), ["p:a", "p:taken", "p:c"]);
        // Disposing the replaced fiber removes nothing of the new one.
        old.dispose();
        assert_eq!(names(&r), ["p:a", "p:taken", "p:c"]);
        new.dispose();
        assert_eq!(names(&r), ["p:taken"]);
    }
}
