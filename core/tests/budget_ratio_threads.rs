//! The ratio budget shared by threads whose clocks straddle slot boundaries: nothing is lost
//! or invented, no more is lent than the window earned, and a cancelled retry is given back.
//! Time is an input: each round hands the threads fixed `now`s on either side of a boundary
//! (some lagging a slot behind the others), so every assertion is exact whatever the
//! interleaving; only which calls win a race varies.

use core::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use backstop_core::{AttemptOutcome, Budget, Instant, RatioBudget};
use core::time::Duration;

const CAUSE: AttemptOutcome = AttemptOutcome::Response(503);
const THREADS: u64 = 8;
const PERCENT: i64 = 30;
const RESERVE_PER_SEC: u32 = 1_000;
/// A 10 ms window: slots of 1 ms, a reserve of 10 retries.
const SLOT_NANOS: u64 = 1_000_000;

fn slot_start(slot: u64) -> Instant {
    Instant::from_nanos(slot * SLOT_NANOS)
}

/// What each round did, per slot.
#[derive(Default)]
struct Counts {
    deposits: AtomicU64,
    granted: AtomicU64,
    cancelled: AtomicU64,
}

#[test]
fn ratio_budget_threads_across_slot_boundaries_lend_only_what_the_window_earned() {
    let budget = RatioBudget::new(
        PERCENT as u32,
        RESERVE_PER_SEC,
        Duration::from_nanos(10 * SLOT_NANOS),
    )
    .unwrap();
    let reserve = 10 * 100;
    // The sequential model: each slot's balance, in hundredths of a retry.
    let mut balances: Vec<i64> = vec![0; 200];
    let live = |balances: &[i64], slot: u64| -> i64 {
        reserve
            + (slot.saturating_sub(9)..=slot)
                .map(|s| balances[s as usize])
                .sum::<i64>()
    };
    let mut total_granted = 0u64;
    for round in 0..150u64 {
        // Round `r` straddles the boundary into slot `r + 1` (every fifth round jumps two
        // slots, expiring two at once): lagging threads deposit at `old`, the others deposit,
        // retry and cancel at `new`, where the slot leaving the window is expired by whichever
        // of them gets there first.
        let old = round;
        let new = if round % 5 == 4 { round + 2 } else { round + 1 };
        let before_new = budget.available_centi(slot_start(new));
        let counts = [Counts::default(), Counts::default()];
        thread::scope(|s| {
            for t in 0..THREADS {
                let (budget, counts) = (&budget, &counts);
                s.spawn(move || {
                    if t % 3 == 0 {
                        for _ in 0..40 {
                            budget.on_operation_start(slot_start(old));
                            counts[0].deposits.fetch_add(1, Ordering::Relaxed);
                        }
                        return;
                    }
                    let now = slot_start(new);
                    for i in 0..60 {
                        budget.on_operation_start(now);
                        counts[1].deposits.fetch_add(1, Ordering::Relaxed);
                        if budget.try_retry(now, CAUSE) {
                            counts[1].granted.fetch_add(1, Ordering::Relaxed);
                            if i % 4 == 0 {
                                budget.on_retry_cancelled(now, now, CAUSE);
                                counts[1].cancelled.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        let [at_old, at_new] = counts.map(|c| {
            (
                c.deposits.into_inner() as i64,
                c.granted.into_inner() as i64,
                c.cancelled.into_inner() as i64,
            )
        });
        balances[old as usize] += PERCENT * at_old.0;
        balances[new as usize] += PERCENT * at_new.0 - 100 * at_new.1 + 100 * at_new.2;
        let after = budget.available_centi(slot_start(new));
        // Nothing lost, nothing invented: every deposit, withdrawal and refund is in the slot
        // of its own `now`, and the slots that left the window are gone.
        assert_eq!(after, live(&balances, new), "round {round}");
        // Never more lent than the window earned: every grant was covered when it was made,
        // and after it only deposits and refunds came in, so what is left is not negative.
        // (Both only when something was granted: a window whose slots with deposits just
        // expired can start a round below zero by more than the round brings in, and then
        // grants nothing, rightly.)
        if at_new.1 > 0 {
            assert!(after >= 0, "round {round}: {after} left");
            assert!(
                100 * at_new.1 <= before_new + PERCENT * (at_old.0 + at_new.0) + 100 * at_new.2,
                "round {round}: {} granted",
                at_new.1
            );
        }
        total_granted += at_new.1 as u64;
    }
    // The budget lends: 150 rounds of 420 operations at 30% earn about 18,900 retries.
    assert!(total_granted > 10_000, "{total_granted} granted");
}

#[test]
fn ratio_budget_threads_windows_apart_never_bring_an_expired_balance_back() {
    // 10,000 operations at slot 0 earn 10,000 retries (100%). Then each thread retries a
    // different number of windows later, racing the others to expire slot 0's balance: none
    // of it may pay. What each thread can be lent is the reserve (10 a window) of the
    // windows the newest slot passes through, one per thread at most.
    let budget = RatioBudget::new(100, 1_000, Duration::from_nanos(10 * SLOT_NANOS)).unwrap();
    for _ in 0..10_000 {
        budget.on_operation_start(slot_start(0));
    }
    assert_eq!(budget.available_centi(slot_start(9)), 1_000_000 + 1_000);
    let granted = AtomicU64::new(0);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (budget, granted) = (&budget, &granted);
            s.spawn(move || {
                let now = slot_start((t + 1) * 1_000 + t);
                for _ in 0..100 {
                    if budget.try_retry(now, CAUSE) {
                        granted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let granted = granted.load(Ordering::Relaxed);
    assert!(granted <= 10 * THREADS, "{granted} granted");
    assert!(granted >= 10, "the reserve lends: {granted} granted");
    // The newest window holds only its own withdrawals, within its reserve.
    let left = budget.available_centi(slot_start(THREADS * 1_000 + THREADS - 1));
    assert!((0..=1_000).contains(&left), "{left} left");
}
