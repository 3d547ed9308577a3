//! A retry the budget granted and an abort cancelled during its wait gives its cost back:
//! two operations aborted while waiting leave the quota as it was, and the next operation's
//! retry is allowed.

#[path = "common/request.rs"]
mod request;
use request::*;

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use backstop::runtime::{Instant, Runtime, Sleep};
use backstop::{run, Abort, Retrier};
use backstop::{RetryQuota, StopReason};
use common::{response, ManualClock};
use futures_lite::future;

/// A clock on which the caller aborts as soon as a wait begins: the wait never ends by itself.
struct AbortsDuringTheWait(ManualClock, Abort);

impl Runtime for AbortsDuringTheWait {
    fn now(&self) -> Instant {
        self.0.now()
    }

    fn sleep_until(&self, _: Instant) -> Sleep {
        self.1.abort();
        Box::pin(core::future::pending())
    }

    fn timeout_at(&self, until: Instant) -> Sleep {
        self.0.timeout_at(until)
    }
}

fn get_503_then_200<RT: Runtime>(
    retrier: &Retrier,
    runtime: &RT,
    abort: Option<&Abort>,
) -> (u32, StopReason) {
    let sent = AtomicU32::new(0);
    let mut request = get("http://example.invalid/");
    if let Some(abort) = abort {
        request = aborted_by(request, abort);
    }
    let result = future::block_on(run(retrier, runtime, request, |_attempt| {
        let n = sent.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, std::io::Error>(response(if n == 0 { 503 } else { 200 })) }
    }));
    let outcome = match result {
        Ok(retried) => retried.outcome,
        Err(error) => *error.outcome(),
    };
    (sent.load(Ordering::SeqCst), outcome.reason)
}

#[test]
fn a_retry_cancelled_by_an_abort_gives_its_cost_back() {
    let quota = Arc::new(RetryQuota::new().with_capacity(10).with_success_refund(0));
    let retrier = Retrier::default().budget(quota.clone());
    for _ in 0..2 {
        let abort = Abort::new();
        let runtime = AbortsDuringTheWait(ManualClock::default(), abort.clone());
        let ran = get_503_then_200(&retrier, &runtime, Some(&abort));
        assert_eq!(ran, (1, StopReason::Aborted));
    }
    assert_eq!(quota.available(), 10, "no retry was sent");
    let ran = get_503_then_200(&retrier, &ManualClock::default(), None);
    assert_eq!(
        ran,
        (2, StopReason::FinalStatus),
        "the next operation's retry is allowed"
    );
    assert_eq!(quota.available(), 5);
}
