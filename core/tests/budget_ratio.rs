//! The ratio budget: retries under a percentage of operations in a sliding window, plus a
//! minimum rate. One test per rule, and a model check.

use core::time::Duration;

use backstop_core::{AttemptOutcome, Budget, BudgetConfigError, Instant, RatioBudget};
use proptest::prelude::*;

const CAUSE: AttemptOutcome = AttemptOutcome::Response(503);

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

fn retries_allowed(b: &RatioBudget, now: Instant) -> usize {
    (0..100_000).take_while(|_| b.try_retry(now, CAUSE)).count()
}

#[test]
fn retries_are_capped_at_the_percentage_of_operations() {
    let b = RatioBudget::new(10, 0, Duration::from_secs(10)).unwrap();
    for _ in 0..1_000 {
        b.on_operation_start(ms(0));
    }
    assert_eq!(retries_allowed(&b, ms(500)), 100);
}

#[test]
fn min_rate_allows_retries_without_traffic() {
    let b = RatioBudget::new(10, 5, Duration::from_secs(10)).unwrap();
    assert_eq!(
        retries_allowed(&b, ms(0)),
        50,
        "5 per second over a 10 s window"
    );
}

#[test]
fn operations_expire_after_the_window() {
    let b = RatioBudget::new(50, 0, Duration::from_secs(1)).unwrap();
    for _ in 0..10 {
        b.on_operation_start(ms(0));
    }
    assert_eq!(b.available_centi(ms(999)), 500);
    assert_eq!(b.available_centi(ms(1_000)), 0);
    assert_eq!(retries_allowed(&b, ms(1_000)), 0);
}

#[test]
fn retries_count_against_the_window_they_were_made_in() {
    let b = RatioBudget::new(100, 0, Duration::from_secs(1)).unwrap();
    for _ in 0..4 {
        b.on_operation_start(ms(0));
    }
    for _ in 0..4 {
        b.on_operation_start(ms(500));
    }
    // The four retries at 500 ms are paid by the deposits of 0 ms, in any order; once those
    // expire at 1 s, the retries still count until they expire at 1.5 s.
    assert_eq!(retries_allowed(&b, ms(500)), 8);
    assert_eq!(b.available_centi(ms(1_000)), 400 - 800);
    assert_eq!(b.available_centi(ms(1_500)), 0);
}

#[test]
fn balances_long_expired_stay_expired_however_many_slots_pass() {
    // A window has 10 slots: 100 ns each for a 1 µs window, so 2^31 slots pass in about 215 s
    // and 2^32 in about 430 s; 100 µs each for a 1 ms window (2^31 slots: about 60 hours).
    // An expired balance must never come back to life, whatever the slot count.
    for (window, later) in [
        (Duration::from_micros(1), 300),
        (Duration::from_micros(1), 100 << 32),
        (Duration::from_micros(1), 1_000_000_000_000_000),
        (Duration::from_millis(1), 60 * 3_600_000_000_000),
        (Duration::from_millis(1), 100_000 << 32),
    ] {
        let b = RatioBudget::new(10, 0, window).unwrap();
        for _ in 0..1_000 {
            b.on_operation_start(Instant::ZERO);
        }
        let later = if later < 1_000 {
            Instant::from_secs(later)
        } else {
            Instant::from_nanos(later)
        };
        assert_eq!(b.available_centi(later), 0, "{window:?}, at {later:?}");
        assert_eq!(retries_allowed(&b, later), 0, "{window:?}, at {later:?}");
    }
}

#[test]
fn a_denied_retry_spends_nothing() {
    let b = RatioBudget::new(10, 0, Duration::from_secs(10)).unwrap();
    for _ in 0..15 {
        b.on_operation_start(ms(0));
    }
    assert!(b.try_retry(ms(0), CAUSE));
    assert!(!b.try_retry(ms(0), CAUSE));
    assert_eq!(b.available_centi(ms(0)), 50);
}

#[test]
fn outage_amplification_stays_near_the_ratio() {
    // 1000 operations a second, each failing, each asking for up to 3 retries.
    let b = RatioBudget::new(10, 10, Duration::from_secs(10)).unwrap();
    let (mut ops, mut retries) = (0u64, 0u64);
    for t in 0..60_000u64 {
        b.on_operation_start(ms(t));
        ops += 1;
        for _ in 0..3 {
            if b.try_retry(ms(t), CAUSE) {
                retries += 1;
            } else {
                break;
            }
        }
    }
    let amplification = (ops + retries) as f64 / ops as f64;
    assert!(amplification <= 1.12, "amplification {amplification}");
    assert!(amplification >= 1.09, "amplification {amplification}");
}

#[test]
fn invalid_configuration_is_an_error() {
    assert_eq!(
        RatioBudget::new(10_001, 0, Duration::from_secs(1)).err(),
        Some(BudgetConfigError::PercentOutOfRange(10_001))
    );
    assert_eq!(
        RatioBudget::new(10, 0, Duration::from_nanos(999)).err(),
        Some(BudgetConfigError::WindowOutOfRange)
    );
    assert_eq!(
        RatioBudget::new(10, 0, Duration::from_secs(86_401)).err(),
        Some(BudgetConfigError::WindowOutOfRange)
    );
}

proptest! {
    /// The budget agrees with a plain list of every deposit and withdrawal, with expiry by
    /// slot, for any monotonic sequence of operations and retries.
    #[test]
    fn budget_follows_the_sliding_window_model(
        percent in 0u32..200,
        min_per_sec in 0u32..20,
        steps in proptest::collection::vec((0u64..300, any::<bool>()), 0..400),
    ) {
        let window_ms = 1_000u64;
        let slot_ms = window_ms / RatioBudget::SLOTS as u64;
        let b = RatioBudget::new(percent, min_per_sec, Duration::from_millis(window_ms)).unwrap();
        let reserve = i64::from(min_per_sec) * 100;
        let mut log: Vec<(u64, i64)> = Vec::new();
        let mut t = 0u64;
        for (dt, is_retry) in steps {
            t += dt;
            let slot = t / slot_ms;
            let available = |log: &Vec<(u64, i64)>| -> i64 {
                reserve + log.iter()
                    .filter(|(s, _)| slot - s < RatioBudget::SLOTS as u64)
                    .map(|(_, d)| d)
                    .sum::<i64>()
            };
            if is_retry {
                let allowed = b.try_retry(ms(t), CAUSE);
                prop_assert_eq!(allowed, available(&log) >= 100);
                if allowed {
                    log.push((slot, -100));
                }
            } else {
                b.on_operation_start(ms(t));
                log.push((slot, i64::from(percent)));
            }
            prop_assert_eq!(b.available_centi(ms(t)), available(&log));
        }
    }
}
