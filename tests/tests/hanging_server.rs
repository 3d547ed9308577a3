//! A server that never answers: the attempt times out (per-attempt timeout) and the request is
//! retried; the second attempt gets its answer.

use std::time::Duration;

use backstop::classify::AttemptOutcome;
use backstop::{ErrorKind, Policy, StopReason};
use backstop::{EventKind, Retrier};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;
use std::sync::{Arc, Mutex};

#[test]
fn hanging_attempt_times_out_and_is_retried() {
    for_each_adapter(|adapter| {
        let server = Server::start([
            Action::Hang,
            Reply::status(200).body("late but fine").into(),
        ]);
        let policy = Policy::builder()
            .attempt_timeout(Duration::from_millis(200))
            .build()
            .expect("policy");
        let causes = Arc::new(Mutex::new(Vec::new()));
        let seen = causes.clone();
        let retrier = Retrier::new(policy).on_event(move |e| {
            if let EventKind::WaitStarted { cause, .. } = e.kind {
                seen.lock().expect("lock").push(cause);
            }
        });
        let request = TestRequest::get(server.url("/slow"));
        let run = adapter.run(&retrier, request, Clock::Virtual);

        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (2, StopReason::FinalStatus)
        );
        let causes = causes.lock().expect("lock").clone();
        assert!(
            matches!(
                causes.as_slice(),
                [Some(AttemptOutcome::Error(e))] if e.kind == ErrorKind::Timeout
            ),
            "{adapter:?}: {causes:?}"
        );
        assert!(
            run.real >= Duration::from_millis(190),
            "{adapter:?}: {run:?}"
        );
        assert!(run.real < Duration::from_secs(3), "{adapter:?}: {run:?}");
        assert_eq!(server.requests(), 2);
    });
}
