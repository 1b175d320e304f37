//! The last value each dynamic entry answered, so a 0.2.0 plugin can answer "unchanged" and
//! the host re-uses it without copying anything out of the guest, or keep an answer (until
//! the context changes, for a time the plugin names, or both) and the host re-uses it
//! without calling at all.
//!
//! A value is remembered together with the instance that gave it: "unchanged" refers to that
//! instance's previous answer, so after the instance is replaced (a trap, a deadline) the
//! first answer must be a value again, and a stray "unchanged" fails the call.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::contract::Answer;
use super::failure::CallFailure;
use crate::prompt::{AssembleContext, ProviderErrorKind};

/// The longest a plugin may ask an answer to be kept: a year. Longer means nothing more,
/// and `Instant` arithmetic past it could overflow.
const LONGEST_KEEP: Duration = Duration::from_secs(365 * 24 * 3600);

/// What one call asked about reusing its answer without a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KeepAsked {
    /// While the context stays the one the call was made for
    /// (`control.keep-until-context-changes`).
    context: bool,
    /// Until this instant (`freshness.keep-for`; the shortest asked counts).
    until: Option<Instant>,
}

impl KeepAsked {
    /// `control.keep-until-context-changes`.
    pub(crate) fn until_context_changes(&mut self) {
        self.context = true;
    }

    /// `freshness.keep-for`: from now, for `duration` (at most [`LONGEST_KEEP`]).
    pub(crate) fn for_duration(&mut self, duration: Duration) {
        let until = Instant::now() + duration.min(LONGEST_KEEP);
        self.until = Some(self.until.map_or(until, |u| u.min(until)));
    }

    /// What to remember for an answer given for `ctx`, if anything was asked.
    fn kept(self, ctx: &AssembleContext) -> Option<Kept> {
        (self.context || self.until.is_some()).then(|| Kept {
            context: self.context.then(|| ctx.clone()),
            until: self.until,
        })
    }
}

/// For what an answer may be reused without a call: both conditions hold where both are set.
struct Kept {
    /// Only for this context.
    context: Option<AssembleContext>,
    /// Only before this instant.
    until: Option<Instant>,
}

impl Kept {
    fn covers(&self, ctx: &AssembleContext) -> bool {
        self.context.as_ref().is_none_or(|c| c == ctx)
            && self.until.is_none_or(|u| Instant::now() < u)
    }
}

/// One entry's last answer.
struct Last<T> {
    /// The instance that gave it.
    instance: u64,
    value: T,
    /// For what it may be reused without a call, if the plugin asked.
    kept: Option<Kept>,
}

/// One entry's last answer, if any.
pub(crate) struct LastAnswer<T>(Mutex<Option<Last<T>>>);

impl<T> Default for LastAnswer<T> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<T: Clone> LastAnswer<T> {
    /// The kept answer for `ctx`, if the plugin asked to keep it and `ctx` and the time are
    /// within what it asked for, and its instance (`live`) is still the one the host calls.
    pub(crate) fn kept(&self, live: u64, ctx: &AssembleContext) -> Option<T> {
        let last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let last = last.as_ref()?;
        (last.instance == live && last.kept.as_ref().is_some_and(|k| k.covers(ctx)))
            .then(|| last.value.clone())
    }

    /// The value `answer` stands for, from `instance`, given for `ctx`. A value is
    /// remembered when `remember` (the instance can answer "unchanged" later: contract
    /// 0.2.0); `keep` is what the call asked about reusing it without a call.
    pub(crate) fn resolve(
        &self,
        instance: u64,
        answer: Answer<T>,
        remember: bool,
        keep: KeepAsked,
        ctx: &AssembleContext,
    ) -> Result<T, CallFailure> {
        match answer {
            Answer::Value(value) => {
                if remember {
                    self.remember(instance, value.clone(), keep, ctx);
                }
                Ok(value)
            }
            Answer::Unchanged => {
                let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
                match last.as_mut() {
                    Some(last) if last.instance == instance => {
                        last.kept = keep.kept(ctx);
                        Ok(last.value.clone())
                    }
                    _ => Err(CallFailure {
                        kind: ProviderErrorKind::InvalidInput,
                        message: "answered \"unchanged\", but this instance has given no \
                                  answer for this entry before"
                            .to_string(),
                    }),
                }
            }
        }
    }

    /// Remember `value` as `instance`'s answer for `ctx`, kept as `keep` asks.
    pub(crate) fn remember(&self, instance: u64, value: T, keep: KeepAsked, ctx: &AssembleContext) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(Last {
            instance,
            value,
            kept: keep.kept(ctx),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> KeepAsked {
        KeepAsked::default()
    }

    fn until_context_changes() -> KeepAsked {
        let mut keep = KeepAsked::default();
        keep.until_context_changes();
        keep
    }

    #[test]
    fn unchanged_reuses_the_same_instances_value_only() {
        let last = LastAnswer::default();
        let cx = AssembleContext::default();
        assert_eq!(
            last.resolve(1, Answer::Value("a".to_string()), true, none(), &cx)
                .unwrap(),
            "a"
        );
        assert_eq!(
            last.resolve(1, Answer::Unchanged, true, none(), &cx)
                .unwrap(),
            "a"
        );
        // Another instance (the first was replaced) has no previous answer.
        let stray = last
            .resolve(2, Answer::Unchanged, true, none(), &cx)
            .unwrap_err();
        assert_eq!(stray.kind, ProviderErrorKind::InvalidInput);
        assert_eq!(
            last.resolve(2, Answer::Value("b".to_string()), true, none(), &cx)
                .unwrap(),
            "b"
        );
        assert_eq!(
            last.resolve(2, Answer::Unchanged, true, none(), &cx)
                .unwrap(),
            "b"
        );
        // Not remembered: a 0.1.0 instance never answers "unchanged".
        let plain = LastAnswer::default();
        plain
            .resolve(3, Answer::Value(7), false, none(), &cx)
            .unwrap();
        assert!(plain
            .resolve(3, Answer::Unchanged, false, none(), &cx)
            .is_err());
    }

    #[test]
    fn a_kept_answer_is_reused_for_its_context_and_instance_only() {
        let last = LastAnswer::default();
        let a = AssembleContext::with_facts([("model", "m1")]);
        let b = AssembleContext::with_facts([("model", "m2")]);
        assert_eq!(last.kept(1, &a), None);
        last.resolve(
            1,
            Answer::Value("x".to_string()),
            true,
            until_context_changes(),
            &a,
        )
        .unwrap();
        assert_eq!(last.kept(1, &a).as_deref(), Some("x"));
        // Another context, or another live instance: call again.
        assert_eq!(last.kept(1, &b), None);
        assert_eq!(last.kept(2, &a), None);
        // An "unchanged" answer without keeping ends the reuse.
        last.resolve(1, Answer::Unchanged, true, none(), &a)
            .unwrap();
        assert_eq!(last.kept(1, &a), None);
        // And one that keeps it for the new context starts it again.
        last.resolve(1, Answer::Unchanged, true, until_context_changes(), &b)
            .unwrap();
        assert_eq!(last.kept(1, &b).as_deref(), Some("x"));
        assert_eq!(last.kept(1, &a), None);
    }

    #[test]
    fn an_answer_kept_for_a_time_serves_every_context_until_then() {
        let last = LastAnswer::default();
        let a = AssembleContext::with_facts([("model", "m1")]);
        let b = AssembleContext::with_facts([("model", "m2")]);
        let mut hour = KeepAsked::default();
        hour.for_duration(Duration::from_secs(3600));
        last.resolve(1, Answer::Value("x".to_string()), true, hour, &a)
            .unwrap();
        assert_eq!(last.kept(1, &a).as_deref(), Some("x"));
        assert_eq!(last.kept(1, &b).as_deref(), Some("x"));
        assert_eq!(last.kept(2, &a), None, "a replaced instance calls again");
        // With keep-until-context-changes as well: both must hold.
        let mut both = hour;
        both.until_context_changes();
        last.resolve(1, Answer::Unchanged, true, both, &a).unwrap();
        assert_eq!(last.kept(1, &a).as_deref(), Some("x"));
        assert_eq!(last.kept(1, &b), None);
        // A time that has passed, or 0, keeps nothing.
        let mut now = KeepAsked::default();
        now.for_duration(Duration::ZERO);
        last.resolve(1, Answer::Unchanged, true, now, &a).unwrap();
        assert_eq!(last.kept(1, &a), None);
    }

    #[test]
    fn the_shortest_time_asked_counts_and_none_is_past_a_year() {
        let mut keep = KeepAsked::default();
        keep.for_duration(Duration::from_secs(60));
        keep.for_duration(Duration::from_secs(3600));
        let minute = keep.until.unwrap();
        assert!(minute <= Instant::now() + Duration::from_secs(60));
        let mut forever = KeepAsked::default();
        forever.for_duration(Duration::from_nanos(u64::MAX));
        assert!(forever.until.unwrap() <= Instant::now() + LONGEST_KEEP);
    }
}
