//! GitHub's documented primary-limit answer (`403 Forbidden`, `x-ratelimit-remaining: 0`,
//! `x-ratelimit-reset: <Unix time>`) is pushback: 20 operations share one `OriginGates`; the
//! first one's 403 closes the origin until the reset, the other 19 (started once it is
//! closed) are held by the gate instead of each hitting the server, and every operation ends
//! with the 200 the server gives after the reset. Through every front door, over real loopback
//! HTTP.
//!
//! On the real clock, with a one-second reset: the operations wait for one another's real
//! traffic (the probe's answer), and an operation on a virtual clock of its own would skip
//! through its deadline, asking again every recheck, while that answer is on its way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use backstop::{EventKind, GateConfig, OriginGates, Policy, Retrier, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::events::recorded;
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// The operations sharing the gate.
const TASKS: usize = 20;
/// The response's `Date` (1_700_000_000 as an HTTP-date) and the quota's reset, a second
/// later: the wait does not depend on the test machine's wall clock.
const DATE: &str = "Tue, 14 Nov 2023 22:13:20 GMT";
const RESET: &str = "1700000001";
const RESET_IN: Duration = Duration::from_secs(1);

/// The answer to the first request, as GitHub documents it.
fn primary_limit() -> Reply {
    Reply::status(403)
        .header("Date", DATE)
        .header("x-ratelimit-limit", "60")
        .header("x-ratelimit-remaining", "0")
        .header("x-ratelimit-used", "60")
        .header("x-ratelimit-reset", RESET)
        .header("x-ratelimit-resource", "core")
        .header("Content-Type", "application/json; charset=utf-8")
        .body(r#"{"message":"API rate limit exceeded for 127.0.0.1.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}"#)
}

#[test]
fn twenty_operations_are_held_by_the_gate_until_the_quota_resets() {
    for_each_adapter(|adapter| {
        let server = Server::start([primary_limit().into(), Reply::status(200).body("ok").into()]);
        // A new user's setup: the default policy, one shared set of gates.
        let gates = Arc::new(
            OriginGates::new(GateConfig::new().spread(Duration::ZERO)).expect("a valid config"),
        );
        let (retrier, events) = recorded(Retrier::new(Policy::default()).origin_gates(gates));
        let run = |retrier: &Retrier| {
            let retrier = retrier.clone();
            let url = server.url("/repos/o/r/issues");
            std::thread::spawn(move || adapter.run(&retrier, TestRequest::get(url), Clock::Real))
        };

        let first = run(&retrier);
        let closed_gate = events.wait_for(Duration::from_secs(10), |e| {
            matches!(e, EventKind::GateClosed { attempt: 1, .. })
        });
        assert!(
            closed_gate,
            "{adapter:?}: the 403 never closed the gate: {:?}",
            events.all()
        );
        let closed = Instant::now();
        let others: Vec<_> = (1..TASKS).map(|_| run(&retrier)).collect();
        // Half-way to the reset: the 403 is all that reached the server.
        std::thread::sleep((RESET_IN / 2).saturating_sub(closed.elapsed()));
        assert_eq!(
            server.requests(),
            1,
            "{adapter:?}: operations sent into an exhausted quota"
        );

        let first = first.join().expect("the first operation's thread");
        assert_eq!(first.status(), Some(200), "{adapter:?}: {first:?}");
        assert_eq!(
            (first.outcome().attempts, first.outcome().reason),
            (2, StopReason::FinalStatus),
            "{adapter:?}"
        );
        assert!(
            first.real >= RESET_IN,
            "{adapter:?}: retried before the reset: {first:?}"
        );
        for other in others {
            let other = other.join().expect("an operation's thread");
            assert_eq!(other.status(), Some(200), "{adapter:?}: {other:?}");
            assert_eq!(other.outcome().attempts, 1, "{adapter:?}: {other:?}");
        }
        // One request before the reset (the 403), then one per operation.
        assert_eq!(server.requests(), TASKS + 1, "{adapter:?}");
    });
}
