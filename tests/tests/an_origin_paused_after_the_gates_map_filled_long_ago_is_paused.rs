//! A full map of origin gates makes room for a new origin once an old one's pause is long
//! over: two origins each paused once by a `429 Retry-After: 60` fill a map of two, and an
//! hour later nobody asks them again; a third origin's `429 Retry-After: 60` then pauses that
//! origin's next operation (nothing is sent to it). Through every front door, over real
//! loopback HTTP, on virtual time.

use std::sync::Arc;
use std::time::Duration;

use backstop::{GateConfig, OriginGates, Policy, Retrier, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// How long after the first two origins' pauses the third origin's operations run.
const LATER: Duration = Duration::from_secs(3_600);

#[test]
fn an_hour_after_two_origins_were_paused_a_third_origins_retry_after_pauses_it() {
    for_each_adapter(|adapter| {
        let pushback = || Server::always(Reply::status(429).header("Retry-After", "60"));
        let (a, b, c) = (pushback(), pushback(), pushback());
        // One attempt per operation, and none at all while the origin is paused.
        let policy = Policy::builder()
            .max_attempts(1)
            .fail_fast_when_paused(true)
            .build()
            .expect("a valid policy");
        let gates = Arc::new(
            OriginGates::new(GateConfig::new())
                .expect("a valid config")
                .with_capacity(2),
        );
        let retrier = Retrier::new(policy).origin_gates(gates.clone());
        let run = |server: &Server, clock| {
            adapter.run(&retrier, TestRequest::get(server.url("/items")), clock)
        };

        // A and B are each paused once: the map is full.
        for server in [&a, &b] {
            let paused = run(server, Clock::Virtual);
            assert_eq!(paused.status(), Some(429), "{adapter:?}: {paused:?}");
        }

        // An hour later, C's first operation is told the same.
        let first = run(&c, Clock::VirtualAhead(LATER));
        assert_eq!(first.status(), Some(429), "{adapter:?}: {first:?}");
        // Its next operation is held back by that pushback: nothing is sent.
        let next = run(&c, Clock::VirtualAhead(LATER));
        let outcome = next.outcome();
        assert_eq!(
            (outcome.reason, outcome.attempts),
            (StopReason::OriginPaused, 0),
            "{adapter:?}: {next:?}"
        );
        assert_eq!(c.requests(), 1, "{adapter:?}: nothing sent while paused");
        let c_uri = c.url("/").parse().expect("a URI");
        assert!(
            gates.get(&c_uri).is_some_and(|gate| gate.closes() == 1),
            "{adapter:?}: C's gate is kept, and its 429 closed it"
        );
    });
}
