//! An opted-in POST with a generated `Idempotency-Key`: a reset after the request was sent is
//! retried, every attempt carries the same key, and every attempt carries the whole body (made
//! afresh by the body factory for each attempt where the adapter takes a `TestRequest`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Action, Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn opted_in_post_keeps_one_idempotency_key_and_replays_its_body() {
    for_each_adapter(|adapter| {
        let server = Server::start([
            Action::Reset,
            Reply::status(503).into(),
            Reply::status(201).body("created").into(),
        ]);
        let made = Arc::new(AtomicUsize::new(0));
        let counter = made.clone();
        let request = TestRequest::post(server.url("/orders"))
            .body_factory(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                bytes::Bytes::from_static(br#"{"sku":42}"#)
            })
            .generate_idempotency_key();
        // The key alone opts the POST in: the default policy retries it.
        let run = adapter.run(&Retrier::default(), request, Clock::Virtual);

        assert_eq!(run.status(), Some(201), "{adapter:?}: {run:?}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (3, StopReason::FinalStatus)
        );
        // reqwest and tower send a body of their own, made once and cloned per attempt.
        // A `ReplayBody` (the tower layer) is made once with the request, then once per
        // attempt; ureq and reqwest clone the bytes the factory made once.
        let made_per_attempt = if adapter.calls_the_body_factory_per_attempt() {
            1 + 3
        } else {
            1
        };
        assert_eq!(made.load(Ordering::SeqCst), made_per_attempt, "{adapter:?}");
        let recorded = server.recorded();
        assert_eq!(recorded.len(), 3);
        let key = recorded[0]
            .header("idempotency-key")
            .expect("a key")
            .to_vec();
        assert_eq!(key.len(), 36, "a UUID: {key:?}");
        for r in &recorded {
            assert_eq!(r.header("idempotency-key"), Some(&key[..]), "{adapter:?}");
            assert_eq!((r.method.as_str(), r.target.as_str()), ("POST", "/orders"));
        }
        // The first request was reset before its body was read; the others carry it whole.
        for r in &recorded[1..] {
            assert_eq!(r.body, br#"{"sku":42}"#, "{adapter:?}");
        }
    });
}
