//! A retry budget shared by a retrier's operations: once it is spent, the next operation gets
//! no retry and its 503 is returned at once, with reason "budget".

use std::sync::Arc;

use backstop::Retrier;
use backstop::{RetryQuota, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn a_spent_budget_stops_retries_across_operations() {
    for_each_adapter(|adapter| {
        // Room for exactly one retry.
        let quota = Arc::new(RetryQuota::new().with_capacity(5).with_retry_cost(5));
        let retrier = Retrier::default().budget(quota.clone()).seed(3);
        let server = Server::start([
            Reply::status(503).into(),
            Reply::status(200).into(),
            Reply::status(503).body("still down").into(),
            Reply::status(200).into(),
        ]);
        let get = || TestRequest::get(server.url("/"));

        let first = adapter.run(&retrier, get(), Clock::Virtual);
        assert_eq!(first.status(), Some(200), "{adapter:?}: {first:?}");
        assert_eq!(first.outcome().attempts, 2);

        let second = adapter.run(&retrier, get(), Clock::Virtual);
        assert_eq!(second.status(), Some(503), "{adapter:?}: {second:?}");
        assert_eq!(second.body(), Some(&b"still down"[..]));
        let outcome = second.outcome();
        assert_eq!((outcome.attempts, outcome.reason), (1, StopReason::Budget));
        assert_eq!(server.requests(), 3);
    });
}
