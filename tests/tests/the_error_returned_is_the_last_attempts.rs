//! The error an operation returns is its last attempt's, the one `Outcome::last` describes,
//! on every adapter: attempt 1 is reset, attempt 2 times out, and the caller gets a time-out,
//! not the reset.

use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::Retrier;
use backstop::{ErrorKind, Policy, StopReason};
use backstop_tests::adapters::{assert_bounded, for_each_adapter, Clock, Failure};
use backstop_tests::server::{Action, Server};
use backstop_tests::TestRequest;

#[test]
fn the_error_returned_is_the_last_attempts() {
    let policy = Policy::builder()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(300))
        .build()
        .expect("policy");
    for_each_adapter(|adapter| {
        let server = Server::start([Action::Reset, Action::Hang]);
        let request = TestRequest::get(server.url("/"));
        let run = adapter.run(&Retrier::new(policy).seed(3), request, Clock::Virtual);

        let context = format!("{adapter:?}: {run:?}");
        assert!(matches!(run.result, Err(Failure::TimedOut(_))), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (2, StopReason::Attempts),
            "{context}"
        );
        assert!(
            matches!(outcome.last, Some(AttemptOutcome::Error(e)) if e.kind == ErrorKind::Timeout),
            "{context}"
        );
        assert_bounded(&run, &policy, &context);
    });
}
