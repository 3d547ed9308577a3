//! gRPC-style retry throttling (gRFC A6): one test per rule, and a model check.

use backstop_core::{AttemptOutcome, Budget, BudgetConfigError, Instant, TokenBucket};
use proptest::prelude::*;

const NOW: Instant = Instant::ZERO;
const CAUSE: AttemptOutcome = AttemptOutcome::Response(503);

#[test]
fn bucket_starts_full_and_allows_retries() {
    let b = TokenBucket::new(10, 100).unwrap();
    assert_eq!(b.tokens_milli(), 10_000);
    assert_eq!(b.max_tokens(), 10);
    assert!(b.try_retry(NOW, CAUSE));
}

#[test]
fn retry_is_allowed_only_while_tokens_exceed_half() {
    let b = TokenBucket::new(10, 100).unwrap();
    for _ in 0..4 {
        b.on_attempt_end(NOW, false);
    }
    assert!(b.try_retry(NOW, CAUSE), "6 tokens > 5");
    b.on_attempt_end(NOW, false);
    assert!(!b.try_retry(NOW, CAUSE), "5 tokens is not more than 5");
}

#[test]
fn asking_for_a_retry_spends_nothing() {
    let b = TokenBucket::new(10, 100).unwrap();
    for _ in 0..100 {
        assert!(b.try_retry(NOW, CAUSE));
    }
    assert_eq!(b.tokens_milli(), 10_000);
}

#[test]
fn success_adds_token_ratio_up_to_max() {
    let b = TokenBucket::new(10, 250).unwrap();
    b.on_attempt_end(NOW, false);
    b.on_attempt_end(NOW, true);
    assert_eq!(b.tokens_milli(), 9_250);
    for _ in 0..10 {
        b.on_attempt_end(NOW, true);
    }
    assert_eq!(b.tokens_milli(), 10_000);
}

#[test]
fn failures_never_take_the_bucket_below_zero() {
    let b = TokenBucket::new(3, 100).unwrap();
    for _ in 0..10 {
        b.on_attempt_end(NOW, false);
    }
    assert_eq!(b.tokens_milli(), 0);
}

#[test]
fn invalid_configuration_is_an_error() {
    assert_eq!(
        TokenBucket::new(0, 100).err(),
        Some(BudgetConfigError::MaxTokensOutOfRange(0))
    );
    assert_eq!(
        TokenBucket::new(10, 0).err(),
        Some(BudgetConfigError::ZeroTokenRatio)
    );
}

proptest! {
    #[test]
    fn tokens_stay_within_bounds_and_follow_the_model(
        max in 1u32..2_000,
        ratio in 1u32..5_000,
        outcomes in proptest::collection::vec(any::<bool>(), 0..500),
    ) {
        let b = TokenBucket::new(max, ratio).unwrap();
        let max_milli = u64::from(max) * 1_000;
        let mut model = max_milli;
        for success in outcomes {
            b.on_attempt_end(NOW, success);
            model = if success {
                (model + u64::from(ratio)).min(max_milli)
            } else {
                model.saturating_sub(1_000)
            };
            prop_assert!(b.tokens_milli() <= max_milli);
            prop_assert_eq!(b.tokens_milli(), model);
            prop_assert_eq!(b.try_retry(NOW, CAUSE), model * 2 > max_milli);
        }
    }
}
