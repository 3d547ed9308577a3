//! A `Retry-After` above the policy's ceiling: the response is returned at once, untouched,
//! instead of waiting an hour (or clamping and earning another 503).

use std::time::Duration;

use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn retry_after_above_the_ceiling_returns_the_response_at_once() {
    for_each_adapter(|adapter| {
        let server = Server::always(
            Reply::status(503)
                .header("Retry-After", "3600")
                .body("come back in an hour"),
        );
        let request = TestRequest::get(server.url("/"));
        let run = adapter.run(&Retrier::default(), request, Clock::Real);

        assert_eq!(run.status(), Some(503), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"come back in an hour"[..]));
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::RetryAfterAboveMax)
        );
        assert!(run.real < Duration::from_secs(2), "{adapter:?}: {run:?}");
        assert_eq!(server.requests(), 1);
    });
}
