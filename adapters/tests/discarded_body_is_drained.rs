//! Before the next attempt, a discarded response's body goes to the adapter's drain function
//! within the retrier's limits (so the client can reuse the connection); the returned
//! response's body never does; a body announced too long, limits turned off, a drain that
//! outlasts its time, and an abort during the drain all end the drain and nothing else.

#[path = "common/request.rs"]
mod request;
use request::*;

#[allow(dead_code)]
mod common;

#[path = "common/closures.rs"]
mod closures;

use std::cell::RefCell;
use std::time::Duration;

use backstop::runtime::{StdRuntime, VirtualTime};
use backstop::transport::DrainLimits;
use backstop::{run, Abort, Retrier};
use backstop::{Backoff, Jitter, Policy, StopReason};
use closures::Closures;
use common::ManualClock;
use futures_lite::future;

/// A response with `status`, a `Content-Length` of `length`, and `tag` as its body.
fn tagged(status: u16, length: usize, tag: u32) -> http::Response<u32> {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_LENGTH, length)
        .body(tag)
        .expect("a valid response")
}

/// Waits of 1 s: longer than the drain limits, which the drains (run during the waits) are
/// cut to.
fn policy() -> Policy {
    Policy::builder()
        .backoff(Backoff::constant(Duration::from_secs(1)))
        .jitter(Jitter::None)
        .max_elapsed(Duration::from_secs(10))
        .build()
        .expect("policy")
}

/// Runs 503 (body 1), 503 (body 2), 200 (body 3), each with a `Content-Length` of `length`,
/// on a hand-moved clock; returns the returned body and the bodies drained, with the limits
/// each drain got.
fn run_three(retrier: &Retrier, length: usize) -> (u32, Vec<(u32, DrainLimits)>) {
    let drained = RefCell::new(Vec::new());
    let mut answers = [(503, 1), (503, 2), (200, 3)].into_iter();
    let done = future::block_on(run(
        retrier,
        &ManualClock::default(),
        get("http://127.0.0.1:1/"),
        Closures {
            kind: |_: &std::io::Error| backstop::ErrorKind::Other,
            send: |_attempt| {
                let (status, tag) = answers.next().unwrap_or((500, 0));
                future::ready(Ok(tagged(status, length, tag)))
            },
            drain: |body, limits| {
                drained.borrow_mut().push((body, limits));
                future::ready(())
            },
        },
    ))
    .expect("a response");
    assert_eq!(done.outcome.attempts, 3);
    (*done.response.body(), drained.into_inner())
}

#[test]
fn each_discarded_body_is_drained_once_and_the_returned_one_never() {
    let (returned, drained) = run_three(&Retrier::new(policy()), 5);
    assert_eq!(returned, 3);
    let default = DrainLimits::default();
    assert_eq!(drained, vec![(1, default), (2, default)]);
}

#[test]
fn a_drain_gets_the_retriers_limits_cut_to_half_the_time_left() {
    // No wait: the drains run right before the next attempts, with the 300 ms left on the
    // hand-moved clock (a drain that is ready at once takes no time), half of it for each.
    let policy = Policy::builder()
        .backoff(Backoff::constant(Duration::ZERO))
        .max_elapsed(Duration::from_millis(300))
        .build()
        .expect("policy");
    let limits = DrainLimits::new(10, Duration::from_secs(1));
    let (_, drained) = run_three(&Retrier::new(policy).drain(limits), 5);
    assert_eq!(drained[0].1.max_bytes(), 10);
    let time = drained[0].1.max_time();
    assert!(
        (Duration::from_millis(145)..=Duration::from_millis(150)).contains(&time),
        "{time:?}"
    );
}

#[test]
fn a_body_announced_over_the_limit_is_dropped_unread() {
    let retrier = Retrier::new(policy()).drain(DrainLimits::new(4, Duration::from_secs(1)));
    let (returned, drained) = run_three(&retrier, 5);
    assert_eq!((returned, drained.len()), (3, 0));
    // At the limit, it is read.
    let (_, drained) = run_three(&retrier, 4);
    assert_eq!(drained.len(), 2);
}

#[test]
fn limits_turned_off_never_drain() {
    let (returned, drained) = run_three(&Retrier::new(policy()).drain(DrainLimits::OFF), 0);
    assert_eq!((returned, drained.len()), (3, 0));
}

#[test]
fn a_drain_that_outlasts_its_time_is_dropped_and_the_operation_goes_on() {
    let limits = DrainLimits::new(1024, Duration::from_millis(50));
    let retrier = Retrier::new(policy()).drain(limits);
    let mut answers = [503, 200].into_iter();
    let started = std::time::Instant::now();
    let done = future::block_on(run(
        &retrier,
        &VirtualTime::new(StdRuntime::new()),
        get("http://127.0.0.1:1/"),
        Closures {
            kind: |_: &std::io::Error| backstop::ErrorKind::Other,
            send: |_attempt| future::ready(Ok(tagged(answers.next().unwrap_or(500), 0, 0))),
            // A body that never ends.
            drain: |_body, _limits| future::pending::<()>(),
        },
    ))
    .expect("a response");
    assert_eq!(
        (done.response.status().as_u16(), done.outcome.attempts),
        (200, 2)
    );
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(50), "{took:?}");
    // A generous bound: a drain that was not cut off would never end.
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn an_abort_during_the_drain_ends_it_and_nothing_more_is_sent() {
    let abort = Abort::new();
    let retrier = Retrier::new(policy()).drain(DrainLimits::new(1024, Duration::from_secs(5)));
    let sent = std::cell::Cell::new(0);
    let result = future::block_on(run(
        &retrier,
        &VirtualTime::new(StdRuntime::new()),
        aborted_by(get("http://127.0.0.1:1/"), &abort),
        Closures {
            kind: |_: &std::io::Error| backstop::ErrorKind::Other,
            send: |_attempt| {
                let sent = &sent;
                // Counted when the attempt runs, not when it is made.
                async move {
                    sent.set(sent.get() + 1);
                    Ok(tagged(503, 0, 0))
                }
            },
            drain: |_body, _limits| {
                // The caller aborts once the drain has begun; the drain itself would never end.
                abort.abort();
                future::pending::<()>()
            },
        },
    ));
    let error = result.expect_err("aborted");
    assert!(error.is_aborted(), "{error}");
    assert_eq!(error.outcome().reason, StopReason::Aborted);
    assert_eq!((sent.get(), error.outcome().attempts), (1, 1));
}

#[test]
fn a_drain_during_a_wait_gets_no_more_than_the_wait() {
    let policy = Policy::builder()
        .backoff(Backoff::constant(Duration::from_millis(100)))
        .jitter(Jitter::None)
        .max_elapsed(Duration::from_secs(10))
        .build()
        .expect("policy");
    let (_, drained) = run_three(&Retrier::new(policy), 5);
    let wait = DrainLimits::new(DrainLimits::DEFAULT.max_bytes(), Duration::from_millis(100));
    assert_eq!(drained, vec![(1, wait), (2, wait)]);
}
