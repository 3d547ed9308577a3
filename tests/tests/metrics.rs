//! The usual retry metrics: share of operations that retried, mean attempts, successes after retry,
//! operations that exhausted a limit, and the 429/503/504 counts.

use backstop::Policy;
use backstop::{Metrics, Retrier};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn metrics_count_retries_successes_exhaustion_and_statuses() {
    for_each_adapter(|adapter| {
        let metrics = Metrics::new();
        let policy = Policy::builder().max_attempts(3).build().expect("policy");
        let retrier = Retrier::new(policy).metrics(&metrics);
        let get = |server: &Server| TestRequest::get(server.url("/"));

        // Succeeds after two retries: 503, 429, 200.
        let flaky = Server::start([
            Reply::status(503).into(),
            Reply::status(429).into(),
            Reply::status(200).into(),
        ]);
        let _ = adapter.run(&retrier, get(&flaky), Clock::Virtual);
        // Succeeds at once.
        let fine = Server::always(Reply::status(200));
        let _ = adapter.run(&retrier, get(&fine), Clock::Virtual);
        // Exhausts its attempts on 504.
        let down = Server::always(Reply::status(504));
        let _ = adapter.run(&retrier, get(&down), Clock::Virtual);

        let m = metrics.snapshot();
        assert_eq!(
            (
                m.operations,
                m.retried,
                m.attempts,
                m.successes_after_retry,
                m.exhausted
            ),
            (3, 2, 7, 1, 1),
            "{adapter:?}: {m:?}"
        );
        assert_eq!(
            (m.status_429, m.status_503, m.status_504),
            (1, 1, 3),
            "{adapter:?}"
        );
        assert!((m.retried_share() - 2.0 / 3.0).abs() < 1e-9);
        assert!((m.mean_attempts() - 7.0 / 3.0).abs() < 1e-9);
    });
}
