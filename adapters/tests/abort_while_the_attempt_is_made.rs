//! An attempt counts only when it is sent: an abort that fires while the attempt function
//! builds the attempt leaves it unsent, and `Outcome::attempts` says so.

#[path = "common/request.rs"]
mod request;
use request::*;

mod common;

use std::sync::atomic::{AtomicU32, Ordering};

use backstop::StopReason;
use backstop::{run, Abort, Retrier};
use common::{response, ManualClock};
use futures_lite::future;

#[test]
fn attempts_count_the_requests_actually_sent() {
    let abort = Abort::new();
    let polled = AtomicU32::new(0);
    let result = future::block_on(run(
        &Retrier::default(),
        &ManualClock::default(),
        aborted_by(get("http://example.invalid/"), &abort),
        |_attempt| {
            // The caller aborts (from anywhere) while the attempt is being made.
            abort.abort();
            let polled = &polled;
            async move {
                polled.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(response(200))
            }
        },
    ));
    let error = result.expect_err("an aborted operation returns no response");
    assert!(error.is_aborted(), "{error}");
    assert_eq!(error.outcome().reason, StopReason::Aborted);
    assert_eq!(error.outcome().attempts, polled.load(Ordering::SeqCst));
}
