//! A full map of origin gates never evicts a gate some operation still holds: that operation's
//! `503 Retry-After: 30` must close the gate the origin's next operation consults, not an
//! orphan. Through every front door, over real loopback HTTP, on virtual time.

use std::sync::Arc;
use std::time::Duration;

use backstop::{GateConfig, OriginGates, Policy, Retrier, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// How long the first origin takes to answer: the second origin's whole operation fits in it.
const IN_FLIGHT: Duration = Duration::from_millis(1500);

#[test]
fn a_gate_an_operation_holds_is_not_evicted_and_keeps_the_servers_pushback() {
    for_each_adapter(|adapter| {
        let a = Server::always(
            Reply::status(503)
                .header("Retry-After", "30")
                .delay(IN_FLIGHT),
        );
        let b = Server::always(Reply::status(200));
        // One attempt per operation, and none at all while the origin is paused.
        let policy = Policy::builder()
            .max_attempts(1)
            .max_elapsed(Duration::from_secs(60))
            .fail_fast_when_paused(true)
            .build()
            .expect("a valid policy");
        let gates = Arc::new(
            OriginGates::new(GateConfig::new().spread(Duration::ZERO))
                .expect("a valid config")
                .with_capacity(1),
        );
        let retrier = Retrier::new(policy).origin_gates(gates.clone());

        // Origin A's operation is in flight (its gate taken, its request at the server)...
        let in_flight = std::thread::spawn({
            let retrier = retrier.clone();
            let url = a.url("/order");
            move || adapter.run(&retrier, TestRequest::get(url), Clock::Virtual)
        });
        assert!(
            a.wait_for_requests(1, Duration::from_secs(10)),
            "{adapter:?}"
        );
        // ...when origin B's first operation asks the full map for a gate.
        let other = adapter.run(&retrier, TestRequest::get(b.url("/")), Clock::Virtual);
        assert_eq!(other.status(), Some(200), "{adapter:?}: {other:?}");
        assert!(
            !in_flight.is_finished(),
            "{adapter:?}: the scenario needs A's operation still in flight here"
        );

        // A's answer: 503 with Retry-After: 30, which closes A's gate.
        let first = in_flight.join().expect("the operation's thread");
        assert_eq!(first.status(), Some(503), "{adapter:?}: {first:?}");
        // The next operation to A is held back by the server's pushback: nothing is sent.
        let next = adapter.run(&retrier, TestRequest::get(a.url("/order")), Clock::Virtual);
        let outcome = next.outcome();
        assert_eq!(
            (outcome.reason, outcome.attempts),
            (StopReason::OriginPaused, 0),
            "{adapter:?}: {next:?}"
        );
        assert_eq!(a.requests(), 1, "{adapter:?}: nothing sent while paused");

        let a_uri = a.url("/").parse().expect("a URI");
        let kept = gates.get(&a_uri);
        assert!(
            kept.as_ref().is_some_and(|gate| gate.closes() == 1),
            "{adapter:?}: A's gate is kept, and the first 503 closed it: {kept:?}"
        );
    });
}
