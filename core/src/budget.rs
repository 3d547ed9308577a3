//! A retry budget shared across operations. See [`Budget`] for the rule and the three budgets.

mod ratio;
mod retry_quota;
mod token_bucket;

pub use ratio::RatioBudget;
pub use retry_quota::RetryQuota;
pub use token_bucket::TokenBucket;

use crate::decision::AttemptOutcome;
use crate::event::Response;
use crate::grpc::Pushback;
use crate::status::ResponseClass;
use crate::time::Instant;

/// A retry budget the machine consults. Implementations use interior mutability (atomics) so
/// one budget can be shared by many machines.
///
/// Rule (gRPC gRFC A6 retry throttling, the AWS SDKs' retry quota, the
/// Google SRE book): retries across a whole client are capped so that an outage cannot be
/// multiplied by the clients' retries. The machine consults the budget before every retry and
/// informs it of every attempt's result; a denied retry ends the operation with reason
/// [`StopReason::Budget`](crate::StopReason::Budget) and the last response or error.
///
/// A budget is shared (`&self` methods) and driven only by the `now` the machine passes in.
/// Three budgets ship with core, each `Send + Sync`, lock-free (atomics only) and
/// allocation-free, so one `static` or `Arc` serves every operation of a client:
///
/// | budget | model | allows a retry while | charged | good for |
/// |---|---|---|---|---|
/// | [`TokenBucket`] | gRPC retry throttling (gRFC A6) | tokens > `max_tokens / 2`; a failure costs 1, a success (2xx, 3xx) earns `token_ratio` | per failed attempt, when it ends; a retry itself costs nothing | switching retries off entirely in an outage |
/// | [`RetryQuota`] | the AWS SDKs' standard retry quota | the quota covers the retry's cost (5, or 10 after a timeout); a success (2xx, 3xx) refunds 1 | per retry, when granted; given back if it is never sent | a fixed allowance of retries that refills with successes |
/// | [`RatioBudget`] | Finagle/Envoy/tower budgets, the Google SRE 10% rule | retries in the last `window` stay under `percent` of the operations started in it, plus `min_per_sec` | per retry, when granted; given back if it is never sent | capping amplification at a ratio (about 1.1x for 10%) |
///
/// Only retries actually sent are paid for: the machine asks the budget when it decides to
/// retry (so that a denied retry is not waited for), and when the operation ends before that
/// retry is sent (an abort during the wait, a deadline reached before the send) it gives the
/// grant back ([`Budget::on_retry_cancelled`]). A machine dropped mid-wait without an abort
/// keeps the charge: drivers report [`Event::Abort`](crate::Event::Abort) on cancellation.
///
/// ```
/// use backstop_core::{Decision, Event, Instant, Method, Policy, RatioBudget, Request, Response,
///                RetryMachine, StopReason};
/// use core::time::Duration;
/// use rand_core::SeedableRng;
///
/// // At most 10% retries over a 10 s window, and no minimum rate.
/// static BUDGET: RatioBudget = match RatioBudget::new(10, 0, Duration::from_secs(10)) {
///     Ok(b) => b,
///     Err(_) => panic!("valid budget"),
/// };
///
/// let policy = Policy::builder().max_attempts(4).build()?;
/// let now = Instant::ZERO;
/// let mut attempts = 0;
/// // A full outage: every attempt fails with 503.
/// for op in 0..20u64 {
///     let rng = rand_pcg::Pcg64Mcg::seed_from_u64(op);
///     let mut m = RetryMachine::with_budget(policy, Request::new(Method::Get), rng, &BUDGET, now);
///     loop {
///         match m.poll(now) {
///             Decision::Send { .. } => {
///                 m.handle(now, Event::AttemptStarted)?;
///                 m.handle(now, Event::Response(Response::new(503).retry_after(b"0")))?;
///             }
///             Decision::Return(o) | Decision::GiveUp(o) => {
///                 assert_eq!(o.reason, StopReason::Budget);
///                 attempts += o.attempts;
///                 break;
///             }
///             _ => unreachable!("no waits: Retry-After is 0 and time stands still"),
///         }
///     }
/// }
/// // 20 operations earn 2 retries (10% of 20); without the budget they would have made 80
/// // attempts.
/// assert_eq!(attempts, 22);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The budgets are atomics from `portable-atomic`: a [`RatioBudget`] slot is one 64-bit word
/// (its balance and the low 16 bits of its slot number, beside a running total and the full
/// newest slot number), so an expired balance stays expired however long the process runs. They
/// are lock-free where the target has 64-bit atomics (x86_64, aarch64); on targets without them
/// (thumbv7em, riscv32imc) `portable-atomic` falls back to a small table of spinlocks; on targets
/// without compare-and-swap at all, enable this crate's `critical-section` feature and provide a
/// `critical-section` implementation.
pub trait Budget {
    /// A new operation started (its first attempt is about to be sent).
    fn on_operation_start(&self, now: Instant) {
        let _ = now;
    }

    /// Asks to spend on one retry after `cause`. `false` denies the retry.
    fn try_retry(&self, now: Instant, cause: AttemptOutcome) -> bool;

    /// A retry this budget granted at `granted_at` (a `try_retry` that returned `true`) was
    /// never sent: the operation was aborted during its wait, or reached its deadline before
    /// the send. A budget that charged the retry gives the charge back, so that only retries
    /// actually sent are paid for. Called at most once per granted retry, at `now`.
    fn on_retry_cancelled(&self, now: Instant, granted_at: Instant, cause: AttemptOutcome) {
        let _ = (now, granted_at, cause);
    }

    /// An attempt ended with a success or a failure. `success` is `true` for a 2xx or 3xx
    /// answer the policy does not retry, `false` for a retryable status or a transient error
    /// (a timeout, a reset connection, a request not sent).
    ///
    /// Not reported: an answer that is final without being a success (a 400, a 404, a 501
    /// the policy does not retry), the caller's own abort and permanent errors (a bad URL, a
    /// rejected certificate). Retrying would not change them, and they are not the server
    /// succeeding either: the AWS SDKs' quota refunds only a 2xx, and gRPC's retry throttling
    /// leaves its tokens unchanged on a status it does not retry.
    fn on_attempt_end(&self, now: Instant, success: bool) {
        let _ = (now, success);
    }
}

/// What an attempt that ended with `status` reports to [`Budget::on_attempt_end`]: a failure
/// if it is `retryable`, a success if it is a 2xx or 3xx (a 1xx is never final), nothing if it
/// is a final 4xx or 5xx, or of the class [`ResponseClass::FinalError`]. Both machines report through this one rule.
///
/// A final error whose gRPC pushback says not to retry is a failure too (gRFC A6: an RPC that
/// receives "a pushback response indicating not to retry" counts as failed for throttling).
pub(crate) fn response_success(response: &Response<'_>, retryable: bool) -> Option<bool> {
    let success = response.status < 400 && !matches!(response.class, ResponseClass::FinalError);
    if retryable || (!success && matches!(response.pushback, Some(Pushback::Stop))) {
        Some(false)
    } else if success {
        Some(true)
    } else {
        None
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

/// A shared pointer to a budget is the budget: every call goes to the one it points to.
macro_rules! budget_through_pointer {
    ($(#[$attr:meta])* $pointer:ty) => {
        $(#[$attr])*
        impl<B: Budget + ?Sized> Budget for $pointer {
            fn on_operation_start(&self, now: Instant) {
                (**self).on_operation_start(now);
            }
            fn try_retry(&self, now: Instant, cause: AttemptOutcome) -> bool {
                (**self).try_retry(now, cause)
            }
            fn on_retry_cancelled(&self, now: Instant, granted_at: Instant, cause: AttemptOutcome) {
                (**self).on_retry_cancelled(now, granted_at, cause);
            }
            fn on_attempt_end(&self, now: Instant, success: bool) {
                (**self).on_attempt_end(now, success);
            }
        }
    };
}

budget_through_pointer!(&B);
budget_through_pointer!(#[cfg(feature = "std")] std::sync::Arc<B>);

/// Why a budget could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetConfigError {
    /// [`TokenBucket`]: `max_tokens` was zero or above 1,000,000.
    MaxTokensOutOfRange(u32),
    /// [`TokenBucket`]: `token_ratio` was zero (the bucket could never refill).
    ZeroTokenRatio,
    /// [`RatioBudget`]: the percentage was above 10,000 (100 retries per operation).
    PercentOutOfRange(u32),
    /// [`RatioBudget`]: the window was shorter than its slot count in nanoseconds, or longer
    /// than a day.
    WindowOutOfRange,
}

impl core::fmt::Display for BudgetConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BudgetConfigError::MaxTokensOutOfRange(n) => {
                write!(f, "max_tokens {n} is outside 1..=1000000")
            }
            BudgetConfigError::ZeroTokenRatio => {
                f.write_str("token_ratio must be greater than zero")
            }
            BudgetConfigError::PercentOutOfRange(p) => {
                write!(f, "retry percentage {p} is outside 0..=10000")
            }
            BudgetConfigError::WindowOutOfRange => {
                f.write_str("the budget window must be between 1 microsecond and 1 day")
            }
        }
    }
}

impl core::error::Error for BudgetConfigError {}
