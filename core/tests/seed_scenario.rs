//! The classic retry demo on virtual time: 503 with `Retry-After: 0.1` twice, then 200.

mod support;

use backstop_core::{Decision, DelaySource, Policy, Response, SendReason, StopReason};
use support::{millis, Sim};

#[test]
fn seed_demo_waits_as_told_and_returns_the_200_on_attempt_3() {
    let mut sim = Sim::get(Policy::default());
    let mut trace = Vec::new();
    for _ in 0..2 {
        sim.start();
        sim.advance(millis(3)); // the server takes 3 ms to answer
        sim.respond(Response::new(503).retry_after(b"0.1"));
        let decision = sim.poll();
        let Decision::Wait { delay, reason, .. } = decision else {
            panic!("expected a wait, got {decision:?}");
        };
        assert!(delay >= millis(100), "Retry-After is a floor: {delay:?}");
        assert!(
            delay <= millis(110),
            "the spread is at most a tenth: {delay:?}"
        );
        assert_eq!(reason.source, DelaySource::RetryAfter);
        trace.push(decision);
        sim.wait();
    }
    let Decision::Send {
        attempt, reason, ..
    } = sim.poll()
    else {
        panic!("expected the third send");
    };
    assert_eq!(attempt, 3);
    assert!(matches!(reason, SendReason::Retry(_)));
    sim.start();
    sim.respond(Response::new(200));
    let Decision::Return(outcome) = sim.poll() else {
        panic!("expected the 200 to be returned");
    };
    assert_eq!(outcome.attempts, 3);
    assert_eq!(outcome.reason, StopReason::FinalStatus);
    assert!(outcome.elapsed >= millis(206));
    assert_eq!(trace.len(), 2);
}
