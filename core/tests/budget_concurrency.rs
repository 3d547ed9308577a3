//! Budgets shared by many threads never lose or invent tokens: every update is one atomic
//! compare-and-swap, so the totals after a concurrent run equal the sequential ones.

use core::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use backstop_core::{AttemptOutcome, Budget, Instant, RatioBudget, RetryQuota, TokenBucket};
use core::time::Duration;

const THREADS: usize = 8;
const NOW: Instant = Instant::ZERO;
const CAUSE: AttemptOutcome = AttemptOutcome::Response(503);

#[test]
fn token_bucket_shared_by_threads_loses_no_update() {
    let bucket = TokenBucket::new(1_000, 100).unwrap();
    // 8 x 50 failures: 400 tokens taken, none clamped.
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..50 {
                    bucket.on_attempt_end(NOW, false);
                    assert!(bucket.tokens_milli() <= 1_000_000);
                }
            });
        }
    });
    assert_eq!(bucket.tokens_milli(), 600_000);
    // 8 x 300 successes of 0.1 token: 240 tokens back.
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..300 {
                    bucket.on_attempt_end(NOW, true);
                    let _ = bucket.try_retry(NOW, CAUSE);
                }
            });
        }
    });
    assert_eq!(bucket.tokens_milli(), 840_000);
}

#[test]
fn token_bucket_stays_within_bounds_under_contention() {
    let bucket = TokenBucket::new(5, 700).unwrap();
    thread::scope(|s| {
        for i in 0..THREADS {
            let bucket = &bucket;
            s.spawn(move || {
                for j in 0..2_000 {
                    bucket.on_attempt_end(NOW, (i + j) % 3 == 0);
                    assert!(bucket.tokens_milli() <= 5_000);
                }
            });
        }
    });
    assert!(bucket.tokens_milli() <= 5_000);
}

#[test]
fn retry_quota_shared_by_threads_grants_exactly_its_capacity() {
    let quota = RetryQuota::new().with_capacity(1_000);
    let granted = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..100 {
                    if quota.try_retry(NOW, CAUSE) {
                        granted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(
        granted.load(Ordering::Relaxed),
        200,
        "1000 / 5, no more, no fewer"
    );
    assert_eq!(quota.available(), 0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..100 {
                    quota.on_attempt_end(NOW, true);
                }
            });
        }
    });
    assert_eq!(quota.available(), 800);
}

#[test]
fn ratio_budget_shared_by_threads_never_lends_more_than_it_earned() {
    let budget = RatioBudget::new(10, 0, Duration::from_secs(10)).unwrap();
    let granted = AtomicU64::new(0);
    // Every thread starts 1000 operations and asks for a retry after each.
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..1_000 {
                    budget.on_operation_start(NOW);
                    if budget.try_retry(NOW, CAUSE) {
                        granted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let granted = granted.load(Ordering::Relaxed);
    assert!(granted <= 800);
    // Nothing lost: deposits minus withdrawals, to the hundredth.
    assert_eq!(
        budget.available_centi(NOW),
        8_000 * 10 - 100 * granted as i64
    );
    let rest = (0..10_000)
        .take_while(|_| budget.try_retry(NOW, CAUSE))
        .count() as u64;
    assert_eq!(granted + rest, 800);
}

#[test]
fn budgets_are_send_and_sync() {
    fn shareable<T: Send + Sync + Budget>() {}
    shareable::<TokenBucket>();
    shareable::<RetryQuota>();
    shareable::<RatioBudget>();
    shareable::<&'static RatioBudget>();
    #[cfg(feature = "std")]
    shareable::<std::sync::Arc<RatioBudget>>();
}

#[test]
fn ratio_budget_stays_within_its_earnings_across_slot_rotations() {
    // 10% of operations plus 5 retries a second over a 1 s window. The threads share one
    // clock that each operation moves on by 125 µs, so 40,000 operations span 5 s (50 slot
    // rotations, raced by every thread) and each asks for up to 3 retries.
    let budget = RatioBudget::new(10, 5, Duration::from_secs(1)).unwrap();
    let clock = AtomicU64::new(0);
    let granted = AtomicU64::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..40_000 / THREADS {
                    let now = micros(clock.fetch_add(125, Ordering::Relaxed));
                    budget.on_operation_start(now);
                    for _ in 0..3 {
                        if budget.try_retry(now, CAUSE) {
                            granted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    // 40,000 operations earn 4,000 retries and the reserve 5 per window, over at most 6
    // windows: 4,030 if the threads ran one after the other. A thread preempted between
    // reading the clock and calling the budget acts on a stale `now`; allow 1% for that.
    let granted = granted.load(Ordering::Relaxed);
    assert!(granted <= 4_030 + 40, "granted {granted}");
    assert!(
        granted >= 3_900,
        "the budget lends what it earned: {granted}"
    );
}

fn micros(us: u64) -> Instant {
    Instant::from_duration(Duration::from_micros(us))
}
