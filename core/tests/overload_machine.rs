//! The retry machine with an origin gate: one rule per test, each named after the rule it
//! checks (the gate's own rules are in `origin_gate.rs`, the limiter's in
//! `client_rate_limiter.rs`).

use core::time::Duration;

use backstop_core::{
    Decision, DelaySource, Event, GateConfig, Instant, Method, OriginGate, Policy, Request,
    Response, RetryMachine, SendReason, StopReason, Unlimited,
};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;

mod support;
use support::{gated as machine, Gated as Machine};

fn gate() -> OriginGate {
    OriginGate::new(GateConfig::new().spread(Duration::ZERO)).expect("a valid gate")
}

fn policy() -> Policy {
    Policy::builder()
        .max_elapsed(Duration::from_secs(60))
        .build()
        .expect("a valid policy")
}

const fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

/// Sends the attempt due at `now` and answers it with `response`.
fn answer(m: &mut Machine<'_>, now: Instant, response: Response<'_>) {
    let decision = m.poll(now);
    assert!(matches!(decision, Decision::Send { .. }), "{decision}");
    m.handle(now, Event::AttemptStarted)
        .expect("a send was due");
    m.handle(now, Event::Response(response)).expect("in flight");
}

#[test]
fn a_503_with_retry_after_pauses_a_new_operation_to_the_origin() {
    let gate = gate();
    let mut a = machine(policy(), &gate, secs(0), 1);
    answer(&mut a, secs(0), Response::new(503).retry_after(b"10"));

    // Another operation to the same origin, started after the 503: it waits for the reopening
    // before its first attempt, with no cause of its own.
    let mut b = machine(policy(), &gate, secs(1), 2);
    let Decision::Wait { until, reason, .. } = b.poll(secs(1)) else {
        panic!("a paused origin makes a new operation wait")
    };
    assert!(until >= secs(10), "{until:?}");
    assert_eq!(
        (reason.source, reason.cause, reason.next_attempt),
        (DelaySource::OriginPaused, None, 1)
    );
    assert!(
        b.handle(secs(5), Event::AttemptStarted).is_err(),
        "nothing starts before the reopening"
    );
    // At the reopening it is the probe, and its first attempt is a first attempt.
    assert!(matches!(
        b.poll(until),
        Decision::Send {
            attempt: 1,
            reason: SendReason::First,
            ..
        }
    ));
}

#[test]
fn a_new_operation_gives_up_when_the_origin_reopens_past_its_deadline() {
    let gate = gate();
    let mut a = machine(policy(), &gate, secs(0), 1);
    answer(&mut a, secs(0), Response::new(429).retry_after(b"30"));

    let short = Policy::builder()
        .max_elapsed(Duration::from_secs(5))
        .build()
        .expect("a valid policy");
    let mut b = machine(short, &gate, secs(1), 2);
    let Decision::GiveUp(outcome) = b.poll(secs(1)) else {
        panic!("the gate reopens after the deadline")
    };
    assert_eq!(
        (outcome.reason, outcome.attempts, outcome.last),
        (StopReason::OriginPaused, 0, None)
    );
}

#[test]
fn fail_fast_when_paused_gives_up_at_once() {
    let gate = gate();
    let mut a = machine(policy(), &gate, secs(0), 1);
    answer(&mut a, secs(0), Response::new(503).retry_after(b"2"));

    let fail_fast = Policy::builder()
        .max_elapsed(Duration::from_secs(60))
        .fail_fast_when_paused(true)
        .build()
        .expect("a valid policy");
    let mut b = machine(fail_fast, &gate, secs(1), 2);
    let Decision::GiveUp(outcome) = b.poll(secs(1)) else {
        panic!("fail fast")
    };
    assert_eq!(outcome.reason, StopReason::OriginPaused);
}

#[test]
fn a_pending_retry_is_floored_at_the_reopening() {
    let gate = gate();
    // B's first attempt fails with a plain 500: a short backoff.
    let mut b = machine(policy(), &gate, secs(0), 2);
    answer(&mut b, secs(0), Response::new(500));
    let Decision::Wait {
        until: backoff_end, ..
    } = b.poll(secs(0))
    else {
        panic!("a backoff")
    };
    assert!(backoff_end < secs(1));
    // Meanwhile A's 503 closes the gate for 20 s.
    let mut a = machine(policy(), &gate, secs(0), 1);
    answer(&mut a, secs(0), Response::new(503).retry_after(b"20"));
    // B's backoff ends: its retry is held until the reopening, keeping its cause.
    let Decision::Wait { until, reason, .. } = b.poll(backoff_end) else {
        panic!("the retry waits for the gate")
    };
    assert!(until >= secs(20), "{until:?}");
    assert_eq!(reason.source, DelaySource::OriginPaused);
    assert_eq!(
        reason.cause,
        Some(backstop_core::AttemptOutcome::Response(500))
    );
    assert!(matches!(b.poll(until), Decision::Send { attempt: 2, .. }));
}

#[test]
fn the_probe_answers_for_everyone_and_a_success_reopens_the_origin() {
    let gate = gate();
    let mut a = machine(policy(), &gate, secs(0), 1);
    answer(&mut a, secs(0), Response::new(503).retry_after(b"10"));

    let mut probe = machine(policy(), &gate, secs(1), 2);
    let mut other = machine(policy(), &gate, secs(1), 3);
    // At the reopening the first to ask is the probe; the other awaits its answer.
    assert!(matches!(probe.poll(secs(10)), Decision::Send { .. }));
    probe
        .handle(secs(10), Event::AttemptStarted)
        .expect("admitted");
    let Decision::Wait { reason, until, .. } = other.poll(secs(10)) else {
        panic!("the probe is in flight")
    };
    assert_eq!(reason.source, DelaySource::OriginPaused);
    // The probe's 200 opens the gate: the other one sends when it asks again.
    probe
        .handle(secs(10), Event::Response(Response::new(200)))
        .expect("in flight");
    assert!(matches!(
        other.poll(until),
        Decision::Send { attempt: 1, .. }
    ));
}

#[test]
fn a_probe_that_is_told_to_back_off_again_closes_the_origin_again() {
    let gate = gate();
    let mut a = machine(policy(), &gate, secs(0), 1);
    answer(&mut a, secs(0), Response::new(503).retry_after(b"10"));
    let mut probe = machine(policy(), &gate, secs(1), 2);
    answer(&mut probe, secs(10), Response::new(503).retry_after(b"10"));
    let mut late = machine(policy(), &gate, secs(11), 3);
    let Decision::Wait { until, .. } = late.poll(secs(11)) else {
        panic!("closed again")
    };
    assert!(until >= secs(20), "{until:?}");
}

#[test]
fn the_gate_is_told_of_a_rate_limit_quota_that_ran_out() {
    let gate = gate();
    let mut a = machine(policy(), &gate, secs(0), 1);
    answer(
        &mut a,
        secs(0),
        Response::new(429).rate_limit(b"\"default\";r=0;t=7"),
    );
    let mut b = machine(policy(), &gate, secs(1), 2);
    let Decision::Wait { until, .. } = b.poll(secs(1)) else {
        panic!("an exhausted quota pauses the origin")
    };
    assert!(until >= secs(7), "{until:?}");
}

#[test]
fn a_retry_after_above_the_ceiling_pauses_the_origin_only_up_to_the_ceiling() {
    let gate = gate();
    let mut a = machine(policy(), &gate, secs(0), 1);
    // The policy's ceiling is 60 s (the default).
    answer(&mut a, secs(0), Response::new(503).retry_after(b"3600"));
    let long = Policy::builder()
        .max_elapsed(Duration::from_secs(120))
        .build()
        .expect("a valid policy");
    let mut b = machine(long, &gate, secs(1), 2);
    let Decision::Wait { until, .. } = b.poll(secs(1)) else {
        panic!("paused up to the ceiling")
    };
    assert!(until >= secs(60) && until <= secs(61), "{until:?}");
}

#[test]
fn an_operation_that_began_before_a_closing_is_held_at_its_next_attempt_and_never_earlier() {
    let gate = gate();
    let mut a = machine(policy(), &gate, secs(0), 1);
    let mut b = machine(policy(), &gate, secs(0), 2);
    // B's first attempt is in flight when A's 503 closes the gate: it is not cut short.
    assert!(matches!(b.poll(secs(0)), Decision::Send { .. }));
    b.handle(secs(0), Event::AttemptStarted).expect("admitted");
    answer(&mut a, secs(0), Response::new(503).retry_after(b"10"));
    b.handle(secs(1), Event::Response(Response::new(200)))
        .expect("in flight");
    let Decision::Return(outcome) = b.poll(secs(1)) else {
        panic!("B's answer stands")
    };
    assert_eq!(outcome.reason, StopReason::FinalStatus);
}

/// A gate closed by a 503 at 0 s (`Retry-After: 10`) that `askers` operations found closed,
/// reopened by a new operation's probe at 10 s: reopening at one operation per
/// `10 s / askers`.
fn reopening<'g>(gate: &'g OriginGate, askers: u64) -> Vec<Machine<'g>> {
    let mut first = machine(policy(), gate, secs(0), 1);
    answer(&mut first, secs(0), Response::new(503).retry_after(b"10"));
    let held: Vec<Machine<'g>> = (0..askers)
        .map(|i| {
            let mut m = machine(policy(), gate, secs(0), 10 + i);
            assert!(matches!(m.poll(secs(0)), Decision::Wait { .. }));
            m
        })
        .collect();
    // A new operation at 10 s is the probe; it succeeds.
    let mut probe = machine(policy(), gate, secs(10), 2);
    answer(&mut probe, secs(10), Response::new(200));
    assert!(matches!(
        gate.state(secs(10)),
        backstop_core::GateState::Reopening { .. }
    ));
    held
}

#[test]
fn held_operations_go_one_by_one_at_the_reopenings_pace() {
    let gate = gate();
    // 100 operations held while closed: 10 s / 100 = 100 ms a slot.
    let mut held = reopening(&gate, 100);
    let mut sends = Vec::new();
    for m in &mut held {
        // Each asks at 10 s; it is told its own slot, then sends at it without asking again.
        match m.poll(secs(10)) {
            Decision::Send { .. } => sends.push(secs(10)),
            Decision::Wait { until, reason, .. } => {
                assert_eq!(reason.source, DelaySource::OriginPaused);
                let Decision::Send { attempt: 1, .. } = m.poll(until) else {
                    panic!("the holder of a slot sends at it")
                };
                sends.push(until);
            }
            other => panic!("{other}"),
        }
    }
    assert_eq!(sends[0], secs(10));
    assert_eq!(sends[1], Instant::from_millis(10_100));
    // 100 sends over about 8 s (the pace grows), not at once.
    assert!(sends[99] > Instant::from_millis(17_000), "{:?}", sends[99]);
}

#[test]
fn an_operation_whose_slot_is_past_its_deadline_gives_up_at_once_and_takes_no_slot() {
    let gate = gate();
    let mut held = reopening(&gate, 100);
    // Slots for the first 50 operations: past 14 s.
    for m in held.iter_mut().take(50) {
        let _ = m.poll(secs(10));
    }
    // An operation that must end by 12 s cannot reach its slot: it gives up now, at 10 s.
    let short = Policy::builder()
        .max_elapsed(Duration::from_secs(2))
        .build()
        .expect("a valid policy");
    let mut late = machine(short, &gate, secs(10), 7);
    let Decision::GiveUp(outcome) = late.poll(secs(10)) else {
        panic!("its slot is past its deadline")
    };
    assert_eq!(
        (outcome.reason, outcome.attempts, outcome.elapsed),
        (StopReason::OriginPaused, 0, Duration::ZERO)
    );
    // The slot it was told went to the next operation that could use it.
    let Decision::Wait { until: next, .. } = held[50].poll(secs(10)) else {
        panic!("the backlog waits")
    };
    let Decision::Wait { until: before, .. } = held[49].poll(secs(10)) else {
        panic!("still waiting")
    };
    assert!(next > before && next.saturating_duration_since(before) < Duration::from_millis(100));
}

/// Refuses its first `refusals` asks (for 10 ms each), then gives every token.
struct RefusesFirst(core::cell::Cell<u32>);

impl backstop_core::RateLimiter for RefusesFirst {
    fn acquire(&self, now: Instant) -> Result<(), Instant> {
        match self.0.get() {
            0 => Ok(()),
            n => {
                self.0.set(n - 1);
                Err(now.saturating_add(Duration::from_millis(10)))
            }
        }
    }
    fn on_response(&self, _: Instant, _: bool) {}
}

/// A slot is spent when the gate admits its holder, even if the limiter then holds the
/// attempt back: the operation queues again for a new slot. Kept instead, the limiter's
/// waiters went past the gate's pace whenever the limiter had tokens (the fleet experiment
/// with the limiter: 161,309 requests answered 503 for capacity and 72.7 waits per operation,
/// against 17,828 and 1.55).
#[test]
fn a_slot_the_limiter_holds_back_is_spent_and_the_operation_queues_again() {
    let gate = gate();
    let mut held = reopening(&gate, 100);
    for m in held.iter_mut().take(20) {
        let _ = m.poll(secs(10));
    }
    let limiter = RefusesFirst(core::cell::Cell::new(1));
    let mut m = RetryMachine::with_overload(
        policy(),
        Request::new(Method::Get),
        Pcg64Mcg::seed_from_u64(99),
        Unlimited,
        &gate,
        &limiter,
        secs(10),
    );
    let Decision::Wait { until: slot, .. } = m.poll(secs(10)) else {
        panic!("a slot behind the 20")
    };
    let Decision::Wait { until, reason, .. } = m.poll(slot) else {
        panic!("the limiter holds it at its slot")
    };
    assert_eq!(reason.source, DelaySource::RateLimited);
    // When the limiter would give the token, it is behind the slots given meanwhile.
    let another = held.get_mut(20).map(|m| m.poll(secs(10)));
    let Some(Decision::Wait { until: other, .. }) = another else {
        panic!("the queue goes on")
    };
    let Decision::Wait {
        until: again,
        reason,
        ..
    } = m.poll(until)
    else {
        panic!("queued again for a new slot")
    };
    assert_eq!(reason.source, DelaySource::OriginPaused);
    assert!(again > other, "{again:?} after {other:?}");
}
