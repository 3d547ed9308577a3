//! One retrier (one client, middleware or layer) for many requests, each with the policy it
//! needs: a request's own `Policy` (`TestRequest::policy`; through reqwest and tower, in its
//! extensions) replaces the retrier's for that request only, on every adapter.

use backstop::{Policy, Retrier, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn a_requests_policy_replaces_the_retriers_for_that_request_only() {
    for_each_adapter(|adapter| {
        let shared = Retrier::default();
        let twice = Policy::builder().max_attempts(2).build().expect("valid");

        let server = Server::always(Reply::status(503));
        let request = TestRequest::get(server.url("/report")).policy(twice);
        let run = adapter.run(&shared, request, Clock::Virtual);
        let outcome = run.outcome();
        assert_eq!(
            (run.status(), outcome.attempts, outcome.reason),
            (Some(503), 2, StopReason::Attempts),
            "{adapter:?}: {run:?}"
        );
        assert_eq!(server.requests(), 2, "{adapter:?}");

        // The next request on the same retrier has the retrier's own policy (4 attempts).
        let server = Server::always(Reply::status(503));
        let run = adapter.run(
            &shared,
            TestRequest::get(server.url("/report")),
            Clock::Virtual,
        );
        assert_eq!(run.outcome().attempts, 4, "{adapter:?}: {run:?}");
        assert_eq!(server.requests(), 4, "{adapter:?}");
    });
}
