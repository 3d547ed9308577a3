//! A discarded response's body is drained during the wait before the next attempt, not after
//! it, on every adapter: with a 503 whose body stalls, the retry goes out when the wait ends
//! and the operation stays within `Policy::worst_case().elapsed` (the drain limits allow 2 s,
//! which the wait cuts short).

use std::time::Duration;

use backstop::transport::DrainLimits;
use backstop::Retrier;
use backstop::{Backoff, Jitter, Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn draining_a_discarded_body_happens_during_the_wait() {
    let wait = Duration::from_millis(200);
    let policy = Policy::builder()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(100))
        .backoff(Backoff::constant(wait))
        .jitter(Jitter::None)
        .max_retry_after(wait)
        .build()
        .expect("policy");
    let worst = policy.worst_case().elapsed;
    assert_eq!(worst, Duration::from_millis(400));
    let retrier = Retrier::new(policy).drain(DrainLimits::new(64 * 1024, Duration::from_secs(2)));
    for_each_adapter(|adapter| {
        let server = Server::start([
            Action::TrickleBody {
                reply: Reply::status(503).body([b'x'; 600]),
                gap: Duration::from_secs(1),
            },
            Reply::status(200).body("ok").into(),
        ]);
        let request = TestRequest::get(server.url("/stalled"));
        let run = adapter.run(&retrier, request, Clock::Virtual);

        let context = format!("{adapter:?}: {run:?}");
        assert_eq!(run.status(), Some(200), "{context}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (2, StopReason::FinalStatus),
            "{context}"
        );
        assert!(outcome.elapsed <= worst, "{context}");
    });
}
