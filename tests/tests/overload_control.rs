//! Overload control past one operation, over real loopback HTTP through every front door:
//! a server's `Retry-After` on a 503 pauses the next operation to the origin (or fails it fast),
//! and a 429 turns the retrier's adaptive rate limiter on, which paces the next operation. On
//! virtual time: the waits take no real time, and their lengths are the machine's.

use std::sync::Arc;
use std::time::Duration;

use backstop::observe::DelaySource;
use backstop::{
    AdaptiveRateLimiter, EventKind, GateConfig, OriginGates, Policy, Retrier, StopReason,
};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::events::recorded;
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// One attempt per operation: the pause seen is the gate's, not the operation's own retry.
fn once(fail_fast: bool) -> Policy {
    Policy::builder()
        .max_attempts(1)
        .max_elapsed(Duration::from_secs(30))
        .fail_fast_when_paused(fail_fast)
        .build()
        .expect("a valid policy")
}

fn gates() -> Arc<OriginGates> {
    Arc::new(OriginGates::new(GateConfig::new().spread(Duration::ZERO)).expect("a valid config"))
}

#[test]
fn a_503_with_retry_after_pauses_the_next_operation_to_the_origin() {
    for_each_adapter(|adapter| {
        let server = Server::start([
            Reply::status(503).header("Retry-After", "5").into(),
            Reply::status(200).body("after the pause").into(),
        ]);
        let (retrier, events) = recorded(Retrier::new(once(false)).origin_gates(gates()));

        let first = adapter.run(&retrier, TestRequest::get(server.url("/a")), Clock::Virtual);
        assert_eq!(first.status(), Some(503), "{adapter:?}");
        // Another path on the same origin: the same gate.
        let second = adapter.run(&retrier, TestRequest::get(server.url("/b")), Clock::Virtual);
        assert_eq!(second.status(), Some(200), "{adapter:?}: {second:?}");
        assert_eq!(second.outcome().attempts, 1);
        // Its first attempt waited for the reopening (about 5 s, skipped on virtual time).
        assert!(
            second.skipped >= Duration::from_secs(4),
            "{adapter:?}: {second:?}"
        );
        let events = events.all();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventKind::GateClosed { attempt: 1, .. })),
            "{adapter:?}: {events:?}"
        );
        assert!(
            events.iter().any(|e| matches!(
                e,
                EventKind::WaitStarted {
                    next_attempt: 1,
                    cause: None,
                    source: DelaySource::OriginPaused,
                    ..
                }
            )),
            "{adapter:?}: {events:?}"
        );
        assert_eq!(server.requests(), 2);
    });
}

#[test]
fn with_fail_fast_the_next_operation_gives_up_unsent_while_the_origin_is_paused() {
    for_each_adapter(|adapter| {
        let server = Server::always(Reply::status(503).header("Retry-After", "30"));
        let retrier = Retrier::new(once(true)).origin_gates(gates());

        let first = adapter.run(&retrier, TestRequest::get(server.url("/a")), Clock::Virtual);
        assert_eq!(first.status(), Some(503), "{adapter:?}");
        let second = adapter.run(&retrier, TestRequest::get(server.url("/a")), Clock::Virtual);
        let outcome = second.outcome();
        assert_eq!(
            (outcome.reason, outcome.attempts),
            (StopReason::OriginPaused, 0),
            "{adapter:?}: {second:?}"
        );
        assert_eq!(
            server.requests(),
            1,
            "{adapter:?}: nothing sent while paused"
        );
    });
}

#[test]
fn another_origin_is_not_paused() {
    for_each_adapter(|adapter| {
        let paused = Server::always(Reply::status(503).header("Retry-After", "30"));
        let other = Server::always(Reply::status(200));
        let retrier = Retrier::new(once(true)).origin_gates(gates());

        let _ = adapter.run(&retrier, TestRequest::get(paused.url("/")), Clock::Virtual);
        let run = adapter.run(&retrier, TestRequest::get(other.url("/")), Clock::Virtual);
        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
    });
}

#[test]
fn a_429_turns_the_rate_limiter_on_and_it_paces_the_next_operation() {
    for_each_adapter(|adapter| {
        let server = Server::start([Reply::status(429).into(), Reply::status(200).into()]);
        let limiter = Arc::new(AdaptiveRateLimiter::new());
        let (retrier, events) = recorded(Retrier::new(once(false)).rate_limiter(limiter.clone()));

        let first = adapter.run(&retrier, TestRequest::get(server.url("/a")), Clock::Virtual);
        assert_eq!(first.status(), Some(429), "{adapter:?}");
        assert!(limiter.is_enabled(), "{adapter:?}");
        let second = adapter.run(&retrier, TestRequest::get(server.url("/a")), Clock::Virtual);
        assert_eq!(second.status(), Some(200), "{adapter:?}: {second:?}");
        let events = events.all();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventKind::RateLimiterEnabled { attempt: 1, .. })),
            "{adapter:?}: {events:?}"
        );
        // Right after a throttle the bucket is empty: the next attempt waited for a token.
        assert!(
            events.iter().any(|e| matches!(
                e,
                EventKind::WaitStarted {
                    next_attempt: 1,
                    source: DelaySource::RateLimited,
                    ..
                }
            )),
            "{adapter:?}: {events:?}"
        );
    });
}
