//! A URL or header that does not convert is an error before anything is sent: on every
//! adapter that takes a `RetryRequest` (no attempt, reason `PermanentError`), and through the
//! reqwest middleware and the tower layer, where the stack's own builder refuses it before the
//! retry loop runs.

use backstop::StopReason;
use backstop::{Retrier, RetryRequest, VirtualTime};
use backstop_tests::adapters::{Adapter, Clock};
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};

#[test]
fn a_bad_header_value_is_refused_on_every_adapter_without_sending() {
    let server = Server::always(Reply::status(200));
    for adapter in Adapter::CLIENTS {
        let request = RetryRequest::get(server.url("/"))
            .header("authorization", "Bearer s3cret\r\nX-Injected: 1");
        let run = adapter.run(&Retrier::default(), request, Clock::Real);
        assert!(run.result.is_err(), "{adapter:?}: {run:?}");
        let outcome = run.outcome();
        assert_eq!(
            (outcome.attempts, outcome.reason, outcome.last),
            (0, StopReason::PermanentError, None),
            "{adapter:?}"
        );
    }
    assert_eq!(server.requests(), 0);
    assert_eq!(server.connections(), 0);
}

#[test]
fn a_bad_url_is_refused_on_every_adapter_without_sending() {
    for adapter in Adapter::CLIENTS {
        let request = RetryRequest::get("http://exa mple.invalid/");
        let run = adapter.run(&Retrier::default(), request, Clock::Real);
        assert!(run.result.is_err(), "{adapter:?}: {run:?}");
        assert_eq!(run.outcome().attempts, 0, "{adapter:?}");
    }
}

#[test]
fn reqwest_refuses_a_bad_header_before_the_middleware_sends() {
    let server = Server::always(Reply::status(200));
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let error = block_on(async {
        let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
        client
            .get(server.url("/"))
            .header("authorization", "Bearer s3cret\r\n")
            .send()
            .await
    })
    .expect_err("an invalid header value");
    assert!(error.is_builder(), "{error:?}");
    assert!(!error.to_string().contains("s3cret"), "{error}");
    assert_eq!(server.connections(), 0);
}

#[test]
fn http_refuses_a_bad_header_before_the_tower_layer_sends() {
    // The tower layer takes an `http::Request`, whose builder refuses the value: the request
    // never exists, so nothing reaches the layer or the server.
    let error = http::Request::get("http://127.0.0.1/")
        .header("authorization", "Bearer s3cret\r\n")
        .body(())
        .expect_err("an invalid header value");
    assert!(!error.to_string().contains("s3cret"), "{error}");
}
