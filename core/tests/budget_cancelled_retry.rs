//! A retry the budget granted but the operation never sent (it was aborted during the wait, or
//! hit its deadline before the send) gives its cost back.

use core::time::Duration;

use backstop_core::{
    Backoff, Budget, Decision, Event, Instant, Jitter, Method, Policy, RatioBudget, Request,
    Response, RetryMachine, RetryQuota, StopReason, TokenBucket,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

fn policy() -> Policy {
    Policy::builder()
        .backoff(Backoff::constant(Duration::from_secs(1)))
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

fn machine<B: Budget>(budget: B, now: Instant) -> RetryMachine<Pcg64Mcg, B> {
    RetryMachine::with_budget(
        policy(),
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(1),
        budget,
        now,
    )
}

/// One attempt answered 503, then the caller aborts during the wait the retry was granted.
fn aborted_during_its_wait<B: Budget>(budget: B, now: Instant) {
    let mut m = machine(budget, now);
    assert!(matches!(m.poll(now), Decision::Send { attempt: 1, .. }));
    m.handle(now, Event::AttemptStarted).unwrap();
    m.handle(now, Event::Response(Response::new(503))).unwrap();
    assert!(
        matches!(m.poll(now), Decision::Wait { .. }),
        "the retry was granted"
    );
    let later = now.saturating_add(Duration::from_millis(500));
    m.handle(later, Event::Abort).unwrap();
    assert_eq!(
        m.poll(later).outcome().map(|o| o.reason),
        Some(StopReason::Aborted)
    );
}

/// One attempt answered 503 and the retry is sent; returns whether it was.
fn retried<B: Budget>(budget: B, now: Instant) -> bool {
    let mut m = machine(budget, now);
    let _ = m.poll(now);
    m.handle(now, Event::AttemptStarted).unwrap();
    m.handle(now, Event::Response(Response::new(503))).unwrap();
    match m.poll(now) {
        Decision::Wait { until, .. } => matches!(m.poll(until), Decision::Send { attempt: 2, .. }),
        _ => false,
    }
}

#[test]
fn a_retry_cancelled_by_an_abort_gives_its_cost_back() {
    let quota = RetryQuota::new().with_capacity(10).with_success_refund(0);
    let now = Instant::ZERO;
    aborted_during_its_wait(&quota, now);
    aborted_during_its_wait(&quota, now);
    assert_eq!(quota.available(), 10, "two aborted waits sent no retry");
    assert!(
        retried(&quota, now),
        "the next operation's retry is allowed"
    );
    assert_eq!(quota.available(), 5, "the retry that was sent is paid for");
}

#[test]
fn a_retry_cancelled_by_the_deadline_gives_its_cost_back() {
    let quota = RetryQuota::new().with_capacity(10).with_success_refund(0);
    let mut m = machine(&quota, Instant::ZERO);
    let _ = m.poll(Instant::ZERO);
    m.handle(Instant::ZERO, Event::AttemptStarted).unwrap();
    m.handle(Instant::ZERO, Event::Response(Response::new(503)))
        .unwrap();
    let Decision::Wait { .. } = m.poll(Instant::ZERO) else {
        panic!("expected a wait")
    };
    assert_eq!(quota.available(), 5);
    // The driver wakes late, past the deadline: the granted retry is never sent.
    let late = Instant::from_secs(60);
    assert_eq!(
        m.poll(late).outcome().map(|o| o.reason),
        Some(StopReason::Deadline)
    );
    assert_eq!(quota.available(), 10);
}

#[test]
fn a_ratio_budget_gets_a_cancelled_retry_back() {
    // No deposits, a reserve of 10 retries over the 10 s window.
    let budget = RatioBudget::new(0, 1, Duration::from_secs(10)).unwrap();
    let now = Instant::from_secs(3);
    let before = budget.available_centi(now);
    aborted_during_its_wait(&budget, now);
    assert_eq!(budget.available_centi(now), before);
}

#[test]
fn a_token_bucket_charges_the_failed_attempt_not_the_retry() {
    let bucket = TokenBucket::new(10, 100).unwrap();
    aborted_during_its_wait(&bucket, Instant::ZERO);
    // The 503 took its token; the cancelled retry took nothing more and gives nothing back.
    assert_eq!(bucket.tokens_milli(), 9_000);
}
