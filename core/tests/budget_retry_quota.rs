//! The AWS-style retry quota: one test per rule, and a model check.

use backstop_core::{AttemptError, AttemptOutcome, Budget, ErrorKind, Instant, RetryQuota};
use proptest::prelude::*;

const NOW: Instant = Instant::ZERO;
const STATUS: AttemptOutcome = AttemptOutcome::Response(503);

fn timeout() -> AttemptOutcome {
    AttemptOutcome::Error(AttemptError::new(ErrorKind::Timeout))
}

#[test]
fn standard_quota_is_500_tokens() {
    let q = RetryQuota::new();
    assert_eq!((q.capacity(), q.available()), (500, 500));
}

#[test]
fn a_retry_costs_5_and_a_timeout_retry_costs_10() {
    let q = RetryQuota::new();
    assert_eq!(q.cost(STATUS), 5);
    assert_eq!(q.cost(timeout()), 10);
    assert_eq!(
        q.cost(AttemptOutcome::Error(AttemptError::new(
            ErrorKind::ConnectTimeout
        ))),
        10
    );
    assert_eq!(
        q.cost(AttemptOutcome::Error(AttemptError::new(
            ErrorKind::ConnectionReset
        ))),
        5
    );
    assert!(q.try_retry(NOW, STATUS));
    assert!(q.try_retry(NOW, timeout()));
    assert_eq!(q.available(), 485);
}

#[test]
fn standard_quota_allows_100_retries_in_an_outage() {
    let q = RetryQuota::new();
    let allowed = (0..1_000).filter(|_| q.try_retry(NOW, STATUS)).count();
    assert_eq!(allowed, 100);
    assert_eq!(q.available(), 0);
}

#[test]
fn a_retry_the_quota_cannot_cover_is_denied_and_spends_nothing() {
    let q = RetryQuota::new().with_capacity(7);
    assert!(!q.try_retry(NOW, timeout()));
    assert_eq!(q.available(), 7);
    assert!(q.try_retry(NOW, STATUS));
    assert!(!q.try_retry(NOW, STATUS));
    assert_eq!(q.available(), 2);
}

#[test]
fn success_refunds_1_up_to_capacity_and_failure_refunds_nothing() {
    let q = RetryQuota::new();
    assert!(q.try_retry(NOW, STATUS));
    q.on_attempt_end(NOW, false);
    assert_eq!(q.available(), 495);
    q.on_attempt_end(NOW, true);
    assert_eq!(q.available(), 496);
    for _ in 0..10 {
        q.on_attempt_end(NOW, true);
    }
    assert_eq!(q.available(), 500);
}

#[test]
fn every_number_is_configurable() {
    let q = RetryQuota::new()
        .with_capacity(100)
        .with_retry_cost(20)
        .with_timeout_cost(50)
        .with_success_refund(3);
    assert!(q.try_retry(NOW, timeout()));
    assert!(q.try_retry(NOW, STATUS));
    q.on_attempt_end(NOW, true);
    assert_eq!(q.available(), 33);
}

proptest! {
    #[test]
    fn quota_stays_within_bounds_and_follows_the_model(
        capacity in 0u32..1_000,
        cost in 0u32..20,
        timeout_cost in 0u32..40,
        refund in 0u32..10,
        steps in proptest::collection::vec(0u8..3, 0..500),
    ) {
        let q = RetryQuota::new()
            .with_capacity(capacity)
            .with_retry_cost(cost)
            .with_timeout_cost(timeout_cost)
            .with_success_refund(refund);
        let mut model = capacity;
        for step in steps {
            match step {
                0 => {
                    let allowed = q.try_retry(NOW, STATUS);
                    prop_assert_eq!(allowed, model >= cost);
                    if allowed { model -= cost; }
                }
                1 => {
                    let allowed = q.try_retry(NOW, timeout());
                    prop_assert_eq!(allowed, model >= timeout_cost);
                    if allowed { model -= timeout_cost; }
                }
                _ => {
                    q.on_attempt_end(NOW, true);
                    model = (model + refund).min(capacity);
                }
            }
            prop_assert!(q.available() <= capacity);
            prop_assert_eq!(q.available(), model);
        }
    }
}
