//! A wait that would end after the overall deadline is not waited: the last response is
//! returned at once, its body intact, with reason "deadline".

use std::time::Duration;

use backstop::Retrier;
use backstop::{Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn a_wait_past_the_deadline_returns_the_last_response_at_once() {
    for_each_adapter(|adapter| {
        let server = Server::always(
            Reply::status(503)
                .header("Retry-After", "5")
                .body("busy for 5 s"),
        );
        let policy = Policy::builder()
            .max_elapsed(Duration::from_secs(2))
            .build()
            .expect("policy");
        let request = TestRequest::get(server.url("/"));
        let run = adapter.run(&Retrier::new(policy), request, Clock::Real);

        assert_eq!(run.status(), Some(503), "{adapter:?}: {run:?}");
        assert_eq!(run.body(), Some(&b"busy for 5 s"[..]));
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::Deadline)
        );
        assert!(run.real < Duration::from_secs(1), "{adapter:?}: {run:?}");
        assert_eq!(server.requests(), 1);
    });
}
