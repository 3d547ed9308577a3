//! One `VirtualTime` is one clock: a wait one operation skips ages every other operation in
//! flight on it (the documented rule), and operations that run at the same time, each on its
//! own `VirtualTime`, keep their own time (the documented recipe).

#[path = "common/request.rs"]
mod request;
use request::*;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backstop::runtime::{StdRuntime, VirtualTime};
use backstop::{run, Retried, Retrier, RetryError};
use backstop::{Policy, StopReason};
use futures_lite::future;

type Result = core::result::Result<Retried<()>, RetryError<std::io::Error>>;

fn response(status: u16, retry_after: Option<&str>) -> http::Response<()> {
    let mut r = http::Response::builder().status(status);
    if let Some(value) = retry_after {
        r = r.header("retry-after", value);
    }
    r.body(()).expect("a valid response")
}

/// Operation A (on `a`) is told `Retry-After: 30` once and then succeeds; operation B (on `b`,
/// `max_elapsed` 20 s) has one attempt in flight until A has finished. Returns B's result.
fn a_waits_while_b_is_in_flight(
    a: &VirtualTime<StdRuntime>,
    b: &VirtualTime<StdRuntime>,
) -> Result {
    let a_done = AtomicBool::new(false);
    let retrier_a = Retrier::new(
        Policy::builder()
            .max_elapsed(Duration::from_secs(120))
            .build()
            .expect("a policy"),
    );
    let retrier_b = Retrier::new(
        Policy::builder()
            .max_elapsed(Duration::from_secs(20))
            .build()
            .expect("a policy"),
    );
    let op_a = async {
        let mut answers = [response(503, Some("30")), response(200, None)].into_iter();
        let result = run(&retrier_a, a, get("http://127.0.0.1:1/a"), |_| {
            let answer = answers.next().expect("two attempts at most");
            async move { Ok::<_, std::io::Error>(answer) }
        })
        .await;
        a_done.store(true, Ordering::SeqCst);
        result.map(|done| done.outcome.attempts)
    };
    let op_b = run(&retrier_b, b, get("http://127.0.0.1:1/b"), |_| async {
        // A ends within a few polls on virtual time; the bound only stops a broken loop
        // from spinning forever (A's own assertion then fails).
        for _ in 0..100_000 {
            if a_done.load(Ordering::SeqCst) {
                break;
            }
            future::yield_now().await;
        }
        Ok::<_, std::io::Error>(response(200, None))
    });
    // B first: its attempt is in flight when A starts.
    let (b_result, a_attempts) = future::block_on(future::zip(op_b, op_a));
    assert_eq!(a_attempts.expect("A succeeds"), 2);
    b_result
}

#[test]
fn a_shared_virtual_time_ages_every_operation_in_flight_on_it() {
    let shared = VirtualTime::new(StdRuntime::new());
    let b = a_waits_while_b_is_in_flight(&shared, &shared.clone()).expect("B's answer");
    // B's one attempt took no real time, yet B is 30 s old: A's skip moved B's clock.
    assert!(
        b.outcome.elapsed >= Duration::from_secs(30),
        "{:?}",
        b.outcome
    );
    assert!(shared.skipped() >= Duration::from_secs(30));
}

#[test]
fn concurrent_operations_on_their_own_virtual_times_keep_their_own_time() {
    let (a, b) = (
        VirtualTime::new(StdRuntime::new()),
        VirtualTime::new(StdRuntime::new()),
    );
    let done = a_waits_while_b_is_in_flight(&a, &b).expect("B's answer");
    assert_eq!(
        (done.outcome.attempts, done.outcome.reason),
        (1, StopReason::FinalStatus)
    );
    assert!(
        done.outcome.elapsed < Duration::from_secs(20),
        "{:?}",
        done.outcome
    );
    assert!(a.skipped() >= Duration::from_secs(30));
    assert!(b.skipped() < Duration::from_secs(1));
}
