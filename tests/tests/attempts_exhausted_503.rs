//! 503 on every attempt: when the attempts run out, the last 503 and its body are returned.

use backstop::Retrier;
use backstop::{Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn exhausted_attempts_return_the_last_503_and_its_body() {
    for_each_adapter(|adapter| {
        let server =
            Server::start(["first", "second", "third"].map(|b| Reply::status(503).body(b).into()));
        let policy = Policy::builder().max_attempts(3).build().expect("policy");
        let request = TestRequest::get(server.url("/"));
        let run = adapter.run(&Retrier::new(policy), request, Clock::Virtual);

        assert_eq!(run.status(), Some(503), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"third"[..]));
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (3, StopReason::Attempts)
        );
        assert_eq!(server.requests(), 3);
    });
}
