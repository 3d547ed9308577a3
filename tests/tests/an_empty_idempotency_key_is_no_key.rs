//! An empty or blank `Idempotency-Key` is no key: a server cannot deduplicate on it, so a POST
//! that carries one is not retried (reason `no_idempotency_key`), on every adapter. A
//! "generate a key" option replaces such a value with a real key.

use backstop::idempotency::ensure_idempotency_key;
use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::adapters::{for_each_adapter, Clock};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

fn busy_then_created() -> Server {
    Server::start([Reply::status(503).into(), Reply::status(201).into()])
}

#[test]
fn an_empty_or_blank_idempotency_key_does_not_opt_a_post_into_retries() {
    for_each_adapter(|adapter| {
        for key in ["", " ", "\t "] {
            let server = busy_then_created();
            let request = TestRequest::post(server.url("/orders"))
                .body("{}")
                .idempotency_key(key);
            let run = adapter.run(&Retrier::default(), request, Clock::Virtual);

            assert_eq!(run.status(), Some(503), "{adapter:?} {key:?}: {run:?}");
            assert_eq!(
                (run.outcome().attempts, run.outcome().reason),
                (1, StopReason::NoIdempotencyKey),
                "{adapter:?} {key:?}"
            );
            assert_eq!(server.requests(), 1, "{adapter:?} {key:?}");
        }
    });
}

#[test]
fn generating_a_key_replaces_an_empty_one() {
    let mut headers = http::HeaderMap::new();
    headers.insert("idempotency-key", http::HeaderValue::from_static(""));
    ensure_idempotency_key(&http::Method::POST, &mut headers);
    let key = headers["idempotency-key"].as_bytes();
    assert!(backstop::idempotency::is_idempotency_key(key), "{key:?}");
}
