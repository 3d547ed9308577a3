//! A retry budget shared across operations.
//!
//! Rule (DESIGN.md "Semantics"; gRPC gRFC A6 retry throttling, the AWS SDKs' retry quota, the
//! Google SRE book): retries across a whole client are capped so that an outage cannot be
//! multiplied by the clients' retries. The machine consults the budget before every retry and
//! informs it of every attempt's result; a denied retry ends the operation with reason
//! [`StopReason::Budget`](crate::StopReason::Budget) and the last response or error.
//!
//! A budget is shared (`&self` methods) and driven only by the `now` the machine passes in.

use crate::decision::AttemptOutcome;
use crate::time::Instant;

/// A retry budget the machine consults. Implementations use interior mutability (atomics) so
/// one budget can be shared by many machines.
pub trait Budget {
    /// A new operation started (its first attempt is about to be sent).
    fn on_operation_start(&self, now: Instant) {
        let _ = now;
    }

    /// Asks to spend on one retry after `cause`. `false` denies the retry.
    fn try_retry(&self, now: Instant, cause: AttemptOutcome) -> bool;

    /// An attempt ended. `success` is `true` when it ended with a non-retryable response (the
    /// server answered; retrying would not change the answer).
    fn on_attempt_end(&self, now: Instant, success: bool) {
        let _ = (now, success);
    }
}

/// No budget: every retry the policy allows is allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Unlimited;

impl Budget for Unlimited {
    fn try_retry(&self, _now: Instant, _cause: AttemptOutcome) -> bool {
        true
    }
}

impl<B: Budget + ?Sized> Budget for &B {
    fn on_operation_start(&self, now: Instant) {
        (**self).on_operation_start(now);
    }
    fn try_retry(&self, now: Instant, cause: AttemptOutcome) -> bool {
        (**self).try_retry(now, cause)
    }
    fn on_attempt_end(&self, now: Instant, success: bool) {
        (**self).on_attempt_end(now, success);
    }
}

#[cfg(feature = "std")]
impl<B: Budget + ?Sized> Budget for std::sync::Arc<B> {
    fn on_operation_start(&self, now: Instant) {
        (**self).on_operation_start(now);
    }
    fn try_retry(&self, now: Instant, cause: AttemptOutcome) -> bool {
        (**self).try_retry(now, cause)
    }
    fn on_attempt_end(&self, now: Instant, success: bool) {
        (**self).on_attempt_end(now, success);
    }
}
