//! The failure policy of a plugin under `on_error = "skip"`, as data: consecutive failures
//! per entry (a plugin with one broken entry is quarantined even while its other entries
//! succeed), reset by that entry's success, and the verdict once a run reaches the limit.
//! Pure: the supervisor applies it and announces what it decides.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// What one more failure of an entry means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// The entry's consecutive failures, this one included.
    pub(crate) failures: u32,
    /// The limit they are counted against (at least 1).
    pub(crate) limit: u32,
    /// This failure quarantined the plugin (it was not before).
    pub(crate) quarantined_now: bool,
}

/// The counts of one plugin.
#[derive(Debug, Default)]
pub(crate) struct Quarantine {
    failures: Mutex<HashMap<String, u32>>,
    /// Whether a failure was ever counted: until then a success has nothing to reset and
    /// skips the lock (every successful call reports one).
    ever_failed: AtomicBool,
    quarantined: AtomicBool,
}

impl Quarantine {
    /// Whether the plugin is quarantined.
    pub(crate) fn is_quarantined(&self) -> bool {
        self.quarantined.load(Ordering::Relaxed)
    }

    /// `entry` succeeded: its run of failures ends.
    pub(crate) fn record_success(&self, entry: &str) {
        if !self.ever_failed.load(Ordering::Acquire) {
            return;
        }
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        if failures.get(entry).is_some_and(|n| *n > 0) {
            failures.insert(entry.to_string(), 0);
        }
    }

    /// `entry` failed once more; quarantine after `limit` in a row (0 counts as 1).
    pub(crate) fn record_failure(&self, entry: &str, limit: u32) -> Verdict {
        let failures = {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            self.ever_failed.store(true, Ordering::Release);
            let n = failures.entry(entry.to_string()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let limit = limit.max(1);
        let quarantined_now = failures >= limit && !self.quarantined.swap(true, Ordering::Relaxed);
        Verdict {
            failures,
            limit,
            quarantined_now,
        }
    }

    /// The longest current run of failures over all entries.
    pub(crate) fn longest_run(&self) -> u32 {
        let failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.values().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_of_one_entry_quarantines_once() {
        let q = Quarantine::default();
        assert_eq!(q.record_failure("a", 3).failures, 1);
        q.record_success("b");
        assert_eq!(q.record_failure("a", 3).failures, 2);
        let third = q.record_failure("a", 3);
        assert_eq!(
            third,
            Verdict {
                failures: 3,
                limit: 3,
                quarantined_now: true
            }
        );
        assert!(q.is_quarantined());
        assert!(!q.record_failure("a", 3).quarantined_now);
        assert_eq!(q.longest_run(), 4);
    }

    #[test]
    fn a_success_resets_only_its_entry() {
        let q = Quarantine::default();
        q.record_failure("a", 5);
        q.record_failure("a", 5);
        q.record_failure("b", 5);
        q.record_success("a");
        assert_eq!(q.longest_run(), 1);
        assert_eq!(q.record_failure("a", 5).failures, 1);
        assert!(!q.is_quarantined());
    }

    #[test]
    fn a_zero_limit_counts_as_one() {
        let q = Quarantine::default();
        let v = q.record_failure("a", 0);
        assert_eq!(v.limit, 1);
        assert!(v.quarantined_now);
    }
}
