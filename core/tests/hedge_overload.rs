//! The hedging machine with an origin gate and a send-rate limiter: one rule per test, each
//! named after the rule it checks (the retry machine's are in `overload_machine.rs`), on
//! virtual time.

use core::cell::Cell;
use core::time::Duration;

use backstop_core::{
    AdaptiveRateLimiter, Ask, AttemptOutcome, Budget, CancelReason, DelaySource, Gate,
    GateAdmission, GateConfig, GateSignal, GateState, HedgeDecision, HedgeEvent, HedgeMachine,
    HedgeTrigger, Hedging, Instant, Method, NoLatencies, OriginGate, Policy, RateLimiter,
    Reopening, Request, Response, StopReason, Unlimited,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

type Machine<'a, B = Unlimited> =
    HedgeMachine<Pcg64Mcg, B, NoLatencies, &'a OriginGate, &'a AdaptiveRateLimiter>;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn at(v: u64) -> Instant {
    Instant::from_millis(v)
}

/// Three copies, a 50 ms hedging delay, a 10 s attempt timeout, no spread above a server's
/// floor (waits are exact), a deadline `max_elapsed` after the start.
fn policy(max_elapsed: Duration) -> Policy {
    Policy::builder()
        .hedging(Hedging::fixed(ms(50)).max_attempts(3))
        .attempt_timeout(Duration::from_secs(10))
        .max_elapsed(max_elapsed)
        .retry_after_spread(Duration::ZERO)
        .build()
        .expect("a valid policy")
}

/// A gate that tells every caller the closing's end itself, open for all at a probe's success.
fn gate() -> OriginGate {
    OriginGate::new(
        GateConfig::new()
            .spread(Duration::ZERO)
            .reopening(Reopening::AtOnce),
    )
    .expect("a valid gate")
}

fn machine<'a, B: Budget>(
    policy: Policy,
    budget: B,
    gate: &'a OriginGate,
    limiter: &'a AdaptiveRateLimiter,
) -> Machine<'a, B> {
    HedgeMachine::with_overload(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(7),
        budget,
        NoLatencies,
        gate,
        limiter,
        Instant::ZERO,
    )
}

/// Another operation's answer at `now` closed the gate for `back_off`.
fn closed_by_another(gate: &OriginGate, now: Instant, back_off: Duration) {
    gate.on_attempt_end(
        now,
        GateSignal {
            started: now,
            back_off: Some(back_off),
            failed: true,
            probe: false,
        },
    );
}

/// Sends copy `copy`, which must be due at `now`, with `trigger`.
fn send<B: Budget>(m: &mut Machine<'_, B>, now: Instant, copy: u32, trigger: HedgeTrigger) {
    match m.poll(now) {
        HedgeDecision::Send {
            copy: c,
            trigger: t,
            ..
        } if (c, t) == (copy, trigger) => {}
        other => panic!("expected copy {copy} ({trigger}) at {now:?}, got {other}"),
    }
    m.handle(now, HedgeEvent::Started { copy })
        .expect("the copy is due");
}

fn wait_until<B: Budget>(m: &mut Machine<'_, B>, now: Instant) -> (Instant, u32) {
    match m.poll(now) {
        HedgeDecision::Wait { until, in_flight } => (until, in_flight),
        other => panic!("expected a wait at {now:?}, got {other}"),
    }
}

fn just_before(t: Instant) -> Instant {
    Instant::from_duration(t.as_duration() - Duration::from_nanos(1))
}

#[test]
fn a_backup_to_a_closed_origin_is_not_sent_until_the_reopening() {
    let (gate, limiter) = (gate(), AdaptiveRateLimiter::new());
    let mut m = machine(policy(Duration::from_secs(30)), Unlimited, &gate, &limiter);
    send(&mut m, at(0), 1, HedgeTrigger::First);
    closed_by_another(&gate, at(10), Duration::from_secs(2));

    // The hedging delay ends at 50 ms, inside the closing: the backup waits for its end
    // (the later of the two, not their sum) while copy 1 runs on.
    assert_eq!(wait_until(&mut m, at(50)), (at(2_010), 1));
    assert!(
        m.handle(at(1_000), HedgeEvent::Started { copy: 2 })
            .is_err(),
        "nothing is sent to a closed origin"
    );
    assert_eq!(wait_until(&mut m, just_before(at(2_010))), (at(2_010), 1));
    send(&mut m, at(2_010), 2, HedgeTrigger::Delay(ms(50)));
    assert_eq!(m.in_flight(), 2);
}

#[test]
fn the_first_copy_waits_for_a_closed_gate() {
    let (gate, limiter) = (gate(), AdaptiveRateLimiter::new());
    closed_by_another(&gate, at(0), Duration::from_secs(2));
    let mut m = machine(policy(Duration::from_secs(30)), Unlimited, &gate, &limiter);

    assert_eq!(wait_until(&mut m, at(0)), (at(2_000), 0));
    assert_eq!(m.next_deadline(), Some(at(2_000)));
    assert!(m.handle(at(0), HedgeEvent::Started { copy: 1 }).is_err());
    send(&mut m, at(2_000), 1, HedgeTrigger::First);
}

#[test]
fn a_copys_503_retry_after_closes_the_gate_and_the_next_copy_is_held_until_it_reopens() {
    let (gate, limiter) = (gate(), AdaptiveRateLimiter::new());
    let mut m = machine(policy(Duration::from_secs(30)), Unlimited, &gate, &limiter);
    send(&mut m, at(0), 1, HedgeTrigger::First);
    m.handle(
        at(10),
        HedgeEvent::Response {
            copy: 1,
            response: Response::new(503).retry_after(b"2"),
        },
    )
    .expect("copy 1 is in flight");
    assert!(matches!(gate.state(at(10)), GateState::Closed { until, .. } if until == at(2_010)));

    // The next copy waits for the reopening (the server's floor is the same instant), and is
    // then the gate's probe: one copy tests the origin, the others wait for its answer.
    assert_eq!(wait_until(&mut m, at(10)), (at(2_010), 0));
    assert!(m
        .handle(just_before(at(2_010)), HedgeEvent::Started { copy: 2 })
        .is_err());
    let trigger = HedgeTrigger::Answer {
        copy: 1,
        outcome: AttemptOutcome::Response(503),
        floor: Some(DelaySource::RetryAfter),
    };
    send(&mut m, at(2_010), 2, trigger);
    assert!(matches!(
        gate.admit(at(2_020), Ask::new(Duration::from_secs(10))),
        GateAdmission::AwaitProbe(_)
    ));
    // Another hedged operation, started meanwhile, sends nothing before the probe's answer.
    let mut other = machine(policy(Duration::from_secs(30)), Unlimited, &gate, &limiter);
    let (until, in_flight) = wait_until(&mut other, at(2_020));
    assert!(until > at(2_020) && in_flight == 0);
}

/// Counts the budget's grants and what goes back.
#[derive(Default)]
struct Books {
    asked: Cell<u32>,
    given_back: Cell<u32>,
}

impl Budget for &Books {
    fn try_retry(&self, _now: Instant, _cause: AttemptOutcome) -> bool {
        self.asked.set(self.asked.get() + 1);
        true
    }
    fn on_retry_cancelled(&self, _now: Instant, _granted_at: Instant, _cause: AttemptOutcome) {
        self.given_back.set(self.given_back.get() + 1);
    }
}

#[test]
fn a_held_copy_past_the_deadline_is_suppressed_with_origin_paused() {
    let (gate, limiter, books) = (gate(), AdaptiveRateLimiter::new(), Books::default());
    let mut m = machine(policy(Duration::from_secs(1)), &books, &gate, &limiter);
    send(&mut m, at(0), 1, HedgeTrigger::First);
    closed_by_another(&gate, at(10), Duration::from_secs(5));

    // The backup is paid for, then held past the deadline: not sent, its grant given back;
    // copy 1 runs on, until its timeout (the deadline).
    assert_eq!(wait_until(&mut m, at(50)), (at(1_000), 1));
    assert_eq!((books.asked.get(), books.given_back.get()), (1, 1));
    m.handle(
        at(100),
        HedgeEvent::Response {
            copy: 1,
            response: Response::new(500),
        },
    )
    .expect("copy 1 is in flight");
    let HedgeDecision::Return(done) = m.poll(at(100)) else {
        panic!("copy 1's answer is the last")
    };
    assert_eq!(done.outcome.reason, StopReason::OriginPaused);
    assert_eq!(
        (done.suppressed, done.suppressed_by),
        (2, Some(StopReason::OriginPaused))
    );
    assert_eq!(
        books.asked.get(),
        1,
        "a suppressed copy is not asked for again"
    );
}

#[test]
fn the_limiter_holds_a_backup() {
    let (gate, limiter) = (gate(), AdaptiveRateLimiter::new());
    let mut m = machine(policy(Duration::from_secs(30)), Unlimited, &gate, &limiter);
    send(&mut m, at(0), 1, HedgeTrigger::First);
    // Another operation was throttled: the limiter is on, its bucket empty.
    limiter.on_response(at(10), true);
    let refill = limiter.acquire(at(50)).expect_err("an empty bucket");

    assert_eq!(wait_until(&mut m, at(50)), (refill, 1));
    assert!(m
        .handle(just_before(refill), HedgeEvent::Started { copy: 2 })
        .is_err());
    send(&mut m, refill, 2, HedgeTrigger::Delay(ms(50)));
}

#[test]
fn the_probe_copys_success_reopens_the_gate() {
    let (gate, limiter) = (gate(), AdaptiveRateLimiter::new());
    closed_by_another(&gate, at(0), Duration::from_secs(2));
    let mut m = machine(policy(Duration::from_secs(30)), Unlimited, &gate, &limiter);
    assert_eq!(wait_until(&mut m, at(0)), (at(2_000), 0));

    send(&mut m, at(2_000), 1, HedgeTrigger::First);
    assert!(matches!(
        gate.state(at(2_000)),
        GateState::HalfOpen {
            probe_lease: Some(_),
            ..
        }
    ));
    m.handle(
        at(2_100),
        HedgeEvent::Response {
            copy: 1,
            response: Response::new(200),
        },
    )
    .expect("copy 1 is in flight");
    assert_eq!(gate.state(at(2_100)), GateState::Open);
    assert_eq!(gate.reopens(), 1);
}

#[test]
fn a_cancelled_probe_copy_hands_the_probe_back() {
    let (gate, limiter) = (gate(), AdaptiveRateLimiter::new());
    let mut m = machine(policy(Duration::from_secs(30)), Unlimited, &gate, &limiter);
    send(&mut m, at(0), 1, HedgeTrigger::First);
    closed_by_another(&gate, at(10), Duration::from_secs(1));
    assert_eq!(wait_until(&mut m, at(50)), (at(1_010), 1));
    // At the closing's end, the backup is the gate's probe.
    send(&mut m, at(1_010), 2, HedgeTrigger::Delay(ms(50)));
    let lease = Ask::new(Duration::from_secs(10));
    assert!(matches!(
        gate.admit(at(1_015), lease),
        GateAdmission::AwaitProbe(_)
    ));

    // Copy 1, sent before the closing, wins: the probe copy is cancelled with no answer, and
    // its probe goes back to the gate at once.
    m.handle(
        at(1_020),
        HedgeEvent::Response {
            copy: 1,
            response: Response::new(200),
        },
    )
    .expect("copy 1 is in flight");
    assert_eq!(
        m.poll(at(1_020)),
        HedgeDecision::Cancel {
            copy: 2,
            reason: CancelReason::Superseded { winner: 1 }
        }
    );
    assert_eq!(gate.admit(at(1_020), lease), GateAdmission::Probe);
}
