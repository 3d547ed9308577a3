//! An adaptive hedging delay keeps the extra load under its bound: with
//! `Hedging::adaptive(p)`, at most `p` % of the operations send a copy on the delay. Whole
//! minutes of traffic on virtual time, through one shared `LatencyTracker`, each copy's
//! latency drawn from a seeded long-tailed distribution.

use core::time::Duration;

use backstop_core::{
    HedgeDecision, HedgeEvent, HedgeMachine, HedgeTrigger, Hedging, Instant, LatencyTracker,
    Method, Policy, Request, Response, Unlimited,
};
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Operations per run; the first `WARM_UP` (the tracker filling, then its delay settling) are
/// not counted.
const OPERATIONS: u32 = 20_000;
const WARM_UP: u32 = 2_000;

/// The sampling noise allowed above the bound, in percentage points: the share of 18,000
/// operations has a standard deviation below 0.4 points at 50 %, and the percentile is read
/// from a window of about 1,000 samples.
const TOLERANCE: f64 = 1.0;

/// A copy's latency: 5 ms plus an exponential of mean 20 ms, in whole microseconds.
fn latency(rng: &mut Pcg64Mcg) -> Duration {
    // A uniform in (0, 1]: 53 random bits.
    let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let micros = 5_000.0 - 20_000.0 * u.ln();
    Duration::from_micros(micros as u64)
}

/// Runs `OPERATIONS` hedged GETs one after another (a millisecond apart) through one tracker,
/// each copy answering 200 after its own latency; returns the share of the counted operations
/// that sent a copy on the delay, in percent.
fn hedged_share(percent: u8, seed: u64) -> f64 {
    let policy = Policy::builder()
        .hedging(Hedging::adaptive(percent))
        .build()
        .expect("a valid policy");
    let tracker = LatencyTracker::new(Duration::from_secs(30));
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut now = Instant::ZERO;
    let mut hedged = 0u32;
    for op in 0..OPERATIONS {
        let mut m = HedgeMachine::with_budget(
            policy,
            Request::new(Method::Get),
            Pcg64Mcg::seed_from_u64(u64::from(op)),
            Unlimited,
            &tracker,
            now,
        );
        // Copies in flight: (when it answers, copy).
        let mut pending: Vec<(Instant, u32)> = Vec::new();
        let mut on_delay = false;
        loop {
            match m.poll(now) {
                HedgeDecision::Send { copy, trigger, .. } => {
                    on_delay |= matches!(trigger, HedgeTrigger::Delay(_));
                    m.handle(now, HedgeEvent::Started { copy })
                        .expect("a send is due");
                    pending.push((now.saturating_add(latency(&mut rng)), copy));
                }
                HedgeDecision::Cancel { copy, .. } => {
                    pending.retain(|p| p.1 != copy);
                    m.handle(now, HedgeEvent::Cancelled { copy })
                        .expect("a cancel is due");
                }
                HedgeDecision::Wait { until, .. } => {
                    pending.sort();
                    match pending.first().copied() {
                        Some((at, copy)) if at <= until => {
                            pending.remove(0);
                            now = now.max(at);
                            let response = Response::new(200);
                            m.handle(now, HedgeEvent::Response { copy, response })
                                .expect("the copy is in flight");
                        }
                        _ => now = until,
                    }
                }
                HedgeDecision::Return(_) | HedgeDecision::GiveUp(_) => break,
                other => panic!("a decision this driver does not know: {other:?}"),
            }
        }
        if op >= WARM_UP && on_delay {
            hedged += 1;
        }
        now = now.saturating_add(Duration::from_millis(1));
    }
    f64::from(hedged) * 100.0 / f64::from(OPERATIONS - WARM_UP)
}

#[test]
fn adaptive_hedging_keeps_the_extra_load_under_its_bound() {
    let mut shares = Vec::new();
    for percent in [5u8, 25, 50] {
        let share = hedged_share(percent, u64::from(percent));
        shares.push((percent, share));
    }
    println!("hedged share per bound (percent): {shares:.2?}");
    for &(percent, share) in &shares {
        assert!(
            share <= f64::from(percent) + TOLERANCE,
            "Hedging::adaptive({percent}) hedged {share:.2} % of the operations \
             (all: {shares:.2?})"
        );
    }
    // And hedging does happen: the delay is the percentile, not a never-reached bound.
    for &(percent, share) in &shares {
        assert!(
            share >= f64::from(percent) / 2.0,
            "Hedging::adaptive({percent}) hedged only {share:.2} % (all: {shares:.2?})"
        );
    }
}
