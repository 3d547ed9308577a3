//! `Transport::ready`: waiting for the client's readiness is not an attempt. It is bounded by
//! the deadline (not the attempt's timeout) and ended by the abort, and neither sends nor
//! counts anything; a client ready later gets its attempt then, with what readiness gave.

#[path = "common/request.rs"]
mod request;
use request::aborted_by;

#[path = "common/jump.rs"]
mod jump;

use std::cell::Cell;
use std::time::Duration;

use backstop::{run, Abort, Attempt, ErrorKind, Retrier, Transport};
use backstop::{Policy, StopReason};
use futures_lite::future;
use jump::JumpClock;

fn policy() -> Policy {
    Policy::builder()
        .attempt_timeout(Duration::from_millis(100))
        .max_elapsed(Duration::from_secs(2))
        .build()
        .expect("policy")
}

/// A client whose readiness is `ready`: what it gives is the body of the attempt it readied.
struct Gated<'a, R> {
    ready: R,
    token: Option<u32>,
    sent: &'a Cell<u32>,
}

impl<R, F> Transport<()> for Gated<'_, R>
where
    R: FnMut() -> F,
    F: core::future::Future<Output = u32>,
{
    type Body = u32;
    type Error = std::io::Error;

    fn send(
        &mut self,
        _: Attempt<()>,
    ) -> impl core::future::Future<Output = Result<http::Response<u32>, std::io::Error>> {
        self.sent.set(self.sent.get() + 1);
        let token = self.token.take().expect("made ready before the attempt");
        future::ready(Ok(http::Response::new(token)))
    }

    fn error_kind(&self, _: &std::io::Error) -> ErrorKind {
        ErrorKind::Other
    }

    async fn ready(&mut self) {
        self.token = Some((self.ready)().await);
    }
}

/// Runs a POST whose readiness is `ready`; returns the result and the attempts sent.
fn post<F: core::future::Future<Output = u32>>(
    request: http::Request<()>,
    ready: impl FnMut() -> F,
) -> (Result<u32, backstop::RetryError<std::io::Error>>, u32) {
    let sent = Cell::new(0);
    let gated = Gated {
        ready,
        token: None,
        sent: &sent,
    };
    let result = future::block_on(run(
        &Retrier::new(policy()),
        &JumpClock::default(),
        request,
        gated,
    ));
    (result.map(|done| *done.response.body()), sent.get())
}

#[test]
fn a_client_never_ready_sends_nothing_and_ends_at_the_deadline() {
    let (result, sent) = post(request::post("http://127.0.0.1:1/"), future::pending);
    let error = result.expect_err("never ready");
    // Nothing went out: not a time-out of an attempt.
    assert!(error.is_not_sent() && !error.is_timeout(), "{error:?}");
    let outcome = error.outcome();
    assert_eq!(
        (outcome.attempts, outcome.reason, outcome.last),
        (0, StopReason::Deadline, None)
    );
    assert_eq!(outcome.elapsed, Duration::from_secs(2));
    assert_eq!(sent, 0);
}

#[test]
fn an_abort_while_not_ready_sends_nothing() {
    let abort = Abort::new();
    let request = aborted_by(request::post("http://127.0.0.1:1/"), &abort);
    let (result, sent) = post(request, || {
        abort.abort();
        future::pending()
    });
    let error = result.expect_err("aborted");
    assert!(error.is_aborted(), "{error:?}");
    assert_eq!((error.outcome().attempts, sent), (0, 0));
}

#[test]
fn what_readiness_gives_goes_to_the_attempt() {
    let (result, sent) = post(request::get("http://127.0.0.1:1/"), || {
        // Ready on the second poll: the loop waits, then decides again.
        let mut polled = false;
        future::poll_fn(move |cx| {
            if polled {
                return core::task::Poll::Ready(7);
            }
            polled = true;
            cx.waker().wake_by_ref();
            core::task::Poll::Pending
        })
    });
    assert_eq!((result.expect("a response"), sent), (7, 1));
}
