//! An aborted operation never calls the attempt function: an attempt function that starts its
//! work when it is called (rather than when its future is polled) sends nothing after the
//! abort. Whenever the abort comes — before the first attempt, during a wait, as a wait ends,
//! during a drain — the calls are the attempts sent before it.

#[path = "common/request.rs"]
mod request;
use request::*;

#[path = "common/jump.rs"]
mod jump;

#[path = "common/closures.rs"]
mod closures;

use std::cell::Cell;
use std::time::Duration;

use backstop::runtime::{Runtime, Sleep};
use backstop::transport::DrainLimits;
use backstop::{run, Abort, EventKind, Retrier};
use backstop::{Backoff, Jitter, Policy, StopReason};
use closures::Closures;
use futures_lite::future;
use jump::JumpClock;

fn policy(wait: Duration) -> Policy {
    Policy::builder()
        .backoff(Backoff::constant(wait))
        .jitter(Jitter::None)
        .build()
        .expect("policy")
}

fn unavailable() -> http::Response<()> {
    let mut r = http::Response::new(());
    *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    r
}

/// Runs a GET that always gets a 503 on `runtime`, with `drain` for the discarded bodies;
/// returns how many times the attempt function was called and the error.
fn calls<RT: Runtime>(
    retrier: &Retrier,
    runtime: &RT,
    abort: &Abort,
    drain: impl FnMut((), DrainLimits) -> future::Ready<()>,
) -> (u32, backstop::RetryError<std::io::Error>) {
    let calls = Cell::new(0);
    let result = future::block_on(run(
        retrier,
        runtime,
        aborted_by(get("http://127.0.0.1:1/"), abort),
        Closures {
            kind: |_: &std::io::Error| backstop::ErrorKind::Other,
            send: |_attempt| {
                // Counted when called: a client that starts its request here.
                calls.set(calls.get() + 1);
                future::ready(Ok(unavailable()))
            },
            drain,
        },
    ));
    (calls.get(), result.expect_err("aborted"))
}

fn assert_aborted(error: &backstop::RetryError<std::io::Error>, attempts: u32) {
    assert!(error.is_aborted(), "{error:?}");
    assert_eq!(error.outcome().reason, StopReason::Aborted);
    assert_eq!(error.outcome().attempts, attempts);
}

#[test]
fn an_aborted_operation_never_calls_the_attempt_function() {
    let abort = Abort::new();
    abort.abort();
    let retrier = Retrier::new(policy(Duration::from_millis(100)));
    let (n, error) = calls(&retrier, &JumpClock::default(), &abort, |(), _| {
        future::ready(())
    });
    assert_eq!(n, 0);
    assert_aborted(&error, 0);
}

/// A clock whose waits fire the abort while they sleep.
#[derive(Clone)]
struct AbortingWait(JumpClock, Abort);

impl Runtime for AbortingWait {
    fn now(&self) -> backstop::runtime::Instant {
        self.0.now()
    }

    fn sleep_until(&self, until: backstop::runtime::Instant) -> Sleep {
        self.1.abort();
        self.0.sleep_until(until)
    }

    fn timeout_at(&self, until: backstop::runtime::Instant) -> Sleep {
        self.0.timeout_at(until)
    }
}

#[test]
fn an_abort_during_a_wait_calls_the_attempt_function_no_more() {
    let abort = Abort::new();
    let retrier = Retrier::new(policy(Duration::from_millis(100)));
    let runtime = AbortingWait(JumpClock::default(), abort.clone());
    let (n, error) = calls(&retrier, &runtime, &abort, |(), _| future::ready(()));
    assert_eq!(n, 1);
    assert_aborted(&error, 1);
}

#[test]
fn an_abort_as_a_wait_ends_calls_the_attempt_function_no_more() {
    let abort = Abort::new();
    let fire = abort.clone();
    // The abort comes after the wait's sleep, as its end is reported.
    let retrier = Retrier::new(policy(Duration::from_millis(100))).on_event(move |event| {
        if matches!(event.kind, EventKind::WaitEnded { .. }) {
            fire.abort();
        }
    });
    let (n, error) = calls(&retrier, &JumpClock::default(), &abort, |(), _| {
        future::ready(())
    });
    assert_eq!(n, 1);
    assert_aborted(&error, 1);
}

#[test]
fn an_abort_during_a_drain_calls_the_attempt_function_no_more() {
    let abort = Abort::new();
    // No wait: the discarded body is drained right before the next attempt.
    let retrier = Retrier::new(policy(Duration::ZERO));
    let (n, error) = calls(&retrier, &JumpClock::default(), &abort, |(), _| {
        abort.abort();
        future::ready(())
    });
    assert_eq!(n, 1);
    assert_aborted(&error, 1);
}
