//! An operation that a paused origin turns away before its first attempt sent nothing, and
//! says so: `RetryError::NotSent` with the reason `origin_paused` and no attempt, not a
//! time-out, through every front door and on the hedged path; its message says nothing was
//! sent; its operation span is an error whose `error.type` is the reason. Over real loopback
//! HTTP, on virtual time.

#[path = "support/exported_spans.rs"]
mod exported_spans;
use exported_spans::exported;

use std::sync::Arc;
use std::time::Duration;

use backstop::{GateConfig, Hedging, OriginGates, Policy, Retrier, RetryError, StopReason};
use backstop_tests::adapters::{for_each_adapter, Adapter, Clock, Failure};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

/// One attempt (or copy) at a time, none while the origin is paused.
fn policy(hedged: bool) -> Policy {
    let builder = Policy::builder()
        .max_elapsed(Duration::from_secs(60))
        .fail_fast_when_paused(true);
    let builder = if hedged {
        builder.hedging(Hedging::fixed(Duration::from_secs(5)).max_attempts(2))
    } else {
        builder
    };
    builder.build().expect("a valid policy")
}

/// A retrier whose gates the server's `429 Retry-After: 30` has closed (one request sent).
fn paused(server: &Server, adapter: Adapter, hedged: bool) -> Retrier {
    let gates = OriginGates::new(GateConfig::new().spread(Duration::ZERO)).expect("a config");
    // The first answer is final for this operation (one attempt), and closes the gate.
    let retrier = Retrier::new(policy(hedged)).origin_gates(Arc::new(gates));
    let one = Policy::builder().max_attempts(1).build().expect("a policy");
    let first = adapter.run(
        &retrier,
        TestRequest::get(server.url("/a")).policy(one),
        Clock::Virtual,
    );
    assert_eq!(first.status(), Some(429), "{adapter:?}: {first:?}");
    retrier
}

fn pushing_back() -> Server {
    Server::always(Reply::status(429).header("Retry-After", "30"))
}

#[test]
fn a_turned_away_operation_is_not_sent_on_every_front_door() {
    for_each_adapter(|adapter| {
        let server = pushing_back();
        let retrier = paused(&server, adapter, false);
        let next = adapter.run(&retrier, TestRequest::get(server.url("/b")), Clock::Virtual);
        let context = format!("{adapter:?}: {next:?}");
        let Err(Failure::NotSent(outcome)) = next.result else {
            panic!("not `NotSent`: {context}")
        };
        assert_eq!(
            (outcome.reason, outcome.attempts, outcome.last),
            (StopReason::OriginPaused, 0, None),
            "{context}"
        );
        assert_eq!(server.requests(), 1, "{context}");
    });
}

#[test]
fn a_turned_away_hedged_operation_is_not_sent() {
    for adapter in [Adapter::TowerSmol, Adapter::TowerTokio, Adapter::Reqwest] {
        let server = pushing_back();
        let retrier = paused(&server, adapter, true);
        let next = adapter.run(&retrier, TestRequest::get(server.url("/b")), Clock::Virtual);
        let context = format!("{adapter:?}: {next:?}");
        let Err(Failure::NotSent(outcome)) = next.result else {
            panic!("not `NotSent`: {context}")
        };
        assert_eq!(
            (outcome.reason, outcome.attempts),
            (StopReason::OriginPaused, 0),
            "{context}"
        );
        assert_eq!(server.requests(), 1, "{context}");
    }
}

#[test]
fn its_error_says_nothing_was_sent_and_is_no_timeout() {
    let server = pushing_back();
    let retrier = paused(&server, Adapter::Ureq, false);
    let client = backstop::ureq::Client::new(retrier);
    let request = http::Request::get(server.url("/b"))
        .body(())
        .expect("a request");
    let error = client.run(request).expect_err("turned away");
    assert!(matches!(error, RetryError::NotSent(_)), "{error:?}");
    assert!(error.is_not_sent() && !error.is_timeout(), "{error:?}");
    assert_eq!(
        error.to_string(),
        "nothing was sent (stopped: origin_paused)"
    );
    assert_eq!(server.requests(), 1);
}

#[test]
fn its_operation_span_is_an_error_named_by_the_reason() {
    let server = pushing_back();
    let retrier = paused(&server, Adapter::Ureq, false);
    let ((), spans) = exported(|| {
        let next = Adapter::Ureq.run(&retrier, TestRequest::get(server.url("/b")), Clock::Virtual);
        assert!(matches!(next.result, Err(Failure::NotSent(_))), "{next:?}");
    });
    assert_eq!(spans.len(), 1, "an operation without attempts: {spans:#?}");
    let span = &spans[0];
    let error_type = span
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "error.type")
        .map(|kv| kv.value.as_str().into_owned());
    assert_eq!(error_type.as_deref(), Some("origin_paused"), "{span:#?}");
    assert!(
        matches!(span.status, opentelemetry::trace::Status::Error { .. }),
        "{span:#?}"
    );
}
