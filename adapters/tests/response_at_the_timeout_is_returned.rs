//! A response the client produced is never thrown away because the clock, read after the
//! attempt, has reached the attempt's timeout: no decision had reported the timeout yet, so
//! the response wins (as an abort does at the deadline).

#[path = "common/request.rs"]
mod request;
use request::*;

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::runtime::Runtime;
use backstop::{run, Retrier};
use backstop::{Policy, StopReason};
use common::{response, ManualClock};
use futures_lite::future;

fn policy(max_attempts: u32) -> Policy {
    Policy::builder()
        .attempt_timeout(Duration::from_millis(100))
        .max_elapsed(Duration::from_secs(10))
        .max_attempts(max_attempts)
        .build()
        .expect("policy")
}

/// Runs one GET whose every attempt answers 200 exactly when its timeout expires; returns the
/// result and the number of attempts sent.
fn run_with_answer_at_timeout(
    max_attempts: u32,
) -> (
    Result<backstop::Retried<()>, backstop::RetryError<std::io::Error>>,
    u32,
) {
    let rt = ManualClock::default();
    let sent = AtomicU32::new(0);
    let result = future::block_on(run(
        &Retrier::new(policy(max_attempts)),
        &rt,
        get("http://example.invalid/"),
        |attempt: backstop::Attempt<()>| {
            sent.fetch_add(1, Ordering::SeqCst);
            let timeout_at = rt.now().saturating_add(attempt.timeout);
            let clock = rt.clone();
            async move {
                clock.set(timeout_at);
                Ok(response(200))
            }
        },
    ));
    (result, sent.load(Ordering::SeqCst))
}

#[test]
fn a_response_at_the_timeout_is_returned_when_no_retry_is_left() {
    let (result, sent) = run_with_answer_at_timeout(1);
    let done = result.expect("the 200 the client produced");
    assert_eq!(done.response.status(), 200);
    assert_eq!(done.outcome.reason, StopReason::FinalStatus);
    assert_eq!(done.outcome.last, Some(AttemptOutcome::Response(200)));
    assert_eq!((done.outcome.attempts, sent), (1, 1));
}

#[test]
fn a_response_at_the_timeout_is_not_sent_again() {
    let (result, sent) = run_with_answer_at_timeout(2);
    let done = result.expect("the 200 the client produced");
    assert_eq!(done.response.status(), 200);
    assert_eq!((done.outcome.attempts, sent), (1, 1));
}
