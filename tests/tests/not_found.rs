//! 404 is not retryable: it is returned as it is, after one request.

use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn not_found_is_returned_after_one_request() {
    for_each_adapter(|adapter| {
        let server = Server::always(Reply::status(404).body("no such thing"));
        let request = TestRequest::get(server.url("/missing"));
        let run = adapter.run(&Retrier::default(), request, Clock::Virtual);

        assert_eq!(run.status(), Some(404), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"no such thing"[..]));
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::FinalStatus)
        );
        assert_eq!(server.requests(), 1);
    });
}
