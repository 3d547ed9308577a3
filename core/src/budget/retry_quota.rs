//! The AWS SDKs' retry quota: a fixed allowance of retries that successes slowly refill.
//!
//! Rule (AWS SDKs and Tools reference guide, "Retry behavior", standard mode): the quota starts
//! at 500; a retry costs 5, a retry after a timeout 10; a retry the quota cannot cover is not
//! made; every successful attempt refunds 1, up to the starting amount. Every number is
//! configurable. The quota never leaves `[0, capacity]`.
//!
//! A success is a 2xx or 3xx answer. A final answer that is not one (a 400, a 404) refunds
//! nothing, as in botocore, which refunds on a 2xx only; backstop also refunds on a 3xx (a 304
//! answers a conditional request; the AWS APIs do not answer 3xx to the SDKs).
//!
//! Charged when the machine grants a retry; a granted retry that is never sent (the operation
//! was aborted during its wait, or reached its deadline first) gives its whole cost back, so
//! the quota pays only for retries actually sent.
//!
//! One simplification: the SDKs refund a successful *retry* its whole cost and a successful
//! first attempt 1; backstop's [`Budget`] hook does not say which attempt succeeded, so every
//! success refunds `success_refund`.

use core::sync::atomic::Ordering;

use portable_atomic::AtomicU32;

use super::Budget;
use crate::classify::{ErrorClass, ErrorKind};
use crate::decision::AttemptOutcome;
use crate::time::Instant;

/// An AWS-style retry quota. Shared by reference (`&RetryQuota` and `Arc<RetryQuota>` are
/// budgets); lock-free.
///
/// ```
/// use backstop_core::{AttemptError, AttemptOutcome, Budget, ErrorKind, Instant, RetryQuota};
///
/// let quota = RetryQuota::new().with_capacity(12);
/// let now = Instant::ZERO;
/// assert!(quota.try_retry(now, AttemptOutcome::Response(503))); // 12 -> 7
/// let timeout = AttemptOutcome::Error(AttemptError::new(ErrorKind::Timeout));
/// assert!(!quota.try_retry(now, timeout)); // a timeout retry costs 10
/// quota.on_attempt_end(now, true); // a success refunds 1: 8
/// assert!(quota.try_retry(now, AttemptOutcome::Response(503))); // 8 -> 3
/// assert_eq!(quota.available(), 3);
/// ```
#[derive(Debug)]
pub struct RetryQuota {
    capacity: u32,
    retry_cost: u32,
    timeout_cost: u32,
    success_refund: u32,
    available: AtomicU32,
}

impl RetryQuota {
    /// The SDKs' standard quota: 500, a retry costs 5, a timeout retry 10, a success refunds 1.
    #[must_use]
    pub const fn new() -> Self {
        RetryQuota {
            capacity: 500,
            retry_cost: 5,
            timeout_cost: 10,
            success_refund: 1,
            available: AtomicU32::new(500),
        }
    }

    /// The quota's starting and largest amount (default 500). The quota starts full.
    #[must_use]
    pub const fn with_capacity(mut self, capacity: u32) -> Self {
        self.capacity = capacity;
        self.available = AtomicU32::new(capacity);
        self
    }

    /// What a retry costs (default 5).
    #[must_use]
    pub const fn with_retry_cost(mut self, cost: u32) -> Self {
        self.retry_cost = cost;
        self
    }

    /// What a retry after a timeout costs (default 10).
    #[must_use]
    pub const fn with_timeout_cost(mut self, cost: u32) -> Self {
        self.timeout_cost = cost;
        self
    }

    /// What a successful attempt refunds (default 1).
    #[must_use]
    pub const fn with_success_refund(mut self, refund: u32) -> Self {
        self.success_refund = refund;
        self
    }

    /// The quota's largest amount.
    #[must_use]
    pub const fn capacity(&self) -> u32 {
        self.capacity
    }

    /// What is left of the quota now.
    #[must_use]
    pub fn available(&self) -> u32 {
        self.available.load(Ordering::Relaxed)
    }

    /// What a retry after `cause` costs.
    #[must_use]
    pub const fn cost(&self, cause: AttemptOutcome) -> u32 {
        match cause {
            AttemptOutcome::Error(e)
                if matches!(e.class, ErrorClass::Timeout)
                    || matches!(e.kind, ErrorKind::Timeout | ErrorKind::ConnectTimeout) =>
            {
                self.timeout_cost
            }
            _ => self.retry_cost,
        }
    }
}

impl Default for RetryQuota {
    fn default() -> Self {
        RetryQuota::new()
    }
}

impl Budget for RetryQuota {
    fn try_retry(&self, _now: Instant, cause: AttemptOutcome) -> bool {
        let cost = self.cost(cause);
        // One compare-and-swap loop: the check and the spend are a single atomic step, so two
        // threads can never both spend the last tokens.
        self.available
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |a| {
                a.checked_sub(cost)
            })
            .is_ok()
    }

    fn on_retry_cancelled(&self, _now: Instant, _granted_at: Instant, cause: AttemptOutcome) {
        let (cost, capacity) = (self.cost(cause), self.capacity);
        let _ = self
            .available
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |a| {
                Some(a.saturating_add(cost).min(capacity))
            });
    }

    fn on_attempt_end(&self, _now: Instant, success: bool) {
        if !success {
            return;
        }
        let (refund, capacity) = (self.success_refund, self.capacity);
        let _ = self
            .available
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |a| {
                Some(a.saturating_add(refund).min(capacity))
            });
    }
}
