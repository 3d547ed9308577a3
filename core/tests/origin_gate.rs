//! One test per rule of the origin gate (issue 21), named after the rule, on virtual time; then
//! threads sharing one gate, and a property over arbitrary sequences of admissions and ends.

use core::time::Duration;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use backstop_core::{
    Ask, FailureRatio, Gate, GateAdmission, GateCloseReason, GateConfig, GateConfigError,
    GateSignal, GateState, Instant, OriginGate, Reopening, Slot,
};
use proptest::prelude::*;

const LEASE: Duration = Duration::from_secs(10);

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn at(millis: u64) -> Instant {
    Instant::from_millis(millis)
}

fn ended(started: Instant) -> GateSignal {
    GateSignal {
        started,
        back_off: None,
        failed: false,
        probe: false,
    }
}

fn back_off(started: Instant, d: Duration) -> GateSignal {
    GateSignal {
        back_off: Some(d),
        failed: true,
        ..ended(started)
    }
}

fn failed(started: Instant) -> GateSignal {
    GateSignal {
        failed: true,
        ..ended(started)
    }
}

fn probe(signal: GateSignal) -> GateSignal {
    GateSignal {
        probe: true,
        ..signal
    }
}

/// Open, or reopening at a pace: no longer closed.
fn reopened(state: GateState) -> bool {
    matches!(state, GateState::Open | GateState::Reopening { .. })
}

fn closed_at(a: GateAdmission) -> Instant {
    match a {
        GateAdmission::Closed(t) => t,
        other => panic!("expected Closed, got {other:?}"),
    }
}

fn awaits_until(a: GateAdmission) -> Instant {
    match a {
        GateAdmission::AwaitProbe(t) => t,
        other => panic!("expected AwaitProbe, got {other:?}"),
    }
}

fn trip_gate(trip: FailureRatio) -> OriginGate {
    OriginGate::new(GateConfig::new().failure_ratio(trip)).unwrap()
}

/// A gate closed at 1 s by a 2 s back-off: closed until 3 s.
fn closed_gate(config: GateConfig) -> OriginGate {
    let gate = OriginGate::new(config).unwrap();
    gate.on_attempt_end(at(1_000), back_off(at(900), ms(2_000)));
    gate
}

#[test]
fn closes_on_a_back_off_signal_until_now_plus_the_signal() {
    let gate = OriginGate::default();
    assert_eq!(gate.admit(at(1_000), Ask::new(LEASE)), GateAdmission::Open);
    gate.on_attempt_end(at(1_000), back_off(at(900), ms(2_000)));
    assert!(matches!(
        gate.state(at(1_000)),
        GateState::Closed { until, reason: GateCloseReason::BackOff, .. } if until == at(3_000)
    ));
    assert_eq!(gate.closes(), 1);
}

#[test]
fn new_operations_are_told_closed_from_the_reopening_on_and_never_admitted_before_it() {
    let gate = closed_gate(GateConfig::new());
    for now in (1_000..3_000).step_by(7) {
        let t = closed_at(gate.admit(at(now), Ask::new(LEASE)));
        assert!(t >= at(3_000), "told {t:?} at {now} ms");
    }
    assert_ne!(gate.admit(at(3_000), Ask::new(LEASE)), GateAdmission::Open);
}

#[test]
fn a_later_signal_that_reaches_further_extends_the_closing_and_a_shorter_one_does_not_shorten_it() {
    let gate = closed_gate(GateConfig::new());
    gate.on_attempt_end(at(1_500), back_off(at(900), ms(500)));
    assert!(matches!(gate.state(at(1_500)), GateState::Closed { until, .. } if until == at(3_000)));
    gate.on_attempt_end(at(2_000), back_off(at(900), ms(4_000)));
    assert!(matches!(gate.state(at(2_000)), GateState::Closed { until, .. } if until == at(6_000)));
    assert!(closed_at(gate.admit(at(3_500), Ask::new(LEASE))) >= at(6_000));
    // An extension is not a new closing.
    assert_eq!(gate.closes(), 1);
}

#[test]
fn a_zero_back_off_does_not_close_an_open_gate() {
    let gate = OriginGate::default();
    gate.on_attempt_end(at(1_000), back_off(at(900), Duration::ZERO));
    assert_eq!(gate.state(at(1_000)), GateState::Open);
    assert_eq!(gate.admit(at(1_000), Ask::new(LEASE)), GateAdmission::Open);
    assert_eq!(gate.closes(), 0);
}

#[test]
fn reopen_instants_are_spread_over_until_to_until_plus_spread_and_differ_between_callers() {
    // A 20 s signal: the spread is the configured 1 s (below a tenth of 20 s).
    let gate = OriginGate::default();
    gate.on_attempt_end(at(0), back_off(at(0), ms(20_000)));
    let mut instants: Vec<Instant> = (0..200)
        .map(|_| closed_at(gate.admit(at(10), Ask::new(LEASE))))
        .collect();
    assert!(instants.iter().all(|&t| t >= at(20_000) && t <= at(21_000)));
    instants.sort();
    // 200 callers over 1 s: no two in the same millisecond... nor closer than 1.5 ms.
    let closest = instants
        .windows(2)
        .map(|w| w[1].saturating_duration_since(w[0]))
        .min()
        .unwrap();
    assert!(
        closest >= Duration::from_micros(1_500),
        "closest {closest:?}"
    );
    // Spread over the whole span, not bunched at one end.
    assert!(instants[0] < at(20_010) && instants[199] > at(20_990));
}

#[test]
fn the_spread_is_at_most_a_tenth_of_the_signal() {
    let gate = closed_gate(GateConfig::new()); // 2 s: a 200 ms spread
    assert!(matches!(gate.state(at(1_000)), GateState::Closed { spread, .. } if spread == ms(200)));
    for _ in 0..100 {
        let t = closed_at(gate.admit(at(1_000), Ask::new(LEASE)));
        assert!(t >= at(3_000) && t <= at(3_200), "{t:?}");
    }
    let unspread = closed_gate(GateConfig::new().spread(Duration::ZERO));
    for _ in 0..10 {
        assert_eq!(
            closed_at(unspread.admit(at(1_000), Ask::new(LEASE))),
            at(3_000)
        );
    }
}

#[test]
fn the_seed_rotates_the_spread() {
    let a = closed_gate(GateConfig::new());
    let b = closed_gate(GateConfig::new().seed(0x5eed_5eed_5eed_5eed));
    let tell = |g: &OriginGate| -> Vec<Instant> {
        (0..5)
            .map(|_| closed_at(g.admit(at(1_000), Ask::new(LEASE))))
            .collect()
    };
    assert_ne!(tell(&a), tell(&b));
}

#[test]
fn the_first_caller_through_is_the_probe_and_the_others_await_its_answer() {
    let gate = closed_gate(GateConfig::new());
    assert_eq!(gate.admit(at(3_000), Ask::new(LEASE)), GateAdmission::Probe);
    assert!(matches!(
        gate.state(at(3_000)),
        GateState::HalfOpen { probe_lease: Some(t), .. } if t == at(13_000)
    ));
    let mut rechecks = Vec::new();
    for now in [3_000, 3_000, 3_000, 3_001, 3_050, 3_100] {
        let t = awaits_until(gate.admit(at(now), Ask::new(LEASE)));
        // Ask again after U[recheck, 2 x recheck] (50 ms by default).
        assert!(t >= at(now + 50) && t <= at(now + 100), "{t:?} at {now}");
        rechecks.push(t);
    }
    // Callers waiting together ask again at different instants.
    assert!(rechecks[0] != rechecks[1] && rechecks[1] != rechecks[2] && rechecks[0] != rechecks[2]);
}

#[test]
fn a_probe_with_a_back_off_closes_the_gate_again() {
    let gate = closed_gate(GateConfig::new());
    assert_eq!(gate.admit(at(3_100), Ask::new(LEASE)), GateAdmission::Probe);
    gate.on_attempt_end(at(3_300), probe(back_off(at(3_100), ms(1_000))));
    assert!(matches!(gate.state(at(3_300)), GateState::Closed { until, .. } if until == at(4_300)));
    assert!(closed_at(gate.admit(at(3_300), Ask::new(LEASE))) >= at(4_300));
    assert_eq!(gate.closes(), 2);
    // The next half-open has its own probe.
    assert_eq!(gate.admit(at(4_300), Ask::new(LEASE)), GateAdmission::Probe);
}

#[test]
fn a_probe_told_to_retry_at_once_hands_the_probe_to_the_next_caller() {
    let gate = closed_gate(GateConfig::new());
    assert_eq!(gate.admit(at(3_100), Ask::new(LEASE)), GateAdmission::Probe);
    // A 429 with `Retry-After: 0`: not a success, and nothing to wait for.
    gate.on_attempt_end(at(3_200), probe(back_off(at(3_100), Duration::ZERO)));
    assert!(matches!(
        gate.state(at(3_200)),
        GateState::HalfOpen {
            probe_lease: None,
            ..
        }
    ));
    assert_eq!(gate.admit(at(3_200), Ask::new(LEASE)), GateAdmission::Probe);
    assert_eq!(gate.closes(), 2);
}

#[test]
fn a_zero_back_off_from_another_attempt_leaves_the_probe_in_flight() {
    let gate = closed_gate(GateConfig::new());
    assert_eq!(gate.admit(at(3_100), Ask::new(LEASE)), GateAdmission::Probe);
    gate.on_attempt_end(at(3_200), back_off(at(950), Duration::ZERO));
    assert!(matches!(
        gate.admit(at(3_200), Ask::new(LEASE)),
        GateAdmission::AwaitProbe(_)
    ));
    assert_eq!(gate.closes(), 1);
}

#[test]
fn a_probe_that_succeeds_opens_the_gate_for_all_without_a_slow_start() {
    let gate = closed_gate(GateConfig::new().reopening(Reopening::AtOnce));
    assert_eq!(gate.admit(at(3_100), Ask::new(LEASE)), GateAdmission::Probe);
    let waiting = awaits_until(gate.admit(at(3_120), Ask::new(LEASE)));
    gate.on_attempt_end(at(3_150), probe(ended(at(3_100))));
    assert_eq!(gate.state(at(3_150)), GateState::Open);
    assert_eq!(gate.admit(waiting, Ask::new(LEASE)), GateAdmission::Open);
    assert_eq!(gate.admit(at(3_151), Ask::new(LEASE)), GateAdmission::Open);
    assert_eq!(gate.reopens(), 1);
}

#[test]
fn a_probe_that_fails_without_a_back_off_reopens_the_gate_when_the_trip_is_off() {
    let gate = closed_gate(GateConfig::new());
    assert_eq!(gate.admit(at(3_100), Ask::new(LEASE)), GateAdmission::Probe);
    gate.on_attempt_end(at(3_150), probe(failed(at(3_100))));
    assert!(reopened(gate.state(at(3_150))));
}

#[test]
fn a_probe_that_fails_without_a_back_off_closes_the_gate_for_the_break_when_the_trip_is_on() {
    let gate = closed_gate(GateConfig::new().failure_ratio(FailureRatio::new()));
    assert_eq!(gate.admit(at(3_100), Ask::new(LEASE)), GateAdmission::Probe);
    gate.on_attempt_end(at(3_150), probe(failed(at(3_100))));
    assert!(matches!(
        gate.state(at(3_150)),
        GateState::Closed { until, reason: GateCloseReason::FailedProbe, .. } if until == at(8_150)
    ));
    assert_eq!(gate.admit(at(8_150), Ask::new(LEASE)), GateAdmission::Probe);
}

#[test]
fn a_probe_whose_lease_expires_hands_the_probe_to_another_caller() {
    let gate = closed_gate(GateConfig::new());
    assert_eq!(
        gate.admit(at(3_000), Ask::new(ms(500))),
        GateAdmission::Probe
    );
    assert!(matches!(
        gate.admit(at(3_499), Ask::new(ms(500))),
        GateAdmission::AwaitProbe(_)
    ));
    // The first probe's operation was dropped: at its lease's end, the next caller probes.
    assert_eq!(
        gate.admit(at(3_500), Ask::new(ms(500))),
        GateAdmission::Probe
    );
    assert!(matches!(
        gate.admit(at(3_600), Ask::new(ms(500))),
        GateAdmission::AwaitProbe(_)
    ));
    gate.on_attempt_end(at(3_700), probe(ended(at(3_500))));
    assert_eq!(
        gate.admit(at(3_700), Ask::new(ms(500))),
        GateAdmission::Open
    );
}

#[test]
fn a_probe_from_before_the_latest_closing_answers_nothing() {
    let gate = closed_gate(GateConfig::new());
    assert_eq!(
        gate.admit(at(3_000), Ask::new(ms(100))),
        GateAdmission::Probe
    );
    assert_eq!(
        gate.admit(at(3_100), Ask::new(ms(100))),
        GateAdmission::Probe
    );
    // The second probe is told to back off; then the first one's success arrives: it started
    // before the closing in force, so it does not open the gate.
    gate.on_attempt_end(at(3_200), probe(back_off(at(3_100), ms(1_000))));
    gate.on_attempt_end(at(4_250), probe(ended(at(3_000))));
    assert!(matches!(gate.state(at(4_250)), GateState::HalfOpen { .. }));
    assert_eq!(gate.admit(at(4_250), Ask::new(LEASE)), GateAdmission::Probe);
}

#[test]
fn a_success_that_is_not_the_probe_does_not_open_the_gate() {
    let gate = closed_gate(GateConfig::new());
    // An attempt in flight when the gate closed succeeds during the half-open.
    gate.on_attempt_end(at(3_100), ended(at(950)));
    assert!(matches!(gate.state(at(3_100)), GateState::HalfOpen { .. }));
}

#[test]
fn the_failure_ratio_trip_is_off_by_default() {
    let gate = OriginGate::default();
    assert_eq!(GateConfig::default().trip(), None);
    for i in 0..1_000 {
        gate.on_attempt_end(at(i), failed(at(i)));
    }
    assert_eq!(gate.state(at(1_000)), GateState::Open);
    assert_eq!(gate.failure_counts(at(1_000)), (0, 0));
}

#[test]
fn the_failure_ratio_trip_opens_a_circuit_at_pollys_defaults() {
    let gate = trip_gate(FailureRatio::new());
    // 90 successes and 9 failures: 99 attempts, below the minimum throughput.
    for i in 0..90 {
        gate.on_attempt_end(at(i), ended(at(i)));
    }
    for i in 90..99 {
        gate.on_attempt_end(at(i), failed(at(i)));
    }
    assert_eq!(gate.state(at(100)), GateState::Open);
    // The 100th attempt fails: 10 of 100, a ratio of 0.1.
    gate.on_attempt_end(at(100), failed(at(100)));
    assert!(matches!(
        gate.state(at(100)),
        GateState::Closed { until, reason: GateCloseReason::FailureRatio, .. } if until == at(5_100)
    ));
    // Closed for the 5 s break (spread up to 500 ms), then one probe.
    assert!(closed_at(gate.admit(at(200), Ask::new(LEASE))) >= at(5_100));
    assert_eq!(gate.admit(at(5_100), Ask::new(LEASE)), GateAdmission::Probe);
    assert!(matches!(
        gate.admit(at(5_100), Ask::new(LEASE)),
        GateAdmission::AwaitProbe(_)
    ));
    gate.on_attempt_end(at(5_200), probe(ended(at(5_100))));
    assert!(reopened(gate.state(at(5_200))));
    // The counts start afresh.
    assert_eq!(gate.failure_counts(at(5_200)), (0, 0));
}

#[test]
fn the_failure_ratio_trip_needs_the_minimum_throughput() {
    let gate = trip_gate(FailureRatio::new());
    for i in 0..99 {
        gate.on_attempt_end(at(i), failed(at(i)));
    }
    assert_eq!(gate.state(at(99)), GateState::Open);
    assert_eq!(gate.failure_counts(at(99)), (99, 99));
}

#[test]
fn the_failure_ratio_trip_stays_below_the_ratio() {
    let gate = trip_gate(FailureRatio::new());
    for i in 0..1_000 {
        let signal = if i % 11 == 10 {
            failed(at(i))
        } else {
            ended(at(i))
        };
        gate.on_attempt_end(at(i), signal);
    }
    // 90 failures in 1000, never 10 % of at least 100 on the way.
    assert_eq!(gate.failure_counts(at(1_000)), (90, 1_000));
    assert_eq!(gate.state(at(1_000)), GateState::Open);
}

#[test]
fn the_failure_ratio_window_slides_a_bucket_at_a_time() {
    let gate = trip_gate(FailureRatio::new()); // 30 s in 3 s buckets
    for _ in 0..50 {
        gate.on_attempt_end(at(0), failed(at(0)));
    }
    assert_eq!(gate.failure_counts(at(29_999)), (50, 50));
    // At 30 s the first bucket leaves the window.
    assert_eq!(gate.failure_counts(at(30_000)), (0, 0));
    for _ in 0..50 {
        gate.on_attempt_end(at(30_000), failed(at(30_000)));
    }
    assert_eq!(gate.state(at(30_000)), GateState::Open);
    assert_eq!(gate.failure_counts(at(30_000)), (50, 50));
}

#[test]
fn results_of_attempts_started_before_the_gate_opened_update_the_counts_only() {
    let trip = FailureRatio::new().minimum_throughput(10);
    let gate = trip_gate(trip);
    // Ten failures trip the gate at 10 ms; the probe at 5010 ms succeeds.
    for i in 1..=10 {
        gate.on_attempt_end(at(i), failed(at(0)));
    }
    assert!(matches!(gate.state(at(10)), GateState::Closed { .. }));
    assert_eq!(gate.admit(at(5_010), Ask::new(LEASE)), GateAdmission::Probe);
    gate.on_attempt_end(at(5_020), probe(ended(at(5_010))));
    assert!(reopened(gate.state(at(5_020))));
    // Stragglers started before the gate opened fail: counted, but they trip nothing.
    for i in 0..20 {
        gate.on_attempt_end(at(5_030 + i), failed(at(5)));
    }
    assert_eq!(gate.failure_counts(at(5_050)), (20, 20));
    assert!(reopened(gate.state(at(5_050))));
    // A fresh failure sees the counts: the gate trips.
    gate.on_attempt_end(at(5_060), failed(at(5_040)));
    assert!(matches!(
        gate.state(at(5_060)),
        GateState::Closed {
            reason: GateCloseReason::FailureRatio,
            ..
        }
    ));
}

#[test]
fn a_back_off_from_an_attempt_started_before_the_gate_opened_still_closes_it() {
    let gate = closed_gate(GateConfig::new());
    assert_eq!(gate.admit(at(3_000), Ask::new(LEASE)), GateAdmission::Probe);
    gate.on_attempt_end(at(3_100), probe(ended(at(3_000))));
    gate.on_attempt_end(at(3_200), back_off(at(500), ms(1_000)));
    assert!(matches!(gate.state(at(3_200)), GateState::Closed { until, .. } if until == at(4_200)));
}

#[test]
fn the_gate_is_deterministic() {
    let run = || {
        let gate = OriginGate::new(
            GateConfig::new()
                .seed(7)
                .failure_ratio(FailureRatio::new().minimum_throughput(5)),
        )
        .unwrap();
        let mut answers = Vec::new();
        for i in 0..2_000u64 {
            let now = at(i * 13);
            answers.push(gate.admit(now, Ask::new(ms(200))));
            let signal = match i % 7 {
                0 => back_off(now, ms(i % 3_000)),
                1 | 2 => failed(now),
                3 => probe(ended(now)),
                _ => ended(now),
            };
            gate.on_attempt_end(now.saturating_add(ms(i % 50)), signal);
            answers.push(gate.admit(now, Ask::new(ms(200))));
        }
        (answers, gate.closes(), gate.reopens())
    };
    assert_eq!(run(), run());
}

#[test]
fn invalid_configurations_are_errors() {
    let new = |c: GateConfig| OriginGate::new(c).err();
    let trip = |f: FailureRatio| new(GateConfig::new().failure_ratio(f));
    assert_eq!(
        new(GateConfig::new().spread(Duration::from_secs(86_401))),
        Some(GateConfigError::SpreadOutOfRange)
    );
    assert_eq!(
        new(GateConfig::new().await_probe_recheck(Duration::ZERO)),
        Some(GateConfigError::RecheckOutOfRange)
    );
    assert_eq!(
        trip(FailureRatio::new().ratio_per_mille(0)),
        Some(GateConfigError::RatioOutOfRange(0))
    );
    assert_eq!(
        trip(FailureRatio::new().ratio_per_mille(1_001)),
        Some(GateConfigError::RatioOutOfRange(1_001))
    );
    assert_eq!(
        trip(FailureRatio::new().minimum_throughput(0)),
        Some(GateConfigError::ZeroMinimumThroughput)
    );
    assert_eq!(
        trip(FailureRatio::new().buckets(0)),
        Some(GateConfigError::BucketsOutOfRange(0))
    );
    assert_eq!(
        trip(FailureRatio::new().buckets(FailureRatio::MAX_BUCKETS + 1)),
        Some(GateConfigError::BucketsOutOfRange(17))
    );
    assert_eq!(
        trip(FailureRatio::new().window(Duration::from_micros(999))),
        Some(GateConfigError::WindowOutOfRange)
    );
    assert_eq!(
        trip(FailureRatio::new().break_duration(Duration::ZERO)),
        Some(GateConfigError::BreakOutOfRange)
    );
    // The limits themselves are valid.
    assert_eq!(
        trip(
            FailureRatio::new()
                .ratio_per_mille(1_000)
                .minimum_throughput(1)
                .buckets(FailureRatio::MAX_BUCKETS)
                .window(Duration::from_millis(1))
                .break_duration(Duration::from_secs(86_400))
        ),
        None
    );
    assert!(GateConfigError::RatioOutOfRange(0)
        .to_string()
        .contains("1 to 1000"));
}

#[test]
fn a_gate_is_shared_send_and_sync_and_through_pointers() {
    fn shared<T: Send + Sync>() {}
    shared::<OriginGate>();
    let gate = std::sync::Arc::new(OriginGate::default());
    // An `Arc` of a gate is a gate (the trait's associated constant makes it no `dyn` one).
    fn end<G: Gate>(gate: &G, signal: backstop_core::GateSignal) {
        gate.on_attempt_end(at(0), signal);
    }
    #[cfg(feature = "std")]
    end(&gate, back_off(at(0), ms(1_000)));
    #[cfg(not(feature = "std"))]
    end(&&*gate, back_off(at(0), ms(1_000)));
    let by_ref: &OriginGate = &gate;
    assert!(matches!(
        Gate::admit(&by_ref, at(0), Ask::new(LEASE)),
        GateAdmission::Closed(_)
    ));
}

#[test]
fn racing_threads_at_the_reopening_get_exactly_one_probe() {
    for round in 0..20 {
        let gate = closed_gate(GateConfig::new().seed(round));
        let probes = AtomicUsize::new(0);
        let waits = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..100 {
                        match gate.admit(at(3_500), Ask::new(LEASE)) {
                            GateAdmission::Probe => probes.fetch_add(1, Ordering::Relaxed),
                            GateAdmission::AwaitProbe(_) => waits.fetch_add(1, Ordering::Relaxed),
                            other => panic!("{other:?} while half-open"),
                        };
                    }
                });
            }
        });
        assert_eq!(probes.into_inner(), 1);
        assert_eq!(waits.into_inner(), 799);
    }
}

#[test]
fn racing_threads_count_every_result() {
    let gate = trip_gate(FailureRatio::new().minimum_throughput(1_000_000));
    thread::scope(|s| {
        for t in 0..8u64 {
            let gate = &gate;
            s.spawn(move || {
                for i in 0..1_000u64 {
                    let signal = if (t + i) % 4 == 0 {
                        failed(at(0))
                    } else {
                        ended(at(0))
                    };
                    gate.on_attempt_end(at(i), signal);
                    let _ = gate.admit(at(i), Ask::new(LEASE));
                }
            });
        }
    });
    assert_eq!(gate.failure_counts(at(1_000)), (2_000, 8_000));
}

// The property: over arbitrary sequences of admissions and ends on virtual time, no caller is
// admitted (Open or Probe) before the end of any back-off signal reported to the gate, every
// Closed and AwaitProbe answer is in the future, at most one probe of a closing is in flight
// until its lease expires, and nothing panics.

#[derive(Clone, Debug)]
enum Op {
    Advance(u64),
    Admit {
        lease: u64,
    },
    End {
        pick: usize,
        back_off: Option<u64>,
        failed: bool,
    },
    Drop {
        pick: usize,
    },
    /// An attempt that started before the gate's last opening ends.
    Straggler {
        age: u64,
        back_off: Option<u64>,
        failed: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let back_off = prop_oneof![Just(None), (0u64..3_000).prop_map(Some)];
    prop_oneof![
        3 => (0u64..1_500).prop_map(Op::Advance),
        5 => (0u64..2_000).prop_map(|lease| Op::Admit { lease }),
        4 => (any::<usize>(), back_off.clone(), any::<bool>())
            .prop_map(|(pick, back_off, failed)| Op::End { pick, back_off, failed }),
        1 => any::<usize>().prop_map(|pick| Op::Drop { pick }),
        1 => (0u64..20_000, back_off, any::<bool>())
            .prop_map(|(age, back_off, failed)| Op::Straggler { age, back_off, failed }),
    ]
}

fn config() -> impl Strategy<Value = GateConfig> {
    (
        0u64..2_000,
        1u64..300,
        any::<u64>(),
        prop::option::of((1u16..=1_000, 1u32..20, 1u64..20_000, 1u8..=16, 1u64..5_000)),
        prop_oneof![
            Just(Reopening::AtOnce),
            (1u64..20_000).prop_map(|d| Reopening::linear(ms(d))),
            (1u64..20_000).prop_map(|d| Reopening::doubling(ms(d))),
        ],
    )
        .prop_map(|(spread, recheck, seed, trip, reopening)| {
            let mut c = GateConfig::new()
                .spread(ms(spread))
                .await_probe_recheck(ms(recheck))
                .seed(seed)
                .reopening(reopening);
            if let Some((ratio, min, window, buckets, brk)) = trip {
                c = c.failure_ratio(
                    FailureRatio::new()
                        .ratio_per_mille(ratio)
                        .minimum_throughput(min)
                        .window(ms(window))
                        .buckets(buckets)
                        .break_duration(ms(brk)),
                );
            }
            c
        })
}

struct InFlight {
    started: Instant,
    probe: bool,
    lease_end: Instant,
    closing: u64,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_caller_is_admitted_before_the_reopening_and_one_probe_at_a_time(
        config in config(),
        ops in prop::collection::vec(op(), 1..200),
    ) {
        let gate = OriginGate::new(config).unwrap();
        let mut now = at(1_000_000);
        // The latest end of any back-off signal reported so far.
        let mut floor = Instant::ZERO;
        let mut in_flight: Vec<InFlight> = Vec::new();
        for op in ops {
            match op {
                Op::Advance(d) => now = now.saturating_add(ms(d)),
                Op::Admit { lease } => {
                    let answer = gate.admit(now, Ask::new(ms(lease)));
                    match answer {
                        GateAdmission::Open | GateAdmission::Probe => {
                            prop_assert!(now >= floor, "{answer:?} at {now:?} before {floor:?}");
                        }
                        GateAdmission::Closed(t) => {
                            prop_assert!(
                                t > now && t >= floor,
                                "Closed({t:?}) at {now:?}, floor {floor:?}"
                            );
                        }
                        GateAdmission::AwaitProbe(t) => prop_assert!(t > now),
                        GateAdmission::Paced(slot) => {
                            prop_assert!(
                                slot.at > now && slot.at >= floor,
                                "Paced({slot:?}) at {now:?}, floor {floor:?}"
                            );
                        }
                        _ => prop_assert!(false, "unknown admission {answer:?}"),
                    }
                    let probe = answer == GateAdmission::Probe;
                    if probe {
                        let closing = gate.closes();
                        let rival = in_flight
                            .iter()
                            .any(|a| a.probe && a.closing == closing && a.lease_end > now);
                        prop_assert!(!rival, "a second probe of closing {closing} at {now:?}");
                    }
                    if matches!(answer, GateAdmission::Open | GateAdmission::Probe) {
                        in_flight.push(InFlight {
                            started: now,
                            probe,
                            lease_end: now.saturating_add(ms(lease)),
                            closing: gate.closes(),
                        });
                    }
                }
                Op::End { pick, back_off, failed } => {
                    if in_flight.is_empty() {
                        continue;
                    }
                    let a = in_flight.swap_remove(pick % in_flight.len());
                    let signal = GateSignal {
                        started: a.started,
                        back_off: back_off.map(ms),
                        failed: failed || back_off.is_some(),
                        probe: a.probe,
                    };
                    gate.on_attempt_end(now, signal);
                    if let Some(d) = back_off {
                        floor = floor.max(now.saturating_add(ms(d)));
                    }
                }
                Op::Drop { pick } => {
                    if !in_flight.is_empty() {
                        in_flight.swap_remove(pick % in_flight.len());
                    }
                }
                Op::Straggler { age, back_off, failed } => {
                    let started = Instant::from_duration(now.as_duration().saturating_sub(ms(age)));
                    let signal = GateSignal {
                        started,
                        back_off: back_off.map(ms),
                        failed,
                        probe: false,
                    };
                    gate.on_attempt_end(now, signal);
                    if let Some(d) = back_off {
                        floor = floor.max(now.saturating_add(ms(d)));
                    }
                }
            }
            // The state agrees with the admissions: never open before the floor.
            if now < floor {
                prop_assert!(gate.state(now) != GateState::Open);
            }
        }
    }
}

/// A gate closed at 0 for 10 s (no spread) that 100 callers asked while closed, whose probe
/// succeeded at 10 s: reopening at one caller per 100 ms at first.
fn reopening_gate(reopening: Reopening) -> OriginGate {
    let gate = OriginGate::new(
        GateConfig::new()
            .spread(Duration::ZERO)
            .reopening(reopening),
    )
    .unwrap();
    gate.on_attempt_end(at(0), back_off(at(0), ms(10_000)));
    for i in 0..100 {
        assert_eq!(
            closed_at(gate.admit(at(i * 50), Ask::new(LEASE))),
            at(10_000)
        );
    }
    assert_eq!(
        gate.admit(at(10_000), Ask::new(LEASE)),
        GateAdmission::Probe
    );
    gate.on_attempt_end(at(10_000), probe(ended(at(10_000))));
    gate
}

fn slot_of(a: GateAdmission) -> Slot {
    match a {
        GateAdmission::Paced(slot) => slot,
        other => panic!("expected Paced, got {other:?}"),
    }
}

#[test]
fn a_probe_that_succeeds_reopens_at_the_pace_measured_while_closed() {
    let gate = reopening_gate(Reopening::DEFAULT);
    assert!(
        matches!(gate.state(at(10_000)), GateState::Reopening { since, .. } if since == at(10_000))
    );
    // The first caller goes at once; the next ones are told their own slots, 100 ms apart at
    // first (10 s closed / 100 callers), a little closer as the pace grows.
    assert_eq!(gate.admit(at(10_000), Ask::new(LEASE)), GateAdmission::Open);
    let slots: Vec<Slot> = (0..30)
        .map(|_| slot_of(gate.admit(at(10_000), Ask::new(LEASE))))
        .collect();
    assert_eq!(slots[0].at, at(10_100));
    // 100 ms at first, shrinking as the pace grows (2.5 s in: 10 / 12.5 of it).
    let gaps: Vec<Duration> = slots
        .windows(2)
        .map(|pair| pair[1].at.saturating_duration_since(pair[0].at))
        .collect();
    assert!(gaps[0] > ms(98) && gaps[0] <= ms(100), "{gaps:?}");
    assert!(gaps.windows(2).all(|g| g[1] <= g[0]), "{gaps:?}");
    assert!(gaps[28] > ms(79) && gaps[28] < ms(80), "{gaps:?}");
    // Each holder goes at its slot without taking another; a newcomer then is told the next.
    let last = slots[29];
    assert_eq!(
        gate.admit(slots[0].at, Ask::new(LEASE).holding(Some(slots[0]))),
        GateAdmission::Open
    );
    let next = slot_of(gate.admit(slots[0].at, Ask::new(LEASE)));
    assert!(next.at > last.at);
    assert_eq!(gate.reopens(), 1);
}

#[test]
fn the_reopening_pace_grows_linearly_by_its_start_every_ramp() {
    let gate = reopening_gate(Reopening::linear(ms(10_000)));
    assert_eq!(gate.admit(at(10_000), Ask::new(LEASE)), GateAdmission::Open);
    // Five seconds in, the pace is 1.5 times the start: slots 66.7 ms apart.
    assert_eq!(gate.admit(at(15_000), Ask::new(LEASE)), GateAdmission::Open);
    let a = slot_of(gate.admit(at(15_000), Ask::new(LEASE)));
    let b = slot_of(gate.admit(at(15_000), Ask::new(LEASE)));
    let gap = b.at.saturating_duration_since(a.at);
    assert!(gap > ms(66) && gap < ms(67), "{gap:?}");
}

#[test]
fn a_doubling_reopening_halves_the_interval_every_period() {
    let gate = reopening_gate(Reopening::doubling(ms(1_000)));
    assert_eq!(gate.admit(at(10_000), Ask::new(LEASE)), GateAdmission::Open);
    let slots: Vec<Instant> = (0..40)
        .map(|_| slot_of(gate.admit(at(10_000), Ask::new(LEASE))).at)
        .collect();
    let gap = |i: usize| slots[i + 1].saturating_duration_since(slots[i]);
    // 100 ms in the first second, 50 ms in the next, 25 ms after.
    assert_eq!((slots[0], gap(0), gap(8)), (at(10_100), ms(100), ms(100)));
    assert_eq!(slots[9], at(11_000));
    assert_eq!((gap(9), gap(28)), (ms(50), ms(50)));
    assert_eq!(slots[29], at(12_000));
    assert_eq!(gap(29), ms(25));
}

#[test]
fn a_slot_at_or_past_the_callers_deadline_is_not_set_aside() {
    let gate = reopening_gate(Reopening::DEFAULT);
    assert_eq!(gate.admit(at(10_000), Ask::new(LEASE)), GateAdmission::Open);
    // The next slot, 10.1 s, is past this caller's deadline: it is told, and nothing is taken.
    let told = slot_of(gate.admit(at(10_000), Ask::new(LEASE).before(at(10_050))));
    assert_eq!(told.at, at(10_100));
    let next = slot_of(gate.admit(at(10_000), Ask::new(LEASE).before(at(20_000))));
    assert_eq!(next, told);
}

#[test]
fn a_back_off_during_the_reopening_closes_the_gate_again_and_voids_its_slots() {
    let gate = reopening_gate(Reopening::DEFAULT);
    assert_eq!(gate.admit(at(10_000), Ask::new(LEASE)), GateAdmission::Open);
    let held = slot_of(gate.admit(at(10_000), Ask::new(LEASE)));
    gate.on_attempt_end(at(10_050), back_off(at(10_000), ms(5_000)));
    assert_eq!(gate.closes(), 2);
    // The holder comes back at its slot: the gate is closed, its slot void.
    assert_eq!(
        closed_at(gate.admit(held.at, Ask::new(LEASE).holding(Some(held)))),
        at(15_050)
    );
    // A slot of an earlier reopening does not pass the next one.
    assert_eq!(
        gate.admit(at(15_050), Ask::new(LEASE)),
        GateAdmission::Probe
    );
    gate.on_attempt_end(at(15_060), probe(ended(at(15_050))));
    assert_eq!(gate.admit(at(15_060), Ask::new(LEASE)), GateAdmission::Open);
    assert!(matches!(
        gate.admit(at(15_060), Ask::new(LEASE).holding(Some(held))),
        GateAdmission::Paced(_)
    ));
}

#[test]
fn the_gate_opens_for_all_once_the_pace_has_doubled_and_no_one_waits() {
    let gate = reopening_gate(Reopening::linear(ms(10_000)));
    assert_eq!(gate.admit(at(10_000), Ask::new(LEASE)), GateAdmission::Open);
    let _held = slot_of(gate.admit(at(10_000), Ask::new(LEASE)));
    // Before the pace doubled, a caller that finds the next slot free goes, at a pace still.
    assert_eq!(gate.admit(at(19_000), Ask::new(LEASE)), GateAdmission::Open);
    assert!(matches!(
        gate.state(at(19_000)),
        GateState::Reopening { .. }
    ));
    // 10 s in (the pace doubled) with no one waiting: open for all.
    assert_eq!(gate.admit(at(20_000), Ask::new(LEASE)), GateAdmission::Open);
    assert_eq!(gate.state(at(20_000)), GateState::Open);
}

#[test]
fn a_reopening_ramp_out_of_range_is_refused() {
    for bad in [
        Reopening::linear(Duration::ZERO),
        Reopening::doubling(Duration::from_secs(86_401)),
    ] {
        assert_eq!(
            OriginGate::new(GateConfig::new().reopening(bad)).err(),
            Some(GateConfigError::ReopeningOutOfRange)
        );
    }
}

#[test]
fn a_returning_caller_counts_once_in_the_closings_pace() {
    let gate = OriginGate::new(GateConfig::new().spread(Duration::ZERO)).unwrap();
    gate.on_attempt_end(at(0), back_off(at(0), ms(10_000)));
    // 50 callers, each asking twice while closed (the second time returning): 50, not 100.
    for i in 0..50 {
        assert_eq!(
            closed_at(gate.admit(at(i * 10), Ask::new(LEASE))),
            at(10_000)
        );
        let again = Ask::new(LEASE).returning(Some(at(i * 10)));
        assert_eq!(closed_at(gate.admit(at(i * 10 + 5), again)), at(10_000));
    }
    assert_eq!(
        gate.admit(at(10_000), Ask::new(LEASE)),
        GateAdmission::Probe
    );
    gate.on_attempt_end(at(10_000), probe(ended(at(10_000))));
    assert_eq!(gate.admit(at(10_000), Ask::new(LEASE)), GateAdmission::Open);
    // 10 s over 50 callers: 200 ms a slot.
    assert_eq!(
        slot_of(gate.admit(at(10_000), Ask::new(LEASE))).at,
        at(10_200)
    );
}

/// The ask of an operation the gate last held back at `held`, holding `slot` if it has one:
/// what a machine asks with when it comes back.
fn returning(held: Instant, slot: Option<Slot>) -> Ask {
    Ask::new(LEASE).holding(slot).returning(Some(held))
}

#[test]
fn operations_the_reopening_held_count_in_the_closing_that_cuts_it_short() {
    let gate = OriginGate::new(GateConfig::new().spread(Duration::ZERO)).unwrap();
    gate.on_attempt_end(at(0), back_off(at(0), ms(10_000)));
    // 50 operations held by a 10 s pause.
    for i in 0..50 {
        assert_eq!(
            closed_at(gate.admit(at(i * 10), Ask::new(LEASE))),
            at(10_000)
        );
    }
    // At its end, the first is the probe and succeeds: a reopening at 10 s / 50 = 200 ms.
    assert_eq!(
        gate.admit(at(10_000), returning(at(0), None)),
        GateAdmission::Probe
    );
    gate.on_attempt_end(at(10_000), probe(ended(at(10_000))));
    // The second goes at once; the 48 others are each given a slot of the reopening.
    assert_eq!(
        gate.admit(at(10_000), returning(at(10), None)),
        GateAdmission::Open
    );
    let slots: Vec<Slot> = (2..50)
        .map(|i| slot_of(gate.admit(at(10_000), returning(at(i * 10), None))))
        .collect();
    assert_eq!(slots[0].at, at(10_200));
    // The second one's answer is a second pushback, 10 s: the slots are void.
    gate.on_attempt_end(at(10_050), back_off(at(10_000), ms(10_000)));
    // Each of the 48 comes back at its slot, all within the closing, and is held; asking
    // again in the same closing, it is not counted again.
    for slot in &slots {
        assert!(slot.at < at(20_050), "{slot:?}");
        let answer = gate.admit(slot.at, returning(at(10_000), Some(*slot)));
        assert_eq!(closed_at(answer), at(20_050));
        assert_eq!(
            closed_at(gate.admit(slot.at, returning(slot.at, None))),
            at(20_050)
        );
    }
    assert_eq!(
        gate.admit(at(20_050), returning(slots[0].at, None)),
        GateAdmission::Probe
    );
    gate.on_attempt_end(at(20_050), probe(ended(at(20_050))));
    assert_eq!(
        gate.admit(at(20_050), returning(slots[1].at, None)),
        GateAdmission::Open
    );
    // The second reopening's pace: 10 s over the 48 operations that asked, not the slowest
    // start (1 s) of a closing nobody asked.
    let next = slot_of(gate.admit(at(20_050), returning(slots[2].at, None)));
    assert_eq!(
        next.at,
        at(20_050).saturating_add(Duration::from_nanos(10_000_000_000 / 48))
    );
    assert_eq!(
        next.at,
        at(20_050).saturating_add(Duration::from_nanos(208_333_333))
    );
}

#[test]
fn an_operation_the_half_open_gate_held_counts_in_the_closing_after_its_reopening() {
    let gate = OriginGate::new(GateConfig::new().spread(Duration::ZERO)).unwrap();
    gate.on_attempt_end(at(0), back_off(at(0), ms(1_000)));
    // At the pause's end, P is the probe and A awaits its answer.
    assert_eq!(gate.admit(at(1_000), Ask::new(LEASE)), GateAdmission::Probe);
    let recheck = awaits_until(gate.admit(at(1_000), Ask::new(LEASE)));
    gate.on_attempt_end(at(1_010), probe(ended(at(1_000))));
    // X goes, and its answer pauses the origin again for 1 s, before A asks again.
    assert_eq!(gate.admit(at(1_010), Ask::new(LEASE)), GateAdmission::Open);
    gate.on_attempt_end(at(1_020), back_off(at(1_010), ms(1_000)));
    assert!(recheck > at(1_020) && recheck < at(2_020), "{recheck:?}");
    // B, new, and A, back from the half-open's answer, ask in this closing: two operations.
    assert_eq!(closed_at(gate.admit(at(1_030), Ask::new(LEASE))), at(2_020));
    assert_eq!(
        closed_at(gate.admit(recheck, returning(at(1_000), None))),
        at(2_020)
    );
    assert_eq!(
        gate.admit(at(2_020), returning(at(1_030), None)),
        GateAdmission::Probe
    );
    gate.on_attempt_end(at(2_020), probe(ended(at(2_020))));
    assert_eq!(
        gate.admit(at(2_020), returning(recheck, None)),
        GateAdmission::Open
    );
    // 1 s over the two: 500 ms a slot.
    assert_eq!(
        slot_of(gate.admit(at(2_020), Ask::new(LEASE))).at,
        at(2_520)
    );
}

#[test]
fn a_gate_holds_nothing_back_once_its_pause_and_reopening_are_over() {
    // Closed at 1 s until 3 s, callers spread over the 200 ms after.
    let gate = closed_gate(GateConfig::new());
    assert!(!gate.holds_nothing_back(at(2_999)));
    // Half-open, but a caller told `Closed` may still be on its way back.
    assert!(!gate.holds_nothing_back(at(3_100)));
    assert!(gate.holds_nothing_back(at(3_200)));
    // A probe's lease runs: held back until the lease ends.
    assert_eq!(gate.admit(at(3_200), Ask::new(LEASE)), GateAdmission::Probe);
    assert!(!gate.holds_nothing_back(at(13_199)));
    assert!(gate.holds_nothing_back(at(13_200)));
}

#[test]
fn a_reopening_gate_holds_nothing_back_once_its_slots_are_past_and_its_pace_doubled() {
    // Reopening at 10 s (Linear over 10 s), one caller per 100 ms at first.
    let gate = reopening_gate(Reopening::DEFAULT);
    assert_eq!(gate.admit(at(10_000), Ask::new(LEASE)), GateAdmission::Open);
    let slot = slot_of(gate.admit(at(10_000), Ask::new(LEASE)));
    assert!(!gate.holds_nothing_back(slot.at));
    // Every slot past, but the pace has not doubled: the next callers still go one by one.
    assert!(!gate.holds_nothing_back(at(19_999)));
    assert!(gate.holds_nothing_back(at(20_000)));
    assert!(matches!(
        gate.state(at(20_000)),
        GateState::Reopening { .. }
    ));
    assert!(OriginGate::default().holds_nothing_back(at(0)));
}
