//! A probe that its operation never sends (aborted between the gate's admission and the send)
//! hands the origin back at once: the next operation may probe, where it used to wait for the
//! probe's whole lease. (A probe whose operation runs out of time needs nothing: its lease is
//! cut at the operation's deadline.)

use core::time::Duration;

use backstop_core::{
    Ask, Decision, DelaySource, Event, Gate, GateAdmission, GateConfig, GateSignal, GateState,
    Instant, OriginGate, Policy, Response,
};

mod support;
use support::gated as machine;

const HOUR: Duration = Duration::from_secs(3_600);

/// An hour's attempt timeout (the probe's lease), within a two hours' deadline.
fn policy() -> Policy {
    Policy::builder()
        .attempt_timeout(HOUR)
        .max_elapsed(2 * HOUR)
        .build()
        .expect("a valid policy")
}

/// A gate that a 503 with `Retry-After: 10` at 0 s closed until 10 s.
fn closed_gate() -> OriginGate {
    let gate = OriginGate::new(GateConfig::new().spread(Duration::ZERO)).expect("a valid gate");
    gate.on_attempt_end(
        Instant::ZERO,
        GateSignal {
            started: Instant::ZERO,
            back_off: Some(Duration::from_secs(10)),
            failed: true,
            probe: false,
        },
    );
    gate
}

/// The next operation at `now` is admitted as the probe and sends.
fn next_operation_probes(gate: &OriginGate, now: Instant) {
    let mut next = machine(policy(), gate, now, 99);
    match next.poll(now) {
        Decision::Send { attempt: 1, .. } => {}
        Decision::Wait { reason, .. } if reason.source == DelaySource::OriginPaused => {
            panic!("the origin is still held by a probe that was never sent")
        }
        other => panic!("expected the next operation to probe, got {other:?}"),
    }
    next.handle(now, Event::AttemptStarted).expect("admitted");
    next.handle(now, Event::Response(Response::new(200)))
        .expect("in flight");
    assert!(
        matches!(gate.state(now), GateState::Reopening { since, .. } if since == now),
        "the probe's 200 reopens it: {:?}",
        gate.state(now)
    );
}

#[test]
fn a_probe_aborted_before_sending_hands_the_origin_back() {
    let gate = closed_gate();
    let t = Instant::from_secs(10);
    let mut probe = machine(policy(), &gate, Instant::from_secs(1), 1);
    assert!(matches!(probe.poll(t), Decision::Send { attempt: 1, .. }));
    assert!(matches!(
        gate.state(t),
        GateState::HalfOpen {
            probe_lease: Some(_),
            ..
        }
    ));
    // Aborted before its send: nothing was sent.
    let later = Instant::from_secs(11);
    probe.handle(later, Event::Abort).expect("always accepted");
    assert!(matches!(probe.poll(later), Decision::GiveUp(o) if o.attempts == 0));
    next_operation_probes(&gate, later);
}

#[test]
fn a_later_probe_is_not_handed_back_by_an_earlier_one() {
    let gate = closed_gate();
    let lease = Duration::from_secs(5);
    let t = Instant::from_secs(10);
    assert_eq!(gate.admit(t, Ask::new(lease)), GateAdmission::Probe);
    // The first probe's lease ran out unanswered; another caller probes.
    let t2 = Instant::from_secs(16);
    assert_eq!(gate.admit(t2, Ask::new(lease)), GateAdmission::Probe);
    // The first one's operation ends without sending: the second probe keeps its lease.
    gate.probe_not_sent(t);
    assert!(matches!(
        gate.admit(t2, Ask::new(lease)),
        GateAdmission::AwaitProbe(_)
    ));
    // Its own hand-back frees it.
    gate.probe_not_sent(t2);
    assert_eq!(gate.admit(t2, Ask::new(lease)), GateAdmission::Probe);
}
