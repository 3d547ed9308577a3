//! The machine and its budget: a denied retry ends the operation with the last outcome and
//! reason "budget", and never sends.

use core::time::Duration;

use backstop_core::{
    Backoff, Decision, Event, Instant, Jitter, Method, Policy, Request, Response, RetryMachine,
    RetryQuota, StopReason, TokenBucket,
};
use proptest::prelude::*;
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

fn policy(max_attempts: u32) -> Policy {
    Policy::builder()
        .max_attempts(max_attempts)
        .backoff(Backoff::constant(Duration::from_millis(10)))
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

/// Drives one operation to its end; `statuses` answers each attempt in turn (then 200).
/// Returns the decisions' send count and the final decision.
fn drive<B: backstop_core::Budget>(
    policy: Policy,
    budget: B,
    now: &mut Instant,
    statuses: &[u16],
) -> (u32, Decision) {
    let mut m = RetryMachine::with_budget(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(1),
        budget,
        *now,
    );
    let mut sends = 0u32;
    let mut answers = statuses.iter().copied();
    for _ in 0..1_000 {
        match m.poll(*now) {
            Decision::Send { .. } => {
                sends += 1;
                m.handle(*now, Event::AttemptStarted).unwrap();
                let status = answers.next().unwrap_or(200);
                *now = now.saturating_add(Duration::from_millis(1));
                m.handle(*now, Event::Response(Response::new(status)))
                    .unwrap();
            }
            Decision::Wait { until, .. } => *now = until,
            d @ (Decision::Return(_) | Decision::GiveUp(_)) => {
                // A terminal decision repeats and never turns into a send.
                assert_eq!(m.poll(*now), d);
                return (sends, d);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("the operation did not end");
}

#[test]
fn denied_retry_returns_the_last_response_with_reason_budget() {
    let quota = RetryQuota::new().with_capacity(5);
    let mut now = Instant::ZERO;
    let (sends, d) = drive(policy(4), &quota, &mut now, &[503, 502, 503]);
    assert_eq!(sends, 2, "one retry paid for, the second denied");
    let Decision::Return(o) = d else {
        panic!("expected Return, got {d:?}")
    };
    assert_eq!(o.reason, StopReason::Budget);
    assert_eq!(o.last, Some(backstop_core::AttemptOutcome::Response(502)));
    assert_eq!(quota.available(), 0);
}

#[test]
fn budget_is_informed_of_every_attempt() {
    // gRPC bucket of 4: each failed attempt takes a token.
    let bucket = TokenBucket::new(4, 1_000).unwrap();
    let mut now = Instant::ZERO;
    let (sends, _) = drive(policy(10), &bucket, &mut now, &[503, 503, 503, 503]);
    // 4 -> 3 (retry: 3 > 2) -> 2 (denied: 2 is not more than 2).
    assert_eq!(sends, 2);
    assert_eq!(bucket.tokens_milli(), 2_000);
    // A success earns the ratio back.
    let (sends, d) = drive(policy(10), &bucket, &mut now, &[]);
    assert_eq!(sends, 1);
    assert_eq!(d.outcome().map(|o| o.reason), Some(StopReason::FinalStatus));
    assert_eq!(bucket.tokens_milli(), 3_000);
}

proptest! {
    /// Over many operations sharing one quota, the retries sent are exactly the retries the
    /// quota paid for: a denied retry never sends.
    #[test]
    fn a_denied_retry_never_sends(
        capacity in 0u32..60,
        ops in proptest::collection::vec(proptest::collection::vec(
            prop_oneof![Just(200u16), Just(404), Just(500), Just(503)], 0..6), 1..30),
    ) {
        let quota = RetryQuota::new().with_capacity(capacity).with_success_refund(0);
        let mut now = Instant::ZERO;
        let mut retries = 0u32;
        for statuses in &ops {
            let (sends, d) = drive(policy(4), &quota, &mut now, statuses);
            retries += sends - 1;
            let o = d.outcome().copied().unwrap();
            if o.reason == StopReason::Budget {
                // Denied after a retryable status, with attempts left.
                prop_assert!(o.attempts < 4);
                prop_assert!(matches!(o.last, Some(backstop_core::AttemptOutcome::Response(500 | 503))));
            }
        }
        prop_assert_eq!(retries * 5, capacity - quota.available());
    }
}

/// botocore's quota refunds only a 2xx: an operation whose retry ends with a final 400 keeps
/// the retry's cost spent (the server answered, but not with a success).
#[test]
fn a_final_400_refunds_nothing_to_the_retry_quota() {
    let quota = RetryQuota::new();
    let mut now = Instant::ZERO;
    let (sends, _) = drive(policy(4), &quota, &mut now, &[503, 400]);
    assert_eq!(sends, 2);
    assert_eq!(
        quota.available(),
        495,
        "the retry cost 5; the 400 refunds nothing"
    );
    // A 2xx does refund.
    assert_eq!(drive(policy(4), &quota, &mut now, &[200]).0, 1);
    assert_eq!(quota.available(), 496);
}

/// gRPC's throttling leaves the token count unchanged on a status it does not retry: a final
/// 404 (or 501) is neither a success nor a failure for the bucket.
#[test]
fn a_final_404_leaves_the_token_bucket_unchanged() {
    let bucket = TokenBucket::new(10, 100).unwrap();
    let mut now = Instant::ZERO;
    assert_eq!(drive(policy(4), &bucket, &mut now, &[503, 404]).0, 2);
    assert_eq!(
        bucket.tokens_milli(),
        9_000,
        "the 503 took a token; the 404 nothing"
    );
    assert_eq!(drive(policy(4), &bucket, &mut now, &[501]).0, 1);
    assert_eq!(
        bucket.tokens_milli(),
        9_000,
        "a 501 is not retried: nothing"
    );
}

/// A 2xx and a 3xx are the server's successes: the bucket earns its ratio for each.
#[test]
fn a_2xx_or_3xx_answer_is_a_success_for_the_budget() {
    let bucket = TokenBucket::new(10, 100).unwrap();
    let mut now = Instant::ZERO;
    assert_eq!(drive(policy(4), &bucket, &mut now, &[503, 204]).0, 2);
    assert_eq!(bucket.tokens_milli(), 9_100);
    assert_eq!(drive(policy(4), &bucket, &mut now, &[304]).0, 1);
    assert_eq!(bucket.tokens_milli(), 9_200);
}
