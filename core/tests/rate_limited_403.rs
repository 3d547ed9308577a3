//! A 403 whose quota is exhausted is a rate-limit answer (GitHub's primary limit: `403` with
//! `x-ratelimit-remaining: 0` and `x-ratelimit-reset`; its secondary limit: `403` with
//! `Retry-After`): retried after the reset, within the ceiling and the deadline, and it closes
//! the origin's gate. Any other 403 stays final. One rule per test.

use core::cell::Cell;
use core::time::Duration;

use backstop_core::{
    Ask, Decision, DelaySource, Event, Gate, GateAdmission, GateConfig, GateSignal, HedgeDecision,
    HedgeEvent, HedgeMachine, HedgeTrigger, Hedging, Instant, Method, NoGate, NoRateLimiter,
    OriginGate, Policy, RateLimiter, Request, Response, ResponseClass, RetryMachine, StopReason,
    UnixTime, Unlimited,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

mod support;
use support::{no_spread, Sim};

/// The wall clock when the answer arrives.
const NOW: u64 = 1_700_000_000;

/// GitHub's documented primary-limit answer, its quota resetting `secs` from `NOW`.
fn primary_limit(reset: &str) -> Response<'_> {
    Response::new(403)
        .x_rate_limit_remaining(b"0")
        .x_rate_limit_reset(reset.as_bytes())
        .wall_clock(UnixTime::from_secs(NOW))
}

fn reset_in(secs: u64) -> String {
    (NOW + secs).to_string()
}

/// What the machine decides after `response` to a first GET under `policy`.
fn after(policy: Policy, response: Response<'_>) -> Decision {
    let mut sim = Sim::get(policy);
    sim.start();
    sim.respond(response);
    sim.poll()
}

/// The wait's length and source, if the decision is a wait.
fn waited(d: Decision) -> Option<(Duration, DelaySource)> {
    match d {
        Decision::Wait { delay, reason, .. } => Some((delay, reason.source)),
        _ => None,
    }
}

/// The stop reason and attempts of a `Return`, if it is one.
fn returned(d: Decision) -> Option<(StopReason, u32)> {
    match d {
        Decision::Return(o) => Some((o.reason, o.attempts)),
        _ => None,
    }
}

#[test]
fn a_403_whose_quota_is_exhausted_is_retried_after_the_reset() {
    let reset = reset_in(10);
    let mut sim = Sim::get(no_spread());
    sim.start();
    sim.respond(primary_limit(&reset));
    assert_eq!(
        waited(sim.poll()),
        Some((Duration::from_secs(10), DelaySource::RateLimitReset))
    );
    sim.wait();
    assert_eq!(sim.start().0, 2, "the retry comes at the reset");
    sim.status(200);
    assert_eq!(returned(sim.poll()), Some((StopReason::FinalStatus, 2)));
}

#[test]
fn a_403_with_quota_left_or_without_quota_fields_is_final() {
    let reset = reset_in(10);
    let cases = [
        Response::new(403),
        // Quota left: an ordinary refusal that happens to carry the quota fields.
        Response::new(403)
            .x_rate_limit_remaining(b"59")
            .x_rate_limit_reset(reset.as_bytes())
            .wall_clock(UnixTime::from_secs(NOW)),
        Response::new(403).rate_limit(br#""default";r=5;t=10"#),
        Response::new(403)
            .rate_limit_remaining(b"1")
            .rate_limit_reset(b"10"),
        // A reset without a remaining field: a 429 says the quota is gone, a 403 does not.
        Response::new(403)
            .x_rate_limit_reset(reset.as_bytes())
            .wall_clock(UnixTime::from_secs(NOW)),
        // Exhausted, but no reset: nothing says when to come back.
        Response::new(403).x_rate_limit_remaining(b"0"),
    ];
    for response in cases {
        assert_eq!(
            returned(after(no_spread(), response)),
            Some((StopReason::FinalStatus, 1)),
            "{response:?}"
        );
    }
}

#[test]
fn a_403_with_an_exhausted_ietf_rate_limit_is_retried_after_its_reset() {
    let response = Response::new(403).rate_limit(br#""default";r=0;t=5"#);
    assert_eq!(
        waited(after(no_spread(), response)),
        Some((Duration::from_secs(5), DelaySource::RateLimitReset))
    );
}

#[test]
fn a_403_with_a_retry_after_is_retried_after_it() {
    // GitHub's secondary limit.
    let response = Response::new(403).retry_after(b"3");
    assert_eq!(
        waited(after(no_spread(), response)),
        Some((Duration::from_secs(3), DelaySource::RetryAfter))
    );
}

#[test]
fn a_403_reset_above_the_ceiling_gives_up_at_once_as_a_429_does() {
    // The ceiling is 60 s by default.
    let reset = reset_in(3_600);
    let forbidden = after(no_spread(), primary_limit(&reset));
    assert_eq!(
        returned(forbidden),
        Some((StopReason::RetryAfterAboveMax, 1))
    );
    let mut too_many = primary_limit(&reset);
    too_many.status = 429;
    assert_eq!(returned(after(no_spread(), too_many)), returned(forbidden));
}

#[test]
fn a_403_reset_past_the_deadline_gives_up_at_once() {
    let reset = reset_in(30);
    let short = Policy::builder()
        .max_elapsed(Duration::from_secs(20))
        .build()
        .unwrap();
    assert_eq!(
        returned(after(short, primary_limit(&reset))),
        Some((StopReason::Deadline, 1))
    );
}

#[test]
fn with_the_rate_limit_fields_off_a_403_is_final() {
    let off = Policy::builder().rate_limit_fields(false).build().unwrap();
    let reset = reset_in(10);
    for response in [
        primary_limit(&reset),
        Response::new(403).rate_limit(br#""default";r=0;t=5"#),
        Response::new(403).retry_after(b"3"),
    ] {
        assert_eq!(
            returned(after(off, response)),
            Some((StopReason::FinalStatus, 1)),
            "{response:?}"
        );
    }
}

#[test]
fn the_callers_class_wins_over_the_rate_limit_rule() {
    let reset = reset_in(10);
    let response = primary_limit(&reset).class(ResponseClass::Final);
    assert_eq!(
        returned(after(no_spread(), response)),
        Some((StopReason::FinalStatus, 1))
    );
}

/// A gate that records the signals it is given, and admits everything.
#[derive(Default)]
struct Signals(Cell<Option<GateSignal>>);

impl Gate for &Signals {
    fn admit(&self, _now: Instant, _ask: Ask) -> GateAdmission {
        GateAdmission::Open
    }
    fn on_attempt_end(&self, _now: Instant, signal: GateSignal) {
        self.0.set(Some(signal));
    }
}

/// The signal a gate hears of `response` to a first GET.
fn signal_of(response: Response<'_>) -> GateSignal {
    signal_under(Policy::default(), response)
}

/// The signal a gate hears of `response` to a first GET under `policy`.
fn signal_under(policy: Policy, response: Response<'_>) -> GateSignal {
    let signals = Signals::default();
    let mut m = RetryMachine::with_overload(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(1),
        Unlimited,
        &signals,
        NoRateLimiter,
        Instant::ZERO,
    );
    assert!(matches!(m.poll(Instant::ZERO), Decision::Send { .. }));
    m.handle(Instant::ZERO, Event::AttemptStarted).unwrap();
    m.handle(Instant::ZERO, Event::Response(response)).unwrap();
    signals.0.get().expect("the gate heard of the attempt")
}

#[test]
fn a_403_whose_quota_is_exhausted_closes_the_origin_gate_until_the_reset() {
    let reset = reset_in(10);
    let signal = signal_of(primary_limit(&reset));
    assert_eq!(
        (signal.back_off, signal.failed),
        (Some(Duration::from_secs(10)), true)
    );
    let signal = signal_of(Response::new(403).retry_after(b"3"));
    assert_eq!(
        (signal.back_off, signal.failed),
        (Some(Duration::from_secs(3)), true)
    );
    // A plain 403 is an answer like a 404: no back-off, no failure.
    let signal = signal_of(Response::new(403));
    assert_eq!((signal.back_off, signal.failed), (None, false));

    // On a real gate: another operation to the origin waits for the reset.
    let gate = OriginGate::new(GateConfig::new().spread(Duration::ZERO)).unwrap();
    let machine = |now| {
        RetryMachine::with_overload(
            Policy::default(),
            Request::new(Method::Get),
            Pcg64Mcg::seed_from_u64(1),
            Unlimited,
            &gate,
            NoRateLimiter,
            now,
        )
    };
    let mut a = machine(Instant::ZERO);
    assert!(matches!(a.poll(Instant::ZERO), Decision::Send { .. }));
    a.handle(Instant::ZERO, Event::AttemptStarted).unwrap();
    a.handle(Instant::ZERO, Event::Response(primary_limit(&reset)))
        .unwrap();
    let mut b = machine(Instant::from_secs(1));
    let Decision::Wait { until, reason, .. } = b.poll(Instant::from_secs(1)) else {
        panic!("an exhausted quota on a 403 pauses the origin")
    };
    assert!(until >= Instant::from_secs(10), "{until:?}");
    assert_eq!(reason.source, DelaySource::OriginPaused);
}

/// A limiter that records whether it was told of a throttle, and admits everything.
#[derive(Default)]
struct Throttles(Cell<Option<bool>>);

impl RateLimiter for &Throttles {
    fn acquire(&self, _now: Instant) -> Result<(), Instant> {
        Ok(())
    }
    fn on_response(&self, _now: Instant, throttled: bool) {
        self.0.set(Some(throttled));
    }
}

#[test]
fn a_403_whose_quota_is_exhausted_is_a_throttle_for_the_rate_limiter() {
    let throttled = |response: Response<'_>| {
        let throttles = Throttles::default();
        let mut m = RetryMachine::with_overload(
            Policy::default(),
            Request::new(Method::Get),
            Pcg64Mcg::seed_from_u64(1),
            Unlimited,
            NoGate,
            &throttles,
            Instant::ZERO,
        );
        assert!(matches!(m.poll(Instant::ZERO), Decision::Send { .. }));
        m.handle(Instant::ZERO, Event::AttemptStarted).unwrap();
        m.handle(Instant::ZERO, Event::Response(response)).unwrap();
        throttles
            .0
            .get()
            .expect("the limiter heard of the response")
    };
    let reset = reset_in(10);
    assert!(throttled(primary_limit(&reset)));
    assert!(throttled(Response::new(403).retry_after(b"3")));
    assert!(!throttled(Response::new(403)));
    assert!(!throttled(
        Response::new(403).rate_limit(br#""default";r=5;t=10"#)
    ));
}

#[test]
fn a_403_whose_quota_is_exhausted_is_not_final_for_a_hedged_copy() {
    let policy = Policy::builder()
        .hedging(Hedging::fixed(Duration::from_millis(50)).max_attempts(2))
        .retry_after_spread(Duration::ZERO)
        .build()
        .unwrap();
    let mut m = first_copy_in_flight(policy);
    let now = Instant::from_millis(10);
    let response = Response::new(403).rate_limit(br#""default";r=0;t=3"#);
    m.handle(now, HedgeEvent::Response { copy: 1, response })
        .unwrap();
    assert_eq!(
        m.poll(now),
        HedgeDecision::Wait {
            until: Instant::from_millis(3_010),
            in_flight: 0
        },
        "the next copy waits for the reset"
    );
    let HedgeDecision::Send { copy, trigger, .. } = m.poll(Instant::from_millis(3_010)) else {
        panic!("the next copy goes at the reset")
    };
    assert_eq!(copy, 2);
    assert!(matches!(
        trigger,
        HedgeTrigger::Answer {
            floor: Some(DelaySource::RateLimitReset),
            ..
        }
    ));
}

#[test]
fn a_plain_403_wins_for_a_hedged_copy() {
    let policy = Policy::builder()
        .hedging(Hedging::fixed(Duration::from_millis(50)).max_attempts(2))
        .build()
        .unwrap();
    let mut m = first_copy_in_flight(policy);
    let response = Response::new(403);
    m.handle(Instant::ZERO, HedgeEvent::Response { copy: 1, response })
        .unwrap();
    assert!(matches!(m.poll(Instant::ZERO), HedgeDecision::Return(_)));
}

/// A hedged GET under `policy`, made at 0, whose first copy started then.
fn first_copy_in_flight(policy: Policy) -> HedgeMachine<Pcg64Mcg> {
    let mut m = HedgeMachine::new(
        policy,
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(7),
        Instant::ZERO,
    );
    assert!(matches!(
        m.poll(Instant::ZERO),
        HedgeDecision::Send { copy: 1, .. }
    ));
    m.handle(Instant::ZERO, HedgeEvent::Started { copy: 1 })
        .unwrap();
    m
}

#[test]
fn a_403_rate_limit_answer_follows_the_429s_setting() {
    let reset = reset_in(10);
    let no_429 = Policy::builder()
        .remove_retryable_status(429)
        .retry_after_spread(Duration::ZERO)
        .build()
        .unwrap();
    for forbidden in [
        primary_limit(&reset),
        Response::new(403).rate_limit(br#""default";r=0;t=5"#),
        Response::new(403).retry_after(b"3"),
    ] {
        let mut too_many = forbidden;
        too_many.status = 429;
        // Final as the 429 is, not waited out.
        assert_eq!(
            returned(after(no_429, forbidden)),
            Some((StopReason::FinalStatus, 1)),
            "{forbidden:?}"
        );
        assert_eq!(
            returned(after(no_429, too_many)),
            returned(after(no_429, forbidden))
        );
        // And the gate hears the same pushback of both.
        let heard = |response: Response<'_>| {
            let signal = signal_under(no_429, response);
            (signal.back_off, signal.failed)
        };
        assert_eq!(heard(forbidden), heard(too_many), "{forbidden:?}");
    }
    // With 429 retried (the default), the 403 is waited out as the 429 is.
    assert!(waited(after(no_spread(), primary_limit(&reset))).is_some());
}
