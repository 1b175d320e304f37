//! "Unchanged" answers (contract 0.2.0): the last answer of every dynamic entry of this
//! instance, with its version, so an answer equal to it is sent as `unchanged` and nothing
//! is copied to the host. The host keeps the same last values on its side.
//!
//! An entry is answered "unchanged" without computing it when the plugin gave it a version
//! ([`crate::Plugin::version`]) equal to the last answer's; otherwise the SDK computes the
//! value and compares it with the last one.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::versions::same_bytes;
use crate::{Error, ToolSchema, ToolSet};

/// FNV-1a: entry names are short and chosen by the plugin itself, so the SipHash default
/// (built against flooding by untrusted keys) only costs time here, on every call.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

/// A map from entry name to its last answer.
pub(crate) type ByName<T> = HashMap<String, Last<T>, BuildHasherDefault<Fnv>>;

/// One entry's last answer.
pub(crate) struct Last<T> {
    version: Option<u64>,
    value: T,
}

/// Every entry's last answer, per kind (a section and a context may share a name).
#[derive(Default)]
pub(crate) struct Answers {
    sections: ByName<String>,
    contexts: ByName<String>,
    variables: ByName<Option<String>>,
    tools: ByName<ToolSet>,
}

thread_local! {
    static LAST: RefCell<Answers> = RefCell::new(Answers::default());
}

/// Forget every last answer (a fresh `init`).
pub(crate) fn forget() {
    LAST.with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = Answers::default();
        }
    });
}

/// Values the SDK can compare cheaply inside Wasm.
pub(crate) trait Same {
    fn same(&self, other: &Self) -> bool;
}

impl Same for String {
    fn same(&self, other: &Self) -> bool {
        same_bytes(self.as_bytes(), other.as_bytes())
    }
}

impl Same for Option<String> {
    fn same(&self, other: &Self) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.same(b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Same for ToolSchema {
    fn same(&self, other: &Self) -> bool {
        self.name.same(&other.name)
            && self.description.same(&other.description)
            && self.parameters.same(&other.parameters)
    }
}

impl Same for ToolSet {
    fn same(&self, other: &Self) -> bool {
        let names = match (&self.known_names, &other.known_names) {
            (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y)),
            (None, None) => true,
            _ => false,
        };
        names
            && self.schemas.len() == other.schemas.len()
            && self
                .schemas
                .iter()
                .zip(&other.schemas)
                .all(|(x, y)| x.same(y))
    }
}

/// Which map of [`Answers`] an entry's answers live in.
pub(crate) type Slot<T> = fn(&mut Answers) -> &mut ByName<T>;

pub(crate) const SECTIONS: Slot<String> = |a| &mut a.sections;
pub(crate) const CONTEXTS: Slot<String> = |a| &mut a.contexts;
pub(crate) const VARIABLES: Slot<Option<String>> = |a| &mut a.variables;
pub(crate) const TOOLS: Slot<ToolSet> = |a| &mut a.tools;

/// The answer for entry `name`: `Ok(None)` = "unchanged", `Ok(Some(value))` = a new value.
/// `version` is the plugin's version of the value (if it gave one); `compute` produces the
/// value and runs only when the version does not settle it.
pub(crate) fn answer<T: Same + Clone>(
    slot: Slot<T>,
    name: &str,
    version: Option<u64>,
    compute: impl FnOnce() -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    // Without a version there is nothing to look up before computing.
    if let Some(version) = version {
        let known = LAST.with(|last| {
            last.try_borrow_mut().is_ok_and(|mut last| {
                matches!(slot(&mut last).get(name), Some(Last { version: Some(w), .. }) if version == *w)
            })
        });
        if known {
            return Ok(None);
        }
    }
    // Not borrowed while the plugin computes: it may itself ask for its answers' state.
    let value = compute()?;
    LAST.with(|last| {
        let Ok(mut last) = last.try_borrow_mut() else {
            return Ok(Some(value));
        };
        let entries = slot(&mut last);
        match entries.get_mut(name) {
            Some(kept) if kept.value.same(&value) => {
                kept.version = version;
                Ok(None)
            }
            Some(kept) => {
                *kept = Last {
                    version,
                    value: value.clone(),
                };
                Ok(Some(value))
            }
            None => {
                entries.insert(
                    name.to_string(),
                    Last {
                        version,
                        value: value.clone(),
                    },
                );
                Ok(Some(value))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(params: &str) -> ToolSet {
        ToolSet {
            schemas: vec![ToolSchema {
                name: "t".into(),
                description: "d".into(),
                parameters: params.into(),
            }],
            known_names: None,
        }
    }

    #[test]
    fn an_equal_value_is_unchanged_and_a_new_one_is_sent() {
        forget();
        let text = |t: &str| answer(SECTIONS, "s", None, || Ok(t.to_string()));
        assert_eq!(text("a").unwrap().as_deref(), Some("a"));
        assert_eq!(text("a").unwrap(), None);
        assert_eq!(text("b").unwrap().as_deref(), Some("b"));
        // A context with the same name is another entry.
        let ctx = answer(CONTEXTS, "s", None, || Ok("b".to_string())).unwrap();
        assert_eq!(ctx.as_deref(), Some("b"));
        let tools = |p: &str| answer(TOOLS, "k", None, || Ok(set(p))).unwrap().is_some();
        assert!(tools("{}"));
        assert!(!tools("{}"));
        assert!(tools("{\"type\":\"object\"}"));
    }

    #[test]
    fn a_matching_version_skips_the_computation() {
        forget();
        let calls = std::cell::Cell::new(0);
        let var = |version: Option<u64>, value: Option<&str>| {
            answer(VARIABLES, "v", version, || {
                calls.set(calls.get() + 1);
                Ok(value.map(str::to_string))
            })
            .unwrap()
        };
        assert_eq!(var(Some(1), Some("x")), Some(Some("x".to_string())));
        assert_eq!(var(Some(1), Some("ignored")), None);
        // A new version computes; an equal value is still "unchanged".
        assert_eq!(var(Some(2), Some("x")), None);
        assert_eq!(var(Some(3), None), Some(None));
        assert_eq!(calls.get(), 3);
        // Forgetting (a fresh init) forgets versions too.
        forget();
        assert_eq!(var(Some(3), None), Some(None));
        assert_eq!(calls.get(), 4);
    }

    #[test]
    fn an_error_keeps_the_last_answer() {
        forget();
        answer(SECTIONS, "s", Some(1), || Ok("a".to_string())).unwrap();
        let failed = answer(SECTIONS, "s", Some(2), || Err(Error::Failed("x".into())));
        assert!(failed.is_err());
        assert_eq!(
            answer(SECTIONS, "s", Some(1), || Ok("b".to_string())).unwrap(),
            None
        );
    }
}
