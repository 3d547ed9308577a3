//! Every runtime the driver ships bounds an attempt whose future never completes: the attempt
//! times out, and the operation ends by `max_elapsed` as a time-out.

#[path = "common/request.rs"]
mod request;
use request::*;

use std::sync::mpsc;
use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::runtime::{Runtime, StdRuntime, VirtualTime};
use backstop::{run, Retrier, RetryError};
use backstop::{ErrorKind, Policy};
use futures_lite::future;

/// Runs a GET whose attempts never complete on `rt`, on a thread of its own; `None` if it has
/// not ended after far longer than its `max_elapsed` (a hang).
fn run_never_answering(rt: impl Runtime + Send + 'static) -> Option<RetryError<std::io::Error>> {
    let policy = Policy::builder()
        .attempt_timeout(Duration::from_millis(100))
        .max_elapsed(Duration::from_millis(300))
        .build()
        .expect("policy");
    let (tx, rx) = mpsc::channel();
    // Detached: should the operation hang, the test fails instead of hanging with it.
    std::thread::spawn(move || {
        let result = future::block_on(run(
            &Retrier::new(policy),
            &rt,
            get("http://example.invalid/"),
            |_attempt| future::pending::<Result<http::Response<()>, std::io::Error>>(),
        ));
        let _ = tx.send(result.err());
    });
    // Generous: the operation's own bound is 300 ms.
    rx.recv_timeout(Duration::from_secs(20)).ok()?
}

fn assert_timed_out(error: Option<RetryError<std::io::Error>>, runtime: &str) {
    let error = error.unwrap_or_else(|| panic!("{runtime}: the operation did not end"));
    assert!(error.is_timeout(), "{runtime}: {error}");
    let outcome = error.outcome();
    assert!(
        matches!(outcome.last, Some(AttemptOutcome::Error(e)) if e.kind == ErrorKind::Timeout),
        "{runtime}: {outcome:?}"
    );
    // The deadline, plus slack for a loaded machine's scheduler (a hang overshoots it by far).
    let bound = Duration::from_millis(300) + Duration::from_secs(2);
    assert!(outcome.elapsed <= bound, "{runtime}: {outcome:?}");
}

#[test]
fn a_pending_attempt_times_out_on_the_blocking_runtime() {
    assert_timed_out(run_never_answering(StdRuntime::new()), "StdRuntime");
}

#[test]
fn a_pending_attempt_times_out_on_virtual_time() {
    assert_timed_out(
        run_never_answering(VirtualTime::new(StdRuntime::new())),
        "VirtualTime<StdRuntime>",
    );
}
