//! The scopes a host knows. The core accepts any key (an assembly for a key nobody
//! registered into is just the global prompt); a host refuses keys it was never told about,
//! because a mistyped `--scope agnet:1` would otherwise render the global prompt and exit 0.
//! Scopes are declared by host.toml's `[[scope]]` entries or `bind_scope`.

use std::collections::BTreeSet;
use std::sync::{PoisonError, RwLock};

use prompt_host_core::suggest::closest;
use thiserror::Error;

/// A scope key the host was never told about.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "scope \"{scope}\" is not declared (declare it with a [[scope]] entry in host.toml or with bind_scope); known scopes: {}{}",
    list(known),
    suggestion.as_ref().map(|s| format!("; did you mean \"{s}\"?")).unwrap_or_default()
)]
pub struct UnknownScope {
    /// The key asked for.
    pub scope: String,
    /// Every declared key, sorted.
    pub known: Vec<String>,
    /// The declared key closest to it, when one is close enough to be a typo.
    pub suggestion: Option<String>,
}

fn list(known: &[String]) -> String {
    if known.is_empty() {
        "(none)".to_string()
    } else {
        known.join(", ")
    }
}

/// The declared scope keys.
#[derive(Debug, Default)]
pub(crate) struct Scopes {
    known: RwLock<BTreeSet<String>>,
}

impl Scopes {
    /// Remember `key`.
    pub(crate) fn declare(&self, key: &str) {
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        if !known.contains(key) {
            known.insert(key.to_string());
        }
    }

    /// Declare `key` if `admit` accepts it, given the keys declared so far. `admit` runs
    /// under the write lock, so two concurrent declarations of one key cannot both pass a
    /// check that the key is new.
    pub(crate) fn declare_if<E>(
        &self,
        key: &str,
        admit: impl FnOnce(&BTreeSet<String>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        admit(&known)?;
        known.insert(key.to_string());
        Ok(())
    }

    /// `Ok` for the global scope (`None`) and declared keys.
    pub(crate) fn check(&self, scope: Option<&str>) -> Result<(), UnknownScope> {
        let Some(key) = scope else {
            return Ok(());
        };
        let known = self.known.read().unwrap_or_else(PoisonError::into_inner);
        check_in(&known, key)
    }

    /// Every declared key, sorted.
    pub(crate) fn list(&self) -> Vec<String> {
        let known = self.known.read().unwrap_or_else(PoisonError::into_inner);
        known.iter().cloned().collect()
    }
}

/// `Ok` when `key` is one of `known`; else the error naming the known keys and the closest.
pub(crate) fn check_in(known: &BTreeSet<String>, key: &str) -> Result<(), UnknownScope> {
    if known.contains(key) {
        return Ok(());
    }
    Err(UnknownScope {
        scope: key.to_string(),
        suggestion: closest(key, known.iter().map(String::as_str)),
        known: known.iter().cloned().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_scope_names_the_known_ones_and_the_closest() {
        let scopes = Scopes::default();
        scopes.declare("agent:1");
        scopes.declare("preset:coder");
        assert!(scopes.check(None).is_ok());
        assert!(scopes.check(Some("agent:1")).is_ok());
        let error = scopes.check(Some("agnet:1")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "scope \"agnet:1\" is not declared (declare it with a [[scope]] entry in host.toml \
             or with bind_scope); known scopes: agent:1, preset:coder; did you mean \"agent:1\"?"
        );
        let far = scopes.check(Some("team:red")).unwrap_err();
        assert_eq!(far.suggestion, None);
        assert!(Scopes::default()
            .check(Some("x"))
            .unwrap_err()
            .to_string()
            .contains("known scopes: (none)"));
    }
}
