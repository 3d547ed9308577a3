//! An abort from another thread while the request is in flight (the server hangs): the request
//! is interrupted, the call returns "aborted" (not a timeout), and nothing more is sent.

use std::time::Duration;

use backstop::{Abort, Retrier};
use backstop::{Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock, Failure};
use backstop_tests::server::{Action, Server};
use backstop_tests::TestRequest;

#[test]
fn abort_during_the_request_interrupts_it_and_sends_nothing_more() {
    for_each_adapter(|adapter| {
        let server = std::sync::Arc::new(Server::always(Action::Hang));
        let policy = Policy::builder()
            .attempt_timeout(Duration::from_secs(30))
            .max_elapsed(Duration::from_secs(60))
            .build()
            .expect("policy");
        let abort = Abort::new();
        let aborter = server.abort_once_requests_arrive(1, &abort);
        let request = TestRequest::get(server.url("/hang")).abort_on(&abort);
        let run = adapter.run(&Retrier::new(policy), request, Clock::Real);

        assert!(
            aborter.join().expect("aborter"),
            "{adapter:?}: the request never arrived"
        );
        let Err(Failure::Aborted(outcome)) = run.result else {
            panic!("{adapter:?}: expected aborted, got {run:?}");
        };
        assert_eq!((outcome.attempts, outcome.reason), (1, StopReason::Aborted));
        assert!(run.real < Duration::from_secs(5), "{adapter:?}: {run:?}");
        assert_eq!(server.requests(), 1);
    });
}
