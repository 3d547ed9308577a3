//! A driver that follows every decision always finishes within the policy's bounds, retrying
//! or hedging. The machines' invariants over arbitrary event sequences are checked by the one
//! oracle, in the `backstop-oracle` crate (its `tests/properties.rs`), which the fuzzer shares.

use core::time::Duration;

use backstop_core::{
    AttemptError, Backoff, Decision, ErrorKind, Event, HedgeDecision, HedgeEvent, HedgeMachine,
    HedgeOutcome, Hedging, Instant, Jitter, Latencies, LatencyTracker, Method, NonIdempotent,
    Policy, Request, Response, RetryAfterAboveMax, RetryMachine, StopReason, Unlimited,
};
use proptest::prelude::*;
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

const STATUSES: [u16; 10] = [200, 204, 404, 408, 425, 429, 500, 503, 504, 999];

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        (1u32..7, 1u64..20_000, 1u64..6_000),
        (0usize..3, 0u64..2_000, 0u64..6_000, 0usize..4),
        (0u64..30_000, any::<bool>(), 0u64..2_000),
        (0usize..3, any::<bool>()),
        proptest::option::of(hedging()),
    )
        .prop_map(
            |(
                (attempts, elapsed, timeout),
                (kind, base, extra, jitter),
                (max_ra, clamp, spread),
                (non_idempotent, put),
                hedging,
            )| {
                let backoff = match kind {
                    0 => Backoff::exponential(ms(base), ms(base + extra)),
                    1 => Backoff::linear(ms(base), ms(base + extra)),
                    _ => Backoff::constant(ms(base)),
                };
                let jitter = [
                    Jitter::None,
                    Jitter::Full,
                    Jitter::Equal,
                    Jitter::Decorrelated,
                ][jitter];
                let mut b = Policy::builder()
                    .max_attempts(attempts)
                    .max_elapsed(ms(elapsed))
                    .attempt_timeout(ms(timeout))
                    .backoff(backoff)
                    .jitter(jitter)
                    .max_retry_after(ms(max_ra))
                    .retry_after_spread(ms(spread))
                    .non_idempotent(NonIdempotent::ALL[non_idempotent]);
                if clamp {
                    b = b.retry_after_above_max(RetryAfterAboveMax::Clamp);
                }
                if put {
                    b = b.add_retry_method(Method::Put);
                }
                if let Some(hedging) = hedging {
                    // The retry machine ignores it; `worst_case` must still bound it.
                    b = b.hedging(hedging);
                }
                b.build().expect("the strategy only builds valid policies")
            },
        )
}

/// A hedging policy's own settings: 2 to 10 copies (the cap raised above A6's 5), a fixed or
/// an adaptive delay.
fn hedging() -> impl Strategy<Value = Hedging> {
    (2u32..=10, 0u64..500, any::<bool>(), 1u8..=50, 0u32..20).prop_map(
        |(copies, delay, adaptive, load, min_samples)| {
            let hedging = if adaptive {
                Hedging::adaptive(load).min_samples(min_samples)
            } else {
                Hedging::fixed(ms(delay))
            };
            hedging.max_attempts(copies).allow_above_a6_cap()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    /// Within `Policy::worst_case` too, under a hedging policy as well: the retry machine
    /// (what `run` and the blocking clients drive) follows the policy's retry settings, and
    /// the bound holds for every path.
    #[test]
    fn a_driver_that_follows_every_decision_always_terminates_within_bounds(
        policy in policy(),
        seed in any::<u64>(),
        statuses in proptest::collection::vec((0..STATUSES.len(), proptest::option::of(0u8..3)), 1..12),
        latency_ms in 0u64..3_000,
    ) {
        let worst = policy.worst_case();
        let mut longest_wait = Duration::ZERO;
        let start = Instant::ZERO;
        let mut m = RetryMachine::new(policy, Request::new(Method::Get), Pcg64Mcg::seed_from_u64(seed), start);
        let mut now = start;
        let mut answers = statuses.iter().cycle();
        // Each loop turn either finishes, or starts an attempt, or passes a wait: bounded by
        // three turns per attempt.
        let mut outcome = None;
        for _ in 0..(3 * policy.max_attempts() as usize + 3) {
            match m.poll(now) {
                Decision::Send { timeout, .. } => {
                    m.handle(now, Event::AttemptStarted).expect("send pending");
                    let took = ms(latency_ms);
                    if took >= timeout {
                        now = now.saturating_add(timeout);
                    } else {
                        now = now.saturating_add(took);
                        let &(status, ra) = answers.next().expect("cycle");
                        let response = Response::new(STATUSES[status]);
                        let response = match ra {
                            Some(s) => response.retry_after(&b"0123"[usize::from(s)..][..1]),
                            None => response,
                        };
                        m.handle(now, Event::Response(response)).expect("in flight");
                        // A driver may skip its clock for a machine that is done: the final
                        // decision does not depend on the time.
                        prop_assert_eq!(m.is_done(), m.outcome().is_some());
                        if m.is_done() {
                            let later = now.saturating_add(Duration::from_secs(3_600));
                            prop_assert_eq!(m.clone().poll(now), m.clone().poll(later));
                        }
                    }
                }
                Decision::Wait { until, delay, .. } => {
                    longest_wait = longest_wait.max(delay);
                    now = until;
                }
                Decision::AwaitResponse { timeout_at, .. } => now = timeout_at,
                Decision::Return(o) | Decision::GiveUp(o) => { outcome = Some(o); break; }
                other => panic!("unknown decision {other:?}"),
            }
        }
        let o = outcome.expect("the machine finished within its bounds");
        prop_assert!(o.attempts >= 1 && o.attempts <= policy.max_attempts());
        prop_assert!(o.elapsed <= policy.max_elapsed());
        prop_assert!(o.attempts <= worst.attempts, "{o:?} sent more than {worst:?}");
        prop_assert!(o.elapsed <= worst.elapsed, "{o:?} took longer than {worst:?}");
        prop_assert!(longest_wait <= worst.wait, "waited {longest_wait:?}, above {worst:?}");
    }
}

/// A hedging policy ([`hedging`]) and the bounds the copies share.
fn hedging_policy() -> impl Strategy<Value = Policy> {
    (
        hedging(),
        (1u64..20_000, 1u64..6_000),
        (0u64..3_000, 0u64..1_000, any::<bool>()),
    )
        .prop_map(|(hedging, (elapsed, timeout), (max_ra, spread, clamp))| {
            let mut b = Policy::builder()
                .hedging(hedging)
                .max_elapsed(ms(elapsed))
                .attempt_timeout(ms(timeout))
                .max_retry_after(ms(max_ra))
                .retry_after_spread(ms(spread));
            if clamp {
                b = b.retry_after_above_max(RetryAfterAboveMax::Clamp);
            }
            b.build().expect("the strategy only builds valid policies")
        })
}

/// What a copy ends with: a status (with a `Retry-After` of some seconds, or none), or an error.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Status(u16, Option<u8>),
    Error(ErrorKind),
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        5 => (0..STATUSES.len(), proptest::option::of(0u8..3))
            .prop_map(|(i, ra)| Answer::Status(STATUSES[i], ra)),
        1 => proptest::sample::select(vec![
            ErrorKind::ConnectionReset, ErrorKind::Dns, ErrorKind::Timeout, ErrorKind::Tls,
        ])
        .prop_map(Answer::Error),
    ]
}

/// What a prompt driver of a hedged operation saw.
#[derive(Debug, PartialEq)]
struct Hedged {
    decisions: Vec<HedgeDecision>,
    outcome: HedgeOutcome,
    /// The most copies in flight at once.
    peak: u32,
    /// The copies whose answer was final, in the order they came.
    final_answers: Vec<u32>,
}

/// Drives a hedged GET to its end as a driver that acts on each decision as it comes: each
/// copy answers `latency` after it starts (in turn from `answers`), unless that is past its
/// timeout; the driver wakes at the end of each wait or at the next answer.
fn drive_hedged(policy: Policy, seed: u64, answers: &[(u64, Answer)], samples: u32) -> Hedged {
    let tracker = LatencyTracker::new(Duration::from_secs(30));
    for i in 0..samples {
        tracker.record(Instant::ZERO, ms(10 + u64::from(i % 7) * 5));
    }
    let mut m = HedgeMachine::with_budget(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(seed),
        Unlimited,
        &tracker,
        Instant::ZERO,
    );
    let mut now = Instant::ZERO;
    let mut next = answers.iter().cycle();
    // Copies in flight that will answer: (when, copy, answer).
    let mut pending: Vec<(Instant, u32, Answer)> = Vec::new();
    let mut decisions = Vec::new();
    let mut peak = 0;
    let mut final_answers = Vec::new();
    for _ in 0..10_000 {
        let d = m.poll(now);
        assert_eq!(m.poll(now), d, "two polls at the same time agree");
        decisions.push(d);
        match d {
            HedgeDecision::Send { copy, timeout, .. } => {
                m.handle(now, HedgeEvent::Started { copy })
                    .expect("send due");
                peak = peak.max(m.in_flight());
                let &(latency, answer) = next.next().expect("cycle");
                if ms(latency) < timeout {
                    pending.push((now.saturating_add(ms(latency)), copy, answer));
                }
            }
            HedgeDecision::Cancel { copy, .. } => {
                pending.retain(|p| p.1 != copy);
                m.handle(now, HedgeEvent::Cancelled { copy })
                    .expect("cancel due");
            }
            HedgeDecision::Wait { until, .. } => {
                pending.sort_by_key(|p| (p.0, p.1));
                match pending.first().copied() {
                    Some((at, copy, answer)) if at <= until => {
                        pending.remove(0);
                        now = now.max(at);
                        let event = match answer {
                            Answer::Status(status, ra) => {
                                if !policy.retryable_statuses().contains(status) {
                                    final_answers.push(copy);
                                }
                                let response = Response::new(status);
                                HedgeEvent::Response {
                                    copy,
                                    response: match ra {
                                        Some(s) => {
                                            response.retry_after(&b"0123"[usize::from(s)..][..1])
                                        }
                                        None => response,
                                    },
                                }
                            }
                            Answer::Error(kind) => HedgeEvent::Error {
                                copy,
                                error: AttemptError::new(kind),
                            },
                        };
                        m.handle(now, event).expect("the copy is in flight");
                    }
                    _ => now = until,
                }
            }
            HedgeDecision::Return(outcome) | HedgeDecision::GiveUp(outcome) => {
                assert_eq!(m.in_flight(), 0, "every copy is answered or cancelled");
                for later in [now, now.saturating_add(ms(1)), Instant::from_secs(1 << 20)] {
                    assert_eq!(m.poll(later), d, "a terminal decision repeats");
                }
                return Hedged {
                    decisions,
                    outcome,
                    peak,
                    final_answers,
                };
            }
            other => panic!("unknown decision {other:?}"),
        }
    }
    panic!("the hedged operation did not end: {:?}", decisions.last());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    /// The bounds of `Policy::worst_case` hold for a hedged operation whose driver acts on each
    /// decision as it comes: copies sent, copies in flight at once, time taken. One terminal
    /// outcome, with at most one winner: the first final answer; and the same inputs give the
    /// same decisions.
    #[test]
    fn a_driver_that_follows_every_hedging_decision_finishes_within_the_worst_case(
        policy in hedging_policy(),
        seed in any::<u64>(),
        answers in proptest::collection::vec((0u64..3_000, answer()), 1..12),
        samples in 0u32..30,
    ) {
        let worst = policy.worst_case();
        let run = drive_hedged(policy, seed, &answers, samples);
        let o = run.outcome;
        let copies = policy.hedging().expect("hedged").attempts();
        prop_assert!(o.outcome.attempts >= 1 && o.outcome.attempts <= copies);
        prop_assert!(o.outcome.attempts <= worst.attempts);
        prop_assert!(run.peak <= worst.in_flight);
        prop_assert!(o.outcome.elapsed <= worst.elapsed, "{o:?} took longer than {worst:?}");
        prop_assert!(o.outcome.elapsed <= policy.max_elapsed());
        // The first final answer wins; one terminal decision, and nothing sent after it.
        prop_assert_eq!(o.winner, run.final_answers.first().copied());
        prop_assert!(run.final_answers.len() <= 1, "a second final answer was taken");
        let sends = run.decisions.iter().filter(|d| matches!(d, HedgeDecision::Send { .. })).count();
        prop_assert_eq!(sends as u32, o.outcome.attempts);
        prop_assert_eq!(o.winner.is_some(), o.outcome.reason == StopReason::FinalStatus);
        prop_assert_eq!(drive_hedged(policy, seed, &answers, samples), run);
    }
}

/// What the overload oracle (`backstop-oracle`'s `overload` check, run by the `machine` fuzz
/// target and by proptest) found in the origin gate, the adaptive rate limiter and the retry
/// machine that consults them: one test per finding, each failing until it is fixed (the
/// oracle tolerates each, marked `KNOWN_*` in `oracle/src/overload/watch.rs`, so that the
/// fuzzer can look for anything else; drop the tolerance with the fix).
mod found_by_the_overload_oracle {
    use core::time::Duration;

    use backstop_core::{
        AdaptiveRateLimiter, Decision, DelaySource, Event, FailureRatio, GateCloseReason,
        GateConfig, GateState, Instant, Method, NoRateLimiter, OriginGate, Policy, RateLimiter,
        Request, Response, RetryMachine, SendReason, Unlimited,
    };
    use rand_core::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    const fn nanos(n: u64) -> Instant {
        Instant::from_duration(Duration::from_nanos(n))
    }

    /// The failure-ratio trip: "an open gate closes for the break when the window's failures
    /// reach the ratio over at least the minimum throughput". A 503 with `Retry-After: 0`
    /// (or an HTTP-date in the past) is a failure with a zero back-off: `on_attempt_end`
    /// counts it, then returns on `Some(back_off)` before the trip is evaluated, so a server
    /// that answers nothing else never trips the gate however many operations fail.
    #[test]
    fn failures_with_a_zero_retry_after_trip_the_gate_like_any_other() {
        let trip = FailureRatio::new()
            .minimum_throughput(3)
            .ratio_per_mille(500);
        let gate = OriginGate::new(GateConfig::new().failure_ratio(trip)).expect("valid");
        let policy = Policy::builder().max_attempts(1).build().expect("valid");
        let t = Instant::from_secs(1);
        for seed in 0..3 {
            let mut m = RetryMachine::with_overload(
                policy,
                Request::new(Method::Get),
                Pcg64Mcg::seed_from_u64(seed),
                Unlimited,
                &gate,
                NoRateLimiter,
                t,
            );
            assert!(matches!(m.poll(t), Decision::Send { .. }));
            m.handle(t, Event::AttemptStarted).expect("admitted");
            m.handle(t, Event::Response(Response::new(503).retry_after(b"0")))
                .expect("in flight");
        }
        assert_eq!(gate.failure_counts(t), (3, 3), "three failures counted");
        assert!(
            matches!(
                gate.state(t),
                GateState::Closed {
                    reason: GateCloseReason::FailureRatio,
                    ..
                }
            ),
            "three failures of three reach the ratio, yet {:?}",
            gate.state(t)
        );
    }

    /// The gate admits an attempt as its probe ("send, and report its end"), the limiter then
    /// refuses it, and the machine waits for the limiter. The gate recorded a probe in flight:
    /// when the token is there the operation is told to await that probe (its own), and every
    /// operation to the origin waits until the probe's lease (the attempt timeout) runs out,
    /// seconds after the server was ready and the token there.
    #[test]
    fn a_probe_the_limiter_holds_back_does_not_hold_the_origin_for_its_lease() {
        let gate = OriginGate::new(GateConfig::new().spread(Duration::ZERO)).expect("valid");
        let limiter = AdaptiveRateLimiter::new();
        let policy = Policy::builder()
            .max_elapsed(Duration::from_secs(60))
            .attempt_timeout(Duration::from_secs(10))
            .build()
            .expect("valid");
        let machine = |seed, now| {
            RetryMachine::with_overload(
                policy,
                Request::new(Method::Get),
                Pcg64Mcg::seed_from_u64(seed),
                Unlimited,
                &gate,
                &limiter,
                now,
            )
        };
        // A 429 with `Retry-After: 1` closes the gate for 1 s and turns the limiter on.
        let t0 = Instant::ZERO;
        let mut a = machine(1, t0);
        assert!(matches!(a.poll(t0), Decision::Send { .. }));
        a.handle(t0, Event::AttemptStarted).expect("admitted");
        a.handle(t0, Event::Response(Response::new(429).retry_after(b"1")))
            .expect("in flight");
        assert!(limiter.is_enabled());
        // At the reopening, B is the gate's probe, but the bucket is still empty.
        let mut b = machine(2, t0);
        let t1 = Instant::from_secs(1);
        let Decision::Wait { until, reason, .. } = b.poll(t1) else {
            panic!("the limiter holds the probe back")
        };
        assert_eq!(reason.source, DelaySource::RateLimited);
        assert!(until < Instant::from_secs(3), "{until:?}");
        // When the token is there, the probe goes.
        let d = b.poll(until);
        assert!(
            matches!(
                d,
                Decision::Send {
                    attempt: 1,
                    reason: SendReason::First,
                    ..
                }
            ),
            "the token is there and the origin is half-open with no probe in flight, yet {d:?} \
             (the gate: {:?})",
            gate.state(until)
        );
    }

    /// A refusal says when the bucket will hold a token, rounded up to the next nanosecond
    /// ("the token is there when it said", as the type's example asserts), but the refill
    /// at that instant, `capacity + dt * fill_rate` in floats, can fall short of 1 by an ulp:
    /// the caller is refused again and told to come back a nanosecond later (a second wait,
    /// and a give-up `RateLimited` if that nanosecond is the deadline).
    #[test]
    fn the_token_is_there_at_the_instant_a_refusal_gives() {
        let limiter = AdaptiveRateLimiter::new();
        limiter.on_response(nanos(324_723_773), true);
        let at = limiter.acquire(nanos(1_157_137_337)).expect_err("empty");
        assert_eq!(limiter.acquire(at), Ok(()));
        limiter.on_response(nanos(3_531_933_838), false);
        assert_eq!(limiter.acquire(nanos(4_402_338_532)), Ok(()));
        let at = limiter.acquire(nanos(4_478_274_345)).expect_err("taken");
        assert_eq!(
            limiter.acquire(at),
            Ok(()),
            "refused at {at:?}, the instant it gave; capacity {}",
            limiter.capacity()
        );
    }

    /// The same, over 200,000 pseudo-random sequences of responses and acquires (about one
    /// in 50,000 meets the rounding).
    #[test]
    fn every_refusal_gives_an_instant_at_which_the_token_is_there() {
        let mut x: u64 = 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut short = Vec::new();
        for _ in 0..200_000 {
            let limiter = AdaptiveRateLimiter::new();
            let mut now = 0u64;
            for _ in 0..12 {
                now += next() % 2_000_000_000;
                if next() % 3 == 0 {
                    limiter.on_response(nanos(now), next() % 2 == 0);
                } else if let Err(at) = limiter.acquire(nanos(now)) {
                    if limiter.acquire(at).is_err() {
                        short.push((at, limiter.capacity()));
                        break;
                    }
                    now = u64::try_from(at.as_duration().as_nanos()).expect("small");
                }
            }
        }
        assert_eq!(short, [], "refused at the instant a refusal gave");
    }
}
