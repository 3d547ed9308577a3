//! An `Idempotency-Key` that is empty or only whitespace is no key: a server cannot
//! deduplicate on it, so it does not opt a POST in to retries.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};

use backstop::StopReason;
use backstop::{run, Retrier, RetryRequest};
use common::{response, ManualClock};
use futures_lite::future;

fn post_to_a_failing_server(request: RetryRequest) -> (u32, StopReason) {
    let sent = AtomicU32::new(0);
    let result = future::block_on(run(
        &Retrier::default(),
        &ManualClock::default(),
        request,
        |_attempt| {
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
        let request = RetryRequest::post("http://example.invalid/").idempotency_key(key);
        assert!(!request.has_idempotency_key(), "{key:?}");
        assert_eq!(
            post_to_a_failing_server(request),
            (1, StopReason::NoIdempotencyKey),
            "{key:?}"
        );
    }
    // A real key still opts in: every attempt is sent.
    let request = RetryRequest::post("http://example.invalid/").idempotency_key("k-1");
    assert!(request.has_idempotency_key());
    assert_eq!(post_to_a_failing_server(request), (4, StopReason::Attempts));
}
