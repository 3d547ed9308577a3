//! The caller's classification override covers every error, the loop's own attempt timeout
//! included: a timeout mapped to permanent stops at once; a timeout mapped to not-sent makes
//! a POST without an `Idempotency-Key` retryable.

#[path = "common/request.rs"]
mod request;
use request::*;

#[path = "common/jump.rs"]
mod jump;

use std::cell::Cell;
use std::time::Duration;

use backstop::classify::{AttemptOutcome, ErrorClass};
use backstop::{run, Retrier};
use backstop::{ErrorKind, Policy, StopReason};
use futures_lite::future;
use jump::JumpClock;

fn policy() -> Policy {
    Policy::builder()
        .attempt_timeout(Duration::from_secs(1))
        .build()
        .expect("policy")
}

/// Runs `request` against a client that never answers (every attempt runs into the loop's
/// timer); returns the outcome and the number of attempts made.
fn never_answering(retrier: &Retrier, request: http::Request<()>) -> (backstop::Outcome, u32) {
    let calls = Cell::new(0);
    let result = future::block_on(run(retrier, &JumpClock::default(), request, |_attempt| {
        calls.set(calls.get() + 1);
        future::pending::<Result<http::Response<()>, std::io::Error>>()
    }));
    let error = result.expect_err("no response");
    (*error.outcome(), calls.get())
}

#[test]
fn the_classification_override_covers_the_loops_timeout() {
    let retrier = Retrier::new(policy())
        .classify(|kind, _error| (kind == ErrorKind::Timeout).then_some(ErrorClass::Permanent));
    let (outcome, calls) = never_answering(&retrier, get("http://127.0.0.1:1/"));
    assert_eq!((calls, outcome.attempts), (1, 1), "{outcome:?}");
    assert_eq!(outcome.reason, StopReason::PermanentError);
    let Some(AttemptOutcome::Error(e)) = outcome.last else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        (e.kind, e.class),
        (ErrorKind::Timeout, ErrorClass::Permanent)
    );
}

#[test]
fn a_loop_timeout_classified_not_sent_retries_a_keyless_post() {
    let retrier = Retrier::new(policy())
        .classify(|kind, _error| (kind == ErrorKind::Timeout).then_some(ErrorClass::NotSent));
    let (outcome, calls) = never_answering(&retrier, post("http://127.0.0.1:1/"));
    assert_eq!((calls, outcome.attempts), (4, 4), "{outcome:?}");
    assert_eq!(outcome.reason, StopReason::Attempts);
}

#[test]
fn the_override_is_shown_the_loops_timeout_as_an_attempt_timed_out() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let retrier = Retrier::new(policy()).classify(move |kind, error| {
        let timed_out = error.downcast_ref::<backstop::transport::AttemptTimedOut>();
        record
            .lock()
            .expect("lock")
            .push((kind, timed_out.map(|t| (t.attempt(), t.timeout()))));
        None
    });
    let (outcome, _) = never_answering(&retrier, get("http://127.0.0.1:1/"));
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(
        seen[0],
        (ErrorKind::Timeout, Some((1, Duration::from_secs(1))))
    );
    // Kept the default class: every attempt ran.
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (4, StopReason::Attempts)
    );
}
