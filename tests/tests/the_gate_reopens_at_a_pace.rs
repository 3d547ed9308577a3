//! A paused origin's held operations go back one at a time, at the pace the closing measured,
//! not all at once, on every front door: a `503 Retry-After: 1` closes the shared gate, eight
//! operations started meanwhile are held, the probe's `200` reopens the gate, and the held
//! operations are told slots about `1 s / 8` apart (the closing's length over the callers
//! it held), growing closer only as the reopening ages.
//!
//! Real time: the operations run at once on threads of their own, and `VirtualTime` keeps a
//! clock per operation. The assertions read the decisions (the slots each operation was told,
//! from its events), not when the requests happened to arrive.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backstop::observe::DelaySource;
use backstop::{EventKind, GateConfig, OriginGates, Policy, Retrier};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

const HELD: usize = 8;

/// Every operation's events, each with the instant it was emitted.
type Log = Arc<Mutex<Vec<(Instant, String, EventKind)>>>;

#[test]
fn held_operations_are_released_one_by_one_at_the_pace_the_closing_measured() {
    for_each_adapter(|adapter| {
        let mut script = vec![Reply::status(503).header("Retry-After", "1").into()];
        script.extend((0..HELD + 4).map(|_| Reply::status(200).body("ok").into()));
        let server = Server::start(script);
        let gates = OriginGates::new(GateConfig::new().spread(Duration::ZERO)).expect("valid");
        let log: Log = Arc::default();
        let sink = log.clone();
        let (closes, gate_closed) = std::sync::mpsc::channel();
        let policy = Policy::builder()
            .max_elapsed(Duration::from_secs(20))
            .build()
            .expect("a valid policy");
        let retrier = Retrier::new(policy)
            .origin_gates(Arc::new(gates))
            .on_event(move |e| {
                let entry = (Instant::now(), e.operation.to_owned(), e.kind);
                sink.lock().expect("log").push(entry);
                if matches!(e.kind, EventKind::GateClosed { .. }) {
                    let _ = closes.send(());
                }
            });

        let names: Vec<&'static str> = ["first", "h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"]
            .into_iter()
            .collect();
        let run = |name: &'static str| {
            let retrier = retrier.clone();
            let url = server.url("/x");
            std::thread::spawn(move || {
                adapter.run(&retrier, TestRequest::get(url).name(name), Clock::Real)
            })
        };
        // The first operation's 503 closes the gate; the others start while it is closed.
        let first = run(names[0]);
        let closed = gate_closed.recv_timeout(Duration::from_secs(10));
        assert!(closed.is_ok(), "{adapter:?}: no 503");
        let held: Vec<_> = names[1..].iter().map(|n| run(n)).collect();
        for (name, handle) in names.iter().zip(std::iter::once(first).chain(held)) {
            let run = handle.join().expect("the operation's thread");
            assert_eq!(run.status(), Some(200), "{adapter:?} {name}: {run:?}");
        }

        let log = log.lock().expect("log").clone();
        let reopened = log
            .iter()
            .find(|(_, _, k)| matches!(k, EventKind::GateReopened { .. }))
            .map(|(at, _, _)| *at)
            .unwrap_or_else(|| panic!("{adapter:?}: the probe reopened nothing: {log:?}"));
        // The slots: each held operation's wait for the gate decided after the reopening.
        let mut slots: Vec<Instant> = log
            .iter()
            .filter(|(at, _, _)| *at >= reopened)
            .filter_map(|(at, _, k)| match k {
                EventKind::WaitStarted {
                    delay,
                    source: DelaySource::OriginPaused,
                    ..
                } => Some(*at + *delay),
                _ => None,
            })
            .collect();
        slots.sort();
        // One operation finds the first slot free and goes at once; the others are paced.
        assert!(
            slots.len() >= HELD - 2,
            "{adapter:?}: {} paced of {HELD}: {log:?}",
            slots.len()
        );
        // The pace: 1 s closed over the 8 held, 125 ms a slot at first; at least half of it
        // between any two (the pace grows by a tenth a second, and emitting an event takes
        // a little time).
        for pair in slots.windows(2) {
            let gap = pair[1].saturating_duration_since(pair[0]);
            assert!(
                gap >= Duration::from_millis(60),
                "{adapter:?}: two slots {gap:?} apart: {slots:?}"
            );
        }
        let span = slots[slots.len() - 1].saturating_duration_since(slots[0]);
        assert!(
            span >= Duration::from_millis(500),
            "{adapter:?}: the held operations went within {span:?}"
        );
    });
}
