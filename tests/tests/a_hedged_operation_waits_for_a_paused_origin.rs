//! The hedged loop consults the origin gate, over real loopback HTTP through every front door
//! that hedges (the tower layer on smol and on tokio, the reqwest middleware): a hedged
//! operation's `503 Retry-After: 2` closes its origin's gate, and a second hedged operation
//! started right after sends nothing, not even its first copy, until the reopening; then its
//! copy is the gate's probe, and its success reopens the origin. On virtual time: the wait,
//! with no copy in flight, takes no real time, and its length is the machine's.

use std::sync::Arc;
use std::time::Duration;

use backstop::hedging::HedgeTrigger;
use backstop::{EventKind, GateConfig, Hedging, OriginGates, Policy, Retrier};
use backstop_tests::adapters::{Adapter, Clock};
use backstop_tests::events::recorded;
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// The async front doors: the ones that hedge.
const HEDGING: [Adapter; 3] = [Adapter::TowerSmol, Adapter::TowerTokio, Adapter::Reqwest];

/// Two copies, 5 s apart, within `max_elapsed`.
fn hedging(max_elapsed: Duration) -> Policy {
    Policy::builder()
        .attempt_timeout(Duration::from_secs(10))
        .max_elapsed(max_elapsed)
        .hedging(Hedging::fixed(Duration::from_secs(5)).max_attempts(2))
        .build()
        .expect("a valid policy")
}

#[test]
fn a_hedged_operation_waits_for_an_origin_another_one_paused() {
    for adapter in HEDGING {
        let server = Server::start([
            Reply::status(503).header("Retry-After", "2").into(),
            Reply::status(200).body("after the pause").into(),
        ]);
        let gates = Arc::new(
            OriginGates::new(GateConfig::new().spread(Duration::ZERO)).expect("a valid config"),
        );
        let (retrier, events) =
            recorded(Retrier::new(hedging(Duration::from_secs(30))).origin_gates(gates));

        // The first operation's deadline (1 s) comes before the server's 2 s: it returns the
        // 503 having sent one copy, and leaves the gate closed.
        let first = adapter.run(
            &retrier,
            TestRequest::get(server.url("/a")).policy(hedging(Duration::from_secs(1))),
            Clock::Virtual,
        );
        let context = format!("{adapter:?}: {first:?}");
        assert_eq!(first.status(), Some(503), "{context}");
        assert_eq!(server.requests(), 1, "{context}");

        // Another path on the same origin, right after: the same gate, closed.
        let second = adapter.run(&retrier, TestRequest::get(server.url("/b")), Clock::Virtual);
        let context = format!("{adapter:?}: {second:?}");
        assert_eq!(second.status(), Some(200), "{context}");
        assert_eq!(second.outcome().attempts, 1, "{context}");
        assert_eq!(server.requests(), 2, "{context}");
        // Its first copy waited for the reopening (about 2 s, skipped on virtual time) before
        // it went out: the server saw nothing of it before.
        assert!(second.skipped >= Duration::from_millis(1_900), "{context}");
        let events = events.all();
        let sent_at: Vec<Duration> = events
            .iter()
            .filter_map(|e| match e {
                EventKind::CopySent {
                    copy: 1,
                    trigger: HedgeTrigger::First,
                    elapsed,
                } => Some(*elapsed),
                _ => None,
            })
            .collect();
        assert_eq!(sent_at.len(), 2, "{adapter:?}: {events:?}");
        assert!(
            sent_at[1] >= Duration::from_millis(1_900),
            "{adapter:?}: the second operation's copy went out {:?} after its start",
            sent_at[1]
        );
        // The first copy's 503 closed the gate; the second operation's copy was the probe.
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventKind::GateClosed { attempt: 1, .. })),
            "{adapter:?}: {events:?}"
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventKind::GateReopened { attempt: 1, .. })),
            "{adapter:?}: {events:?}"
        );
    }
}
