//! The scopes a host knows. The core accepts any key (an assembly for a key nobody
//! registered into is just the global prompt); a host refuses keys it was never told about,
//! because a mistyped `--scope agnet:1` would otherwise render the global prompt and exit 0.
//! Scopes are declared by host.toml's `[[scope]]` entries or `bind_scope`.

use std::collections::BTreeSet;
use std::sync::{PoisonError, RwLock};

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

/// The candidate nearest to `key` by edit distance (a swap of two neighbours counts as one
/// edit), if it is within a third of the key's length (at least one edit).
pub(crate) fn closest<'a>(key: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let budget = (key.chars().count() / 3).max(1);
    candidates
        .map(|candidate| (distance(key, candidate), candidate))
        .filter(|(d, _)| *d <= budget)
        .min_by_key(|(d, _)| *d)
        .map(|(_, candidate)| candidate.to_string())
}

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("agnet:1", "agent:1"), 1);
        assert_eq!(distance("agent:2", "agent:1"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert!(distance("preset:coder", "agent:1") > 4);
    }

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
