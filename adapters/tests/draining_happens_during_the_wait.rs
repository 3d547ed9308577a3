//! A discarded response's body is drained during the wait that follows it, not after: the
//! next attempt goes out when the wait ends, whatever the drain is doing, and the operation
//! stays within `Policy::worst_case().elapsed` with a body that never ends.

#[path = "common/request.rs"]
mod request;
use request::*;

#[path = "common/jump.rs"]
mod jump;

#[path = "common/closures.rs"]
mod closures;

use std::cell::{Cell, RefCell};
use std::time::Duration;

use backstop::runtime::Runtime;
use backstop::transport::DrainLimits;
use backstop::{run, EventKind, Retrier};
use backstop::{Backoff, Jitter, Policy};
use closures::Closures;
use futures_lite::future;
use jump::JumpClock;

fn response(status: u16) -> http::Response<()> {
    let mut r = http::Response::new(());
    *r.status_mut() = http::StatusCode::from_u16(status).expect("status");
    r
}

#[test]
fn draining_a_discarded_body_happens_during_the_wait() {
    let wait = Duration::from_millis(300);
    let policy = Policy::builder()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(50))
        .backoff(Backoff::constant(wait))
        .jitter(Jitter::None)
        .max_retry_after(wait)
        .build()
        .expect("policy");
    let clock = JumpClock::default();
    let start = clock.now();
    // The wait's end, as the loop reported it.
    let wait_end = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = wait_end.clone();
    let retrier = Retrier::new(policy)
        .drain(DrainLimits::new(1 << 20, Duration::from_secs(2)))
        .on_event(move |event| {
            if let EventKind::WaitStarted { delay, elapsed, .. } = event.kind {
                *seen.lock().expect("lock") = Some(elapsed + delay);
            }
        });
    let sent_at = RefCell::new(Vec::new());
    let drains = Cell::new(0);
    let done = future::block_on(run(
        &retrier,
        &clock,
        get("http://127.0.0.1:1/"),
        Closures {
            kind: |_: &std::io::Error| backstop::ErrorKind::Other,
            send: |attempt: backstop::Attempt<()>| {
                sent_at
                    .borrow_mut()
                    .push(clock.now().saturating_duration_since(start));
                future::ready(Ok(response(if attempt.number == 1 { 503 } else { 200 })))
            },
            // A stalled body: its drain never ends by itself.
            drain: |(), limits: DrainLimits| {
                drains.set(drains.get() + 1);
                assert!(limits.max_time() <= wait, "{limits:?}");
                future::pending::<()>()
            },
        },
    ))
    .expect("a response");
    assert_eq!(
        (done.response.status().as_u16(), done.outcome.attempts),
        (200, 2)
    );
    assert_eq!(drains.get(), 1);
    let wait_end = wait_end.lock().expect("lock").expect("a wait");
    assert_eq!(wait_end, wait);
    // The retry went out when the wait ended, not a drain's time later.
    assert_eq!(*sent_at.borrow(), vec![Duration::ZERO, wait_end]);
    assert!(
        done.outcome.elapsed <= policy.worst_case().elapsed,
        "{:?} > {:?}",
        done.outcome.elapsed,
        policy.worst_case().elapsed
    );
}

/// A clock whose waits overshoot: a wait wakes 1 s late.
#[derive(Clone, Default)]
struct LateWake(JumpClock);

impl Runtime for LateWake {
    fn now(&self) -> backstop::runtime::Instant {
        self.0.now()
    }

    fn sleep_until(&self, until: backstop::runtime::Instant) -> backstop::runtime::Sleep {
        self.0
            .sleep_until(until.saturating_add(Duration::from_secs(1)))
    }

    fn timeout_at(&self, until: backstop::runtime::Instant) -> backstop::runtime::Sleep {
        self.0.timeout_at(until)
    }
}

/// The one case the early drain changes: a wait that wakes past the deadline ends the
/// operation with the previous response, whose body was drained during that wait. The loop
/// returns a time-out whose outcome names that response, not a response without its body.
#[test]
fn a_response_drained_during_a_wait_the_operation_ends_at_is_a_time_out() {
    let policy = Policy::builder()
        .backoff(Backoff::constant(Duration::from_millis(300)))
        .jitter(Jitter::None)
        .max_elapsed(Duration::from_millis(500))
        .build()
        .expect("policy");
    let drains = Cell::new(0);
    let result = future::block_on(run(
        &Retrier::new(policy),
        &LateWake::default(),
        get("http://127.0.0.1:1/"),
        Closures {
            kind: |_: &std::io::Error| backstop::ErrorKind::Other,
            send: |_attempt| future::ready(Ok(response(503))),
            drain: |(), _| {
                drains.set(drains.get() + 1);
                future::ready(())
            },
        },
    ));
    let error = result.expect_err("the drained response is gone");
    assert!(error.is_timeout(), "{error:?}");
    let outcome = error.outcome();
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (1, backstop::StopReason::Deadline)
    );
    assert_eq!(
        outcome.last,
        Some(backstop::classify::AttemptOutcome::Response(503))
    );
    assert_eq!(drains.get(), 1);
}

/// Without a wait (a backoff of zero) the drain runs right before the retry, and takes the
/// place of that wait: it is cut at the longest wait `worst_case` counts, so the operation
/// still ends within `worst_case().elapsed`.
#[test]
fn a_drain_before_a_retry_at_once_stays_within_the_worst_case() {
    let policy = Policy::builder()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(50))
        .backoff(Backoff::constant(Duration::ZERO))
        .jitter(Jitter::None)
        .max_retry_after(Duration::ZERO)
        .build()
        .expect("policy");
    let clock = JumpClock::default();
    let done = future::block_on(run(
        &Retrier::new(policy).drain(DrainLimits::new(1 << 20, Duration::from_secs(2))),
        &clock,
        get("http://127.0.0.1:1/"),
        Closures {
            kind: |_: &std::io::Error| backstop::ErrorKind::Other,
            send: |attempt: backstop::Attempt<()>| {
                future::ready(Ok(response(if attempt.number == 1 { 503 } else { 200 })))
            },
            // A stalled body: its drain never ends by itself.
            drain: |(), _| future::pending::<()>(),
        },
    ))
    .expect("a response");
    assert_eq!(done.outcome.attempts, 2);
    assert!(
        done.outcome.elapsed <= policy.worst_case().elapsed,
        "{:?} > {:?}",
        done.outcome.elapsed,
        policy.worst_case().elapsed
    );
}
