//! A reset field is a floor only when its quota is exhausted: a 503 from an API that sends
//! GitHub-style quota fields on every response (`x-ratelimit-remaining: 4999`, a reset 50
//! minutes away) is retried after the backoff, not returned as `retry_after_above_max`, and a
//! `RateLimit-Reset: 0` with quota left is no "retry now". On every adapter.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use backstop::Retrier;
use backstop::{Backoff, Jitter, Policy, StopReason};
use backstop_tests::adapters::{for_each_adapter, Adapter, Clock, Run};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// A constant 2 s backoff, so that the wait taken tells backoff from floor.
fn retrier() -> Retrier {
    Retrier::new(
        Policy::builder()
            .backoff(Backoff::constant(Duration::from_secs(2)))
            .jitter(Jitter::None)
            .max_elapsed(Duration::from_secs(120))
            .build()
            .expect("policy"),
    )
}

/// One GET through `adapter` on virtual time against `busy`, then a 200.
fn busy_then_ok(adapter: Adapter, busy: Reply) -> Run {
    let server = Server::start([busy.into(), Reply::status(200).body("ok").into()]);
    adapter.run(
        &retrier(),
        TestRequest::get(server.url("/")),
        Clock::Virtual,
    )
}

#[test]
fn quota_fields_on_a_503_with_quota_left_do_not_stop_the_retries() {
    let in_50_minutes = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 3000;
    for_each_adapter(|adapter| {
        let busy = Reply::status(503)
            .header("x-ratelimit-limit", "5000")
            .header("x-ratelimit-remaining", "4999")
            .header("x-ratelimit-reset", in_50_minutes.to_string());
        let run = busy_then_ok(adapter, busy);

        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert_eq!(
            (run.outcome().attempts, run.outcome().reason),
            (2, StopReason::FinalStatus),
            "{adapter:?}"
        );
        // The backoff's 2 s, not 50 minutes.
        assert!(
            run.skipped < Duration::from_secs(10),
            "{adapter:?}: {run:?}"
        );
    });
}

#[test]
fn a_zero_reset_with_quota_left_waits_the_backoff() {
    for_each_adapter(|adapter| {
        let busy = Reply::status(503)
            .header("RateLimit-Remaining", "97")
            .header("RateLimit-Reset", "0");
        let run = busy_then_ok(adapter, busy);

        assert_eq!(run.status(), Some(200), "{adapter:?}: {run:?}");
        assert!(
            run.skipped >= Duration::from_secs(2) - Duration::from_millis(50),
            "{adapter:?}: the backoff was skipped: {run:?}"
        );
    });
}
