//! The caller's classification override covers every error, the timeout the loop enforces
//! included, on every adapter: against a server that never answers, a timeout mapped to
//! permanent stops after one request; a timeout mapped to not-sent retries a POST without an
//! `Idempotency-Key`. (ureq enforces its own timeouts: its error went through the override
//! already; the async adapters' loop timer now does too.)

use std::time::Duration;

use backstop::classify::ErrorClass;
use backstop::Retrier;
use backstop::{ErrorKind, Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock, Failure};
use backstop_tests::server::{Action, Server};
use backstop_tests::TestRequest;

fn policy() -> Policy {
    Policy::builder()
        .max_attempts(3)
        .attempt_timeout(Duration::from_millis(200))
        .build()
        .expect("policy")
}

fn timeout_is(class: ErrorClass) -> Retrier {
    Retrier::new(policy())
        .classify(move |kind, _error| (kind == ErrorKind::Timeout).then_some(class))
}

#[test]
fn the_classification_override_covers_the_loops_timeout() {
    for_each_adapter(|adapter| {
        let server = Server::always(Action::Hang);
        let request = TestRequest::get(server.url("/slow"));
        let run = adapter.run(&timeout_is(ErrorClass::Permanent), request, Clock::Virtual);

        let context = format!("{adapter:?}: {run:?}");
        assert!(matches!(run.result, Err(Failure::TimedOut(_))), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::PermanentError),
            "{context}"
        );
    });
}

#[test]
fn a_timeout_classified_not_sent_retries_a_post_without_a_key() {
    for_each_adapter(|adapter| {
        let server = Server::always(Action::Hang);
        let request = TestRequest::post(server.url("/orders")).body("{}");
        let run = adapter.run(&timeout_is(ErrorClass::NotSent), request, Clock::Virtual);

        let context = format!("{adapter:?}: {run:?}");
        assert!(matches!(run.result, Err(Failure::TimedOut(_))), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (3, StopReason::Attempts),
            "{context}"
        );
        assert!(
            server.wait_for_requests(3, Duration::from_secs(5)),
            "{context}"
        );
    });
}
