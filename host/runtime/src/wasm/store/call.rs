//! The state of one call into a plugin: its deadline, its caller's signal, what it handed to
//! the host, and what stopped it. Begun whole at the start of every call, so nothing of one
//! call can leak into the next.

use std::time::{Duration, Instant};

use crate::prompt::CancelToken;
use crate::wasm::answers::KeepAsked;

/// One call's bookkeeping (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct CallState {
    /// The wall-clock deadline of the running call (`None` between calls).
    pub(crate) deadline: Option<Instant>,
    /// The running call's time budget (for messages).
    pub(crate) timeout: Duration,
    /// Set by the epoch callback when the deadline passed.
    pub(crate) timed_out: bool,
    /// The running call's assembly signal: the caller may cancel it.
    pub(crate) signal: Option<CancelToken>,
    /// Set when the call was interrupted because the signal was cancelled.
    pub(crate) cancelled: bool,
    /// When this call first saw its signal cancelled.
    pub(crate) cancel_seen: Option<Instant>,
    /// Bytes the running call handed to the host through imports.
    pub(crate) bytes: usize,
    /// Set when an import refused data over the output budget.
    pub(crate) over_budget: Option<String>,
    /// What the running call asked about reusing its answer (`control.keep-until-context-
    /// changes`, contract 0.2.0; `freshness.keep-for`, 0.3.0).
    pub(crate) keep: KeepAsked,
}

impl CallState {
    /// The state of a call starting now, with `timeout` and the caller's `signal`.
    pub(crate) fn begin(timeout: Duration, signal: Option<CancelToken>) -> Self {
        Self {
            deadline: Some(Instant::now() + timeout),
            timeout,
            signal,
            ..Self::default()
        }
    }

    /// Whether the running call must stop now: its deadline passed (sets `timed_out`) or its
    /// signal was cancelled (sets `cancelled`) more than `grace` ago — the time a plugin that
    /// can see the cancellation (contract 0.2.0, `control.cancelled`) gets to stop on its
    /// own. Checked at every epoch tick and in host work done on the guest's behalf.
    pub(crate) fn must_stop(&mut self, grace: Duration) -> bool {
        if self.signal.as_ref().is_some_and(|s| s.is_cancelled()) {
            let seen = *self.cancel_seen.get_or_insert_with(Instant::now);
            if seen.elapsed() >= grace {
                self.cancelled = true;
                return true;
            }
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out = true;
            return true;
        }
        false
    }

    /// The call ended: no deadline, no signal (what the call found stays for its report).
    pub(crate) fn end(&mut self) {
        self.deadline = None;
        self.signal = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_begins_with_nothing_of_the_last_one() {
        let mut call = CallState::begin(Duration::from_millis(5), None);
        call.bytes = 10;
        call.keep.until_context_changes();
        call.keep.for_duration(Duration::from_secs(1));
        call.over_budget = Some("x".into());
        call.timed_out = true;
        let next = CallState::begin(Duration::from_millis(7), None);
        assert_eq!(next.bytes, 0);
        assert_eq!(next.keep, KeepAsked::default());
        assert!(!next.timed_out && !next.cancelled);
        assert!(next.over_budget.is_none() && next.cancel_seen.is_none());
        assert_eq!(next.timeout, Duration::from_millis(7));
    }

    #[test]
    fn a_cancel_stops_the_call_after_the_grace() {
        let signal = CancelToken::new();
        let mut call = CallState::begin(Duration::from_secs(60), Some(signal.clone()));
        assert!(!call.must_stop(Duration::ZERO));
        signal.cancel();
        assert!(!call.must_stop(Duration::from_secs(60)));
        assert!(call.must_stop(Duration::ZERO));
        assert!(call.cancelled && !call.timed_out);
        let mut late = CallState::begin(Duration::ZERO, None);
        assert!(late.must_stop(Duration::ZERO));
        assert!(late.timed_out);
    }
}
