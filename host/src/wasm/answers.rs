//! The last value each dynamic entry answered, so a 0.2.0 plugin can answer "unchanged" and
//! the host re-uses it without copying anything out of the guest.
//!
//! A value is remembered together with the instance that gave it: "unchanged" refers to that
//! instance's previous answer, so after the instance is replaced (a trap, a deadline) the
//! first answer must be a value again, and a stray "unchanged" fails the call.

use std::sync::{Mutex, PoisonError};

use super::contract::Answer;
use super::instance::CallFailure;
use crate::prompt::ProviderErrorKind;

/// One entry's last answer: (instance id, value).
pub(crate) struct LastAnswer<T>(Mutex<Option<(u64, T)>>);

impl<T> Default for LastAnswer<T> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<T: Clone> LastAnswer<T> {
    /// The value `answer` stands for, from `instance`. A value is remembered when
    /// `remember` (the instance can answer "unchanged" later: contract 0.2.0).
    pub(crate) fn resolve(
        &self,
        instance: u64,
        answer: Answer<T>,
        remember: bool,
    ) -> Result<T, CallFailure> {
        match answer {
            Answer::Value(value) => {
                if remember {
                    self.remember(instance, value.clone());
                }
                Ok(value)
            }
            Answer::Unchanged => {
                let last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
                match last.as_ref() {
                    Some((id, value)) if *id == instance => Ok(value.clone()),
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

    /// Remember `value` as `instance`'s answer.
    pub(crate) fn remember(&self, instance: u64, value: T) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((instance, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_reuses_the_same_instances_value_only() {
        let last = LastAnswer::default();
        assert_eq!(
            last.resolve(1, Answer::Value("a".to_string()), true)
                .unwrap(),
            "a"
        );
        assert_eq!(last.resolve(1, Answer::Unchanged, true).unwrap(), "a");
        // Another instance (the first was replaced) has no previous answer.
        let stray = last.resolve(2, Answer::Unchanged, true).unwrap_err();
        assert_eq!(stray.kind, ProviderErrorKind::InvalidInput);
        assert_eq!(
            last.resolve(2, Answer::Value("b".to_string()), true)
                .unwrap(),
            "b"
        );
        assert_eq!(last.resolve(2, Answer::Unchanged, true).unwrap(), "b");
        // Not remembered: a 0.1.0 instance never answers "unchanged".
        let plain = LastAnswer::default();
        plain.resolve(3, Answer::Value(7), false).unwrap();
        assert!(plain.resolve(3, Answer::Unchanged, false).is_err());
    }
}
