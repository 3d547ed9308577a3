//! A body that trickles one byte a second, through every adapter. A discarded 503 whose body
//! trickles must not hold the retry up: it is dropped, not drained, and the retry gets the 200
//! at once. A 200 whose body trickles is handed to the caller as soon as its head arrives:
//! reading the body is the caller's business, not the retry loop's.

use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::Retrier;
use backstop::{Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn a_discarded_trickling_body_does_not_hold_up_the_retry() {
    let policy = policy();
    for_each_adapter(|adapter| {
        let server = Server::start([
            trickling(
                Reply::status(503)
                    .header("Retry-After", "0")
                    .body([b'x'; 600]),
            ),
            Reply::status(200).body("ok").into(),
        ]);
        let request = TestRequest::get(server.url("/trickle"));
        let run = adapter.run(&Retrier::new(policy).seed(4), request, Clock::Real);

        let context = format!("{adapter:?}: {run:?}");
        assert_eq!(run.status(), Some(200), "{context}");
        assert_eq!(run.body(), Some(&b"ok"[..]), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (2, StopReason::FinalStatus),
            "{context}"
        );
        assert_eq!(
            outcome.last,
            Some(AttemptOutcome::Response(200)),
            "{context}"
        );
        // Well under the one byte a second it would take to drain the 503's body.
        assert!(run.real < Duration::from_secs(2), "{context}");
        assert_eq!(server.requests(), 2, "{context}");
    });
}

#[test]
fn a_trickling_final_body_is_the_callers_to_read() {
    let policy = policy();
    for_each_adapter(|adapter| {
        let server = Server::always(trickling(Reply::status(200).body("xx")));
        let request = TestRequest::get(server.url("/trickle"));
        let run = adapter.run(&Retrier::new(policy).seed(5), request, Clock::Real);

        let context = format!("{adapter:?}: {run:?}");
        assert_eq!(run.status(), Some(200), "{context}");
        assert_eq!(run.body(), Some(&b"xx"[..]), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::FinalStatus),
            "{context}"
        );
        // The operation ended when the head arrived; the test then read the body (2 s).
        assert!(outcome.elapsed < Duration::from_secs(1), "{context}");
        assert!(run.real >= Duration::from_millis(1_500), "{context}");
        assert!(
            run.real < policy.max_elapsed() + policy.attempt_timeout(),
            "{context}"
        );
    });
}

fn policy() -> Policy {
    Policy::builder()
        .max_elapsed(Duration::from_secs(5))
        .attempt_timeout(Duration::from_secs(2))
        .build()
        .expect("policy")
}

/// `reply` with its head at once and its body one byte a second.
fn trickling(reply: Reply) -> Action {
    Action::TrickleBody {
        reply,
        gap: Duration::from_secs(1),
    }
}
