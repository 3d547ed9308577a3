//! Which responses are retried, beyond the status set: the caller's `ResponseClass` on one
//! response, and the builder's status edits. Every other rule still holds.

mod support;

use core::time::Duration;

use backstop_core::{
    ConfigError, Decision, Method, Policy, Request, Response, ResponseClass, StopReason,
};
use support::{no_jitter, no_spread, Sim};

fn outcome(d: Decision) -> backstop_core::Outcome {
    *d.outcome()
        .unwrap_or_else(|| panic!("expected an end, got {d:?}"))
}

#[test]
fn a_retryable_response_is_retried_whatever_its_status() {
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.respond(Response::new(200).class(ResponseClass::Retryable));
    assert_eq!(
        sim.wait(),
        Duration::from_millis(300),
        "the backoff applies"
    );
    sim.start();
    sim.status(200);
    let o = outcome(sim.poll());
    assert_eq!((o.attempts, o.reason), (2, StopReason::FinalStatus));
}

#[test]
fn a_final_response_is_returned_whatever_its_status() {
    let mut sim = Sim::get(no_jitter());
    sim.start();
    sim.respond(Response::new(503).class(ResponseClass::Final));
    let d = sim.poll();
    assert!(matches!(d, Decision::Return(_)), "{d:?}");
    let o = outcome(d);
    assert_eq!((o.attempts, o.reason), (1, StopReason::FinalStatus));
}

#[test]
fn a_final_response_ignores_its_retry_after() {
    let mut sim = Sim::get(no_spread());
    sim.start();
    sim.respond(
        Response::new(503)
            .retry_after(b"1")
            .class(ResponseClass::Final),
    );
    assert_eq!(outcome(sim.poll()).reason, StopReason::FinalStatus);
}

#[test]
fn a_retryable_response_honours_its_retry_after() {
    let mut sim = Sim::get(no_spread());
    sim.start();
    sim.respond(
        Response::new(200)
            .retry_after(b"2")
            .class(ResponseClass::Retryable),
    );
    assert_eq!(sim.wait(), Duration::from_secs(2));
}

#[test]
fn a_retryable_response_keeps_the_method_rules() {
    let mut sim = Sim::new(no_jitter(), Request::new(Method::Post));
    sim.start();
    sim.respond(Response::new(200).class(ResponseClass::Retryable));
    assert_eq!(outcome(sim.poll()).reason, StopReason::NoIdempotencyKey);
}

#[test]
fn a_retryable_response_keeps_the_attempt_limit() {
    let policy = Policy::builder().max_attempts(2).build().unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.respond(Response::new(404).class(ResponseClass::Retryable));
    sim.wait();
    sim.start();
    sim.respond(Response::new(404).class(ResponseClass::Retryable));
    let o = outcome(sim.poll());
    assert_eq!((o.attempts, o.reason), (2, StopReason::Attempts));
}

#[test]
fn an_added_status_is_retried_and_the_defaults_stay() {
    let policy = Policy::builder()
        .add_retryable_status(409)
        .jitter(backstop_core::Jitter::None)
        .build()
        .unwrap();
    for status in [409, 503] {
        let mut sim = Sim::get(policy);
        sim.start();
        sim.status(status);
        assert!(matches!(sim.poll(), Decision::Wait { .. }), "{status}");
    }
}

#[test]
fn a_removed_status_is_returned_at_once_and_the_others_stay() {
    let policy = Policy::builder()
        .remove_retryable_status(503)
        .jitter(backstop_core::Jitter::None)
        .build()
        .unwrap();
    let mut sim = Sim::get(policy);
    sim.start();
    sim.status(503);
    assert_eq!(outcome(sim.poll()).reason, StopReason::FinalStatus);
    let mut sim = Sim::get(policy);
    sim.start();
    sim.status(502);
    assert!(matches!(sim.poll(), Decision::Wait { .. }));
}

#[test]
fn a_status_edit_out_of_range_or_not_an_error_is_refused() {
    assert_eq!(
        Policy::builder().add_retryable_status(600).build(),
        Err(ConfigError::StatusOutOfRange(600))
    );
    assert_eq!(
        Policy::builder().remove_retryable_status(99).build(),
        Err(ConfigError::StatusOutOfRange(99))
    );
    assert_eq!(
        Policy::builder().add_retryable_status(200).build(),
        Err(ConfigError::StatusNotAnError(200))
    );
    // Removing a status that was never retryable changes nothing.
    assert_eq!(
        Policy::builder().remove_retryable_status(404).build(),
        Ok(Policy::default())
    );
}
