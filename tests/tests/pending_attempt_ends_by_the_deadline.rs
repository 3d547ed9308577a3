//! An attempt whose future never completes, on the async runtimes the adapters ship (real and
//! virtual time; the blocking runtime's case is the driver's own test): the attempt times
//! out, and the operation ends by `max_elapsed` as a time-out.

use std::sync::mpsc;
use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::runtime::{Runtime, VirtualTime};
use backstop::smol::SmolRuntime;
use backstop::tokio::TokioRuntime;
use backstop::{run, Retried, Retrier, RetryError};
use backstop::{ErrorKind, Policy};
use futures_lite::future;

type Outcome = Result<Retried<()>, RetryError<std::io::Error>>;

fn policy() -> Policy {
    Policy::builder()
        .attempt_timeout(Duration::from_millis(100))
        .max_elapsed(Duration::from_millis(300))
        .build()
        .expect("policy")
}

/// One GET on `rt` whose attempts never complete.
async fn never_answering(rt: &impl Runtime) -> Outcome {
    run(
        &Retrier::new(policy()),
        rt,
        http::Request::get("http://example.invalid/")
            .body(())
            .expect("a request"),
        |_attempt| future::pending::<Result<http::Response<()>, std::io::Error>>(),
    )
    .await
}

/// Runs `operation` on a thread of its own and asserts that it ended as a time-out, within
/// far longer than its `max_elapsed` (a hang fails the test instead of hanging it).
fn assert_times_out(runtime: &str, operation: impl FnOnce() -> Outcome + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(operation().err());
    });
    let error = rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{runtime}: the operation did not end"))
        .unwrap_or_else(|| panic!("{runtime}: a response from nowhere"));
    assert!(error.is_timeout(), "{runtime}: {error}");
    let outcome = error.outcome();
    assert!(
        matches!(outcome.last, Some(AttemptOutcome::Error(e)) if e.kind == ErrorKind::Timeout),
        "{runtime}: {outcome:?}"
    );
    // The deadline, plus slack for a loaded machine's scheduler (a hang overshoots it by far).
    let bound = policy().max_elapsed() + Duration::from_secs(2);
    assert!(outcome.elapsed <= bound, "{runtime}: {outcome:?}");
}

fn tokio_block_on(operation: impl std::future::Future<Output = Outcome>) -> Outcome {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(operation)
}

#[test]
fn a_pending_attempt_times_out_on_smol() {
    assert_times_out("SmolRuntime", || {
        smol::block_on(never_answering(&SmolRuntime::new()))
    });
    assert_times_out("VirtualTime<SmolRuntime>", || {
        smol::block_on(never_answering(&VirtualTime::new(SmolRuntime::new())))
    });
}

#[test]
fn a_pending_attempt_times_out_on_tokio() {
    assert_times_out("TokioRuntime", || {
        tokio_block_on(never_answering(&TokioRuntime::new()))
    });
    assert_times_out("VirtualTime<TokioRuntime>", || {
        tokio_block_on(never_answering(&VirtualTime::new(TokioRuntime::new())))
    });
}
