//! An `Idempotency-Key` that is empty or only whitespace is no key: a server cannot
//! deduplicate on it, so it does not opt a POST in to retries.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};

use backstop::StopReason;
use backstop::{run, Retrier};
use common::{response, ManualClock};
use futures_lite::future;

fn post_with_key(key: &str) -> http::Request<()> {
    http::Request::post("http://example.invalid/")
        .header("idempotency-key", key)
        .body(())
        .expect("a valid request")
}

fn post_to_a_failing_server(request: http::Request<()>) -> (u32, StopReason) {
    let sent = AtomicU32::new(0);
    let result = future::block_on(run(
        &Retrier::default(),
        &ManualClock::default(),
        request,
        |_attempt: backstop::Attempt<()>| {
            sent.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::io::Error>(response(503)) }
        },
    ));
    let retried = result.expect("a 503 is a response");
    (sent.load(Ordering::SeqCst), retried.outcome.reason)
}

#[test]
fn an_empty_or_blank_idempotency_key_is_no_key() {
    for key in ["", " ", "  ", "\t", " \t "] {
        assert_eq!(
            post_to_a_failing_server(post_with_key(key)),
            (1, StopReason::NoIdempotencyKey),
            "{key:?}"
        );
    }
    // A real key still opts in: every attempt is sent.
    assert_eq!(
        post_to_a_failing_server(post_with_key("k-1")),
        (4, StopReason::Attempts)
    );
}
