//! A 403 that is not a rate-limit answer (no quota fields, or quota left) is a refusal: every
//! front door returns it at once, with one request, and it does not close the origin's gate
//! (the next operation to the origin is sent at once).

use std::sync::Arc;
use std::time::Duration;

use backstop::{GateConfig, OriginGates, Retrier, StopReason};
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn a_403_without_an_exhausted_quota_is_returned_at_once_and_pauses_nothing() {
    let refusals = [
        Reply::status(403).body("forbidden"),
        // GitHub sends its quota fields on every response: with quota left, a 403 is a refusal.
        Reply::status(403)
            .header("Date", "Tue, 14 Nov 2023 22:13:20 GMT")
            .header("x-ratelimit-remaining", "59")
            .header("x-ratelimit-reset", "1700000005")
            .body("forbidden"),
    ];
    for refusal in refusals {
        for_each_adapter(|adapter| {
            let server = Server::always(refusal.clone());
            let gates = Arc::new(
                OriginGates::new(GateConfig::new().spread(Duration::ZERO)).expect("a valid config"),
            );
            let retrier = Retrier::default().origin_gates(gates);

            let run = adapter.run(&retrier, TestRequest::get(server.url("/")), Clock::Virtual);
            assert_eq!(run.status(), Some(403), "{adapter:?}: {run:?}");
            assert_eq!(run.body(), Some(&b"forbidden"[..]));
            let outcome = run.outcome();
            assert_eq!(
                (outcome.attempts, outcome.reason),
                (1, StopReason::FinalStatus),
                "{adapter:?}"
            );
            assert_eq!(run.skipped, Duration::ZERO, "{adapter:?}: {run:?}");

            let next = adapter.run(&retrier, TestRequest::get(server.url("/")), Clock::Virtual);
            assert_eq!(next.outcome().attempts, 1, "{adapter:?}: {next:?}");
            assert_eq!(
                next.skipped,
                Duration::ZERO,
                "{adapter:?}: the origin paused"
            );
            assert_eq!(server.requests(), 2, "{adapter:?}");
        });
    }
}
