//! The rules each decision is checked against, written from the rules themselves (RFC 9110
//! and the policy's documented bounds), never from the machine's own formulas.

use core::time::Duration;

use backstop_core::{
    AttemptOutcome, Decision, DelaySource, ErrorClass, Outcome, RetryAfterAboveMax, SendReason,
    StopReason,
};

use super::model::Model;

impl Model {
    pub(crate) fn check_send(&self, attempt: u32, timeout: Duration, reason: SendReason) {
        assert!(
            self.in_flight.is_none(),
            "a send while an attempt is in flight"
        );
        assert_eq!(attempt, self.sends + 1, "Send names the next attempt");
        assert!(
            attempt <= self.policy.max_attempts(),
            "attempt {attempt} beyond max_attempts {}",
            self.policy.max_attempts()
        );
        assert!(
            attempt <= self.worst.attempts,
            "attempt {attempt} beyond the worst case"
        );
        assert!(self.now < self.deadline, "a send at or after the deadline");
        assert!(!timeout.is_zero(), "an attempt with no time at all");
        assert!(
            timeout <= self.policy.attempt_timeout(),
            "timeout above attempt_timeout"
        );
        assert!(
            self.now.saturating_add(timeout) <= self.deadline,
            "an attempt's timeout ends past the deadline"
        );
        assert!(
            self.may_send_again,
            "a non-idempotent request would be sent again"
        );
        match reason {
            SendReason::First => assert_eq!(self.sends, 0, "only the first send is First"),
            SendReason::Retry(cause) => {
                assert!(self.sends > 0, "a retry before any attempt");
                assert_eq!(
                    Some(cause),
                    self.last,
                    "a retry names the attempt it follows"
                );
            }
            SendReason::RetryAtOnce(wait) => {
                assert!(self.sends > 0, "a retry before any attempt");
                assert_eq!(
                    wait.cause, self.last,
                    "a retry names the attempt it follows"
                );
                assert_eq!(wait.next_attempt, attempt, "the wait names its attempt");
                // A zero wait obeys the same rules as any other.
                self.check_wait_source(Duration::ZERO, wait.source);
            }
            _ => panic!("a send reason this checker does not know: {reason:?}"),
        }
    }

    pub(super) fn check_wait_source(&self, delay: Duration, source: DelaySource) {
        let max = self.policy.max_retry_after();
        match source {
            DelaySource::Backoff => {
                assert_eq!(self.floor, None, "backoff despite a usable Retry-After");
                assert!(
                    delay <= self.policy.backoff().cap(),
                    "backoff above its cap"
                );
            }
            DelaySource::RetryAfter | DelaySource::RateLimitReset => {
                assert_eq!(
                    source == DelaySource::RateLimitReset,
                    self.floor_from_rate_limit,
                    "{source:?}, yet the floor came from the other field"
                );
                let floor = self
                    .floor
                    .expect("a Retry-After wait follows a Retry-After");
                assert!(floor <= max, "honoured a Retry-After above the ceiling");
                assert!(delay >= floor, "waited less than the server asked");
                assert!(delay <= max, "a Retry-After wait above the ceiling");
                let spread = delay - floor;
                assert!(
                    spread <= self.policy.retry_after_spread(),
                    "spread above the policy's"
                );
                assert!(spread <= floor / 10, "spread above a tenth of the floor");
            }
            DelaySource::RetryAfterClamped | DelaySource::RateLimitResetClamped => {
                assert_eq!(
                    source == DelaySource::RateLimitResetClamped,
                    self.floor_from_rate_limit,
                    "{source:?}, yet the floor came from the other field"
                );
                let floor = self.floor.expect("a clamped wait follows a Retry-After");
                assert!(floor > max, "clamped a Retry-After below the ceiling");
                assert_eq!(
                    self.policy.retry_after_above_max(),
                    RetryAfterAboveMax::Clamp,
                    "clamped although the policy gives up"
                );
                assert_eq!(delay, max, "a clamped wait is the ceiling");
            }
            DelaySource::OriginPaused | DelaySource::RateLimited => {
                // Checked against the object's answer by the overload oracle.
                assert_eq!(
                    self.paused.source(source),
                    Some(true),
                    "{source:?} from a machine that consults no such object ({:?})",
                    self.paused
                );
                assert!(!delay.is_zero(), "a held-back attempt is not sent at once");
            }
            _ => panic!("a delay source this checker does not know: {source:?}"),
        }
    }

    pub(super) fn check_outcome(&self, d: &Decision, o: &Outcome) {
        assert_eq!(o.attempts, self.sends, "outcome attempts");
        let retry_after = match o.last {
            Some(AttemptOutcome::Response(_)) => self.retry_after,
            _ => None,
        };
        assert_eq!(
            o.retry_after, retry_after,
            "the outcome carries the last response's Retry-After"
        );
        assert_eq!(
            o.last, self.last,
            "the outcome must carry the last response or error"
        );
        assert!(
            o.elapsed <= self.now.saturating_duration_since(self.start),
            "elapsed beyond the time seen"
        );
        let returns_response =
            matches!(o.last, Some(AttemptOutcome::Response(_))) && o.reason != StopReason::Aborted;
        assert_eq!(
            matches!(d, Decision::Return(_)),
            returns_response,
            "Return exactly when a response is handed back: {d:?}"
        );
        let last_class = match o.last {
            Some(AttemptOutcome::Error(e)) => Some(e.class),
            _ => None,
        };
        let may_retry = self.may_retry();
        match o.reason {
            StopReason::FinalStatus => assert!(
                matches!(o.last, Some(AttemptOutcome::Response(_)) if !self.last_retryable),
                "FinalStatus for a retryable status: {o:?}"
            ),
            StopReason::PermanentError => {
                assert_eq!(last_class, Some(ErrorClass::Permanent), "{o:?}");
            }
            StopReason::NotIdempotent | StopReason::NoIdempotencyKey => {
                assert!(
                    !may_retry,
                    "{:?} for a request the policy retries",
                    o.reason
                );
                assert_eq!(o.reason, self.refusal(), "the reason names the refusal");
                assert_ne!(
                    last_class,
                    Some(ErrorClass::NotSent),
                    "NotSent is always safe"
                );
            }
            StopReason::Attempts => {
                assert_eq!(self.sends, self.policy.max_attempts(), "Attempts too early");
            }
            StopReason::Deadline => {}
            StopReason::RetryAfterAboveMax => {
                assert!(
                    self.floor
                        .is_some_and(|f| f > self.policy.max_retry_after()),
                    "RetryAfterAboveMax without a Retry-After above the ceiling"
                );
                assert_eq!(
                    self.policy.retry_after_above_max(),
                    RetryAfterAboveMax::GiveUp,
                    "gave up although the policy clamps"
                );
            }
            StopReason::Aborted => assert!(
                self.aborted || last_class == Some(ErrorClass::Aborted),
                "Aborted without an abort"
            ),
            StopReason::Budget => panic!("the unlimited budget denied a retry"),
            StopReason::BodyNotReplayable => assert!(
                !self.request.has_replayable_body,
                "BodyNotReplayable for a body that can be sent again"
            ),
            // Checked against the object's answer by the overload oracle.
            StopReason::OriginPaused | StopReason::RateLimited => assert_eq!(
                self.paused.reason(o.reason),
                Some(true),
                "{:?} from a machine that consults no such object ({:?})",
                o.reason,
                self.paused
            ),
            reason => panic!("a stop reason this checker does not know: {reason:?}"),
        }
    }

    /// Checks the decision `d` that follows an attempt that ended with `cause` at `self.now`,
    /// from the rules alone (the policy's documented semantics): which stop reasons apply, whether one of
    /// them must stop the operation at once (a wait that cannot lead to a retry is not waited),
    /// and that nothing stops it when none applies. The order in which the machine tests the
    /// rules is its own business: any applicable reason is accepted.
    pub(super) fn check_after_attempt(&self, cause: AttemptOutcome, d: &Decision) {
        let (forced, allowed) = self.stop_reasons_after(cause);
        match d.outcome() {
            Some(o) => assert!(
                allowed.contains(&o.reason),
                "after {cause:?} the machine stopped with {:?}; the rules allow {allowed:?}",
                o.reason
            ),
            None => assert!(
                !forced,
                "after {cause:?} the machine must stop ({allowed:?}), but decided {d:?}"
            ),
        }
    }

    /// The stop reasons that apply after an attempt ended with `cause`, and whether one of
    /// them certainly applies (the operation must stop now).
    pub(super) fn stop_reasons_after(&self, cause: AttemptOutcome) -> (bool, Vec<StopReason>) {
        let mut allowed = Vec::new();
        let mut forced = false;
        let maybe_sent = match cause {
            AttemptOutcome::Response(_) => {
                if !self.last_retryable {
                    return (true, vec![StopReason::FinalStatus]);
                }
                true
            }
            AttemptOutcome::Error(e) => match e.class {
                ErrorClass::Aborted => return (true, vec![StopReason::Aborted]),
                ErrorClass::Permanent => return (true, vec![StopReason::PermanentError]),
                ErrorClass::NotSent => false,
                _ => true,
            },
        };
        if !self.request.has_replayable_body {
            // The body went with the attempt: nothing can be sent again, whatever the rest.
            return (true, vec![StopReason::BodyNotReplayable]);
        }
        if maybe_sent && !self.may_retry() {
            allowed.push(self.refusal());
            forced = true;
        }
        if self.sends >= self.policy.max_attempts() {
            allowed.push(StopReason::Attempts);
            forced = true;
        }
        let max = self.policy.max_retry_after();
        // The shortest and longest wait the rules allow before the next attempt.
        let (shortest, longest) = match self.floor {
            Some(f) if f > max => {
                if self.policy.retry_after_above_max() == RetryAfterAboveMax::Clamp {
                    (max, max)
                } else {
                    allowed.push(StopReason::RetryAfterAboveMax);
                    forced = true;
                    (max, max)
                }
            }
            // The spread is the client's own: it never costs a retry that the server's value
            // allows, so only the value itself decides against the deadline.
            Some(f) => (f, f),
            None => (Duration::ZERO, self.policy.backoff().cap()),
        };
        if self.now.saturating_add(longest) >= self.deadline {
            allowed.push(StopReason::Deadline);
            if self.now.saturating_add(shortest) >= self.deadline {
                forced = true;
            }
        }
        // A retry due at once asks the gate and the limiter, which may hold it back past the
        // deadline (the overload oracle checks that against their answers).
        if self.paused.gate {
            allowed.push(StopReason::OriginPaused);
        }
        if self.paused.limiter {
            allowed.push(StopReason::RateLimited);
        }
        (forced, allowed)
    }
}
