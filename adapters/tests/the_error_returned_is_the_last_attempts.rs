//! The error an operation returns is its last attempt's, the one `Outcome::last` describes:
//! a reset followed by a loop timeout is a time-out, not the reset.

#[path = "common/request.rs"]
mod request;
use request::*;

#[path = "common/jump.rs"]
mod jump;

#[path = "common/closures.rs"]
mod closures;

use std::cell::Cell;
use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::{run, Retrier, RetryError};
use backstop::{ErrorKind, Policy, StopReason};
use closures::Closures;
use futures_lite::future;
use jump::JumpClock;

/// Attempt 1 fails with `first`, attempt 2 with `second`; `None` is an attempt that never
/// answers (the loop's timer ends it).
fn two_attempts(first: Option<ErrorKind>, second: Option<ErrorKind>) -> RetryError<std::io::Error> {
    let policy = Policy::builder()
        .max_attempts(2)
        .attempt_timeout(Duration::from_secs(1))
        .build()
        .expect("policy");
    let number = Cell::new(0);
    let result = future::block_on(run(
        &Retrier::new(policy),
        &JumpClock::default(),
        get("http://127.0.0.1:1/"),
        Closures {
            // The test's error text is the kind's name: classify by it.
            kind: |e: &std::io::Error| match e.to_string().as_str() {
                "reset" => ErrorKind::ConnectionReset,
                _ => ErrorKind::Other,
            },
            send: |_attempt| {
                number.set(number.get() + 1);
                let script = if number.get() == 1 { first } else { second };
                async move {
                    match script {
                        Some(_) => Err::<http::Response<()>, _>(std::io::Error::other("reset")),
                        None => future::pending().await,
                    }
                }
            },
            drain: |_, _| future::ready(()),
        },
    ));
    result.expect_err("no response")
}

fn last_kind(e: &RetryError<std::io::Error>) -> ErrorKind {
    match e.outcome().last {
        Some(AttemptOutcome::Error(error)) => error.kind,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_error_returned_is_the_last_attempts() {
    let error = two_attempts(Some(ErrorKind::ConnectionReset), None);
    assert_eq!(
        (error.outcome().attempts, error.outcome().reason),
        (2, StopReason::Attempts)
    );
    assert_eq!(last_kind(&error), ErrorKind::Timeout);
    assert!(error.is_timeout(), "{error:?}");
}

#[test]
fn a_timeout_then_a_reset_returns_the_reset() {
    let error = two_attempts(None, Some(ErrorKind::ConnectionReset));
    assert_eq!(last_kind(&error), ErrorKind::ConnectionReset);
    let RetryError::Failed { kind, .. } = error else {
        panic!("{error:?}")
    };
    assert_eq!(kind, ErrorKind::ConnectionReset);
}
