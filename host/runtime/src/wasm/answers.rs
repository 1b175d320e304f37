//! The last value each dynamic entry answered, so a 0.2.0 plugin can answer "unchanged" and
//! the host re-uses it without copying anything out of the guest, or keep an answer until
//! the context changes and the host re-uses it without calling at all.
//!
//! A value is remembered together with the instance that gave it: "unchanged" refers to that
//! instance's previous answer, so after the instance is replaced (a trap, a deadline) the
//! first answer must be a value again, and a stray "unchanged" fails the call.

use std::sync::{Mutex, PoisonError};

use super::contract::Answer;
use super::failure::CallFailure;
use crate::prompt::{AssembleContext, ProviderErrorKind};

/// One entry's last answer.
struct Last<T> {
    /// The instance that gave it.
    instance: u64,
    value: T,
    /// The context it may be reused for without a call (`keep-until-context-changes`).
    kept_for: Option<AssembleContext>,
}

/// One entry's last answer, if any.
pub(crate) struct LastAnswer<T>(Mutex<Option<Last<T>>>);

impl<T> Default for LastAnswer<T> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<T: Clone> LastAnswer<T> {
    /// The kept answer for `ctx`, if the plugin asked to keep it until the context changes,
    /// `ctx` is the context it was given for, and its instance (`live`) is still the one the
    /// host calls.
    pub(crate) fn kept(&self, live: u64, ctx: &AssembleContext) -> Option<T> {
        let last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let last = last.as_ref()?;
        (last.instance == live && last.kept_for.as_ref() == Some(ctx)).then(|| last.value.clone())
    }

    /// The value `answer` stands for, from `instance`. A value is remembered when
    /// `remember` (the instance can answer "unchanged" later: contract 0.2.0); `keep_for` is
    /// the context the answer may be reused for without a call, if the plugin asked for it.
    pub(crate) fn resolve(
        &self,
        instance: u64,
        answer: Answer<T>,
        remember: bool,
        keep_for: Option<&AssembleContext>,
    ) -> Result<T, CallFailure> {
        match answer {
            Answer::Value(value) => {
                if remember {
                    self.remember(instance, value.clone(), keep_for);
                }
                Ok(value)
            }
            Answer::Unchanged => {
                let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
                match last.as_mut() {
                    Some(last) if last.instance == instance => {
                        last.kept_for = keep_for.cloned();
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

    /// Remember `value` as `instance`'s answer, kept for `keep_for` if given.
    pub(crate) fn remember(&self, instance: u64, value: T, keep_for: Option<&AssembleContext>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(Last {
            instance,
            value,
            kept_for: keep_for.cloned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_reuses_the_same_instances_value_only() {
        let last = LastAnswer::default();
        assert_eq!(
            last.resolve(1, Answer::Value("a".to_string()), true, None)
                .unwrap(),
            "a"
        );
        assert_eq!(last.resolve(1, Answer::Unchanged, true, None).unwrap(), "a");
        // Another instance (the first was replaced) has no previous answer.
        let stray = last.resolve(2, Answer::Unchanged, true, None).unwrap_err();
        assert_eq!(stray.kind, ProviderErrorKind::InvalidInput);
        assert_eq!(
            last.resolve(2, Answer::Value("b".to_string()), true, None)
                .unwrap(),
            "b"
        );
        assert_eq!(last.resolve(2, Answer::Unchanged, true, None).unwrap(), "b");
        // Not remembered: a 0.1.0 instance never answers "unchanged".
        let plain = LastAnswer::default();
        plain.resolve(3, Answer::Value(7), false, None).unwrap();
        assert!(plain.resolve(3, Answer::Unchanged, false, None).is_err());
    }

    #[test]
    fn a_kept_answer_is_reused_for_its_context_and_instance_only() {
        let last = LastAnswer::default();
        let a = AssembleContext::with_facts([("model", "m1")]);
        let b = AssembleContext::with_facts([("model", "m2")]);
        assert_eq!(last.kept(1, &a), None);
        last.resolve(1, Answer::Value("x".to_string()), true, Some(&a))
            .unwrap();
        assert_eq!(last.kept(1, &a).as_deref(), Some("x"));
        // Another context, or another live instance: call again.
        assert_eq!(last.kept(1, &b), None);
        assert_eq!(last.kept(2, &a), None);
        // An "unchanged" answer without keeping ends the reuse.
        last.resolve(1, Answer::Unchanged, true, None).unwrap();
        assert_eq!(last.kept(1, &a), None);
        // And one that keeps it for the new context starts it again.
        last.resolve(1, Answer::Unchanged, true, Some(&b)).unwrap();
        assert_eq!(last.kept(1, &b).as_deref(), Some("x"));
        assert_eq!(last.kept(1, &a), None);
    }
}
