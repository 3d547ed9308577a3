//! Through the tower layer, waiting for the inner service's readiness is backpressure, not an
//! attempt: under a `ConcurrencyLimit(1)` whose one slot is held, below the layer, nothing is
//! sent and no attempt is spent or timed out while the service is not ready. A POST that
//! never reached the service ends at the deadline with no attempt (not as a maybe-sent
//! timeout); a GET is sent once the slot frees; a retry budget is not charged.

use std::sync::Arc;
use std::time::Duration;

use backstop::runtime::VirtualTime;
use backstop::tower::{RetryLayer, ServiceError};
use backstop::{Policy, RetryQuota, StopReason};
use backstop::{Retrier, RetryError};
use backstop_tests::middleware::{block_on, tower_request};
use backstop_tests::server::{Reply, Server};
use bytes::Bytes;
use http_body_util::Full;
use tower::limit::ConcurrencyLimit;
use tower::{Service, ServiceExt};

type Http = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    Full<Bytes>,
>;

/// Sends `request` through the layer over a hyper-util client limited to one request at a
/// time, whose slot is held for `held` (for ever when `None`); returns the response's status
/// and outcome, or the error.
fn with_slot_held(
    retrier: &Retrier,
    request: http::Request<Full<Bytes>>,
    held: Option<Duration>,
) -> Result<(u16, backstop::Outcome), RetryError<ServiceError>> {
    block_on(async {
        let http: Http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http();
        let limited = ConcurrencyLimit::new(http, 1);
        // Another user of the limited service takes its one slot.
        let mut holder = limited.clone();
        core::future::poll_fn(|cx| holder.poll_ready(cx))
            .await
            .expect("the slot");
        // Held until the operation is over, or released after `held`.
        let kept = match held {
            Some(held) => {
                tokio::spawn(async move {
                    tokio::time::sleep(held).await;
                    drop(holder);
                });
                None
            }
            None => Some(holder),
        };
        let layer = RetryLayer::new(
            retrier.clone(),
            VirtualTime::new(backstop::tokio::TokioRuntime::new()),
        );
        let client = tower::ServiceBuilder::new().layer(layer).service(limited);
        let response = client.oneshot(request).await;
        drop(kept);
        let response = response?;
        let outcome = *response
            .extensions()
            .get::<backstop::Outcome>()
            .expect("the outcome");
        Ok((response.status().as_u16(), outcome))
    })
}

fn policy(max_elapsed: Duration) -> Policy {
    Policy::builder()
        .attempt_timeout(Duration::from_millis(100))
        .max_elapsed(max_elapsed)
        .build()
        .expect("policy")
}

#[test]
fn a_post_that_never_reached_the_service_is_not_a_maybe_sent_timeout() {
    let server = Server::always(Reply::status(200));
    let retrier = Retrier::new(policy(Duration::from_millis(500)));
    let request = tower_request(http::Method::POST, &server.url("/orders"));
    let error = with_slot_held(&retrier, request, None).expect_err("never ready");
    let outcome = error.outcome();
    assert_eq!(
        (outcome.attempts, outcome.reason, outcome.last),
        (0, StopReason::Deadline, None),
        "{error:?}"
    );
    // Nothing went out: not a time-out of an attempt.
    assert!(error.is_not_sent() && !error.is_timeout(), "{error:?}");
    assert_eq!(server.requests(), 0);
}

#[test]
fn a_get_does_not_spend_its_attempts_waiting_for_readiness() {
    let retrier = Retrier::new(policy(Duration::from_secs(5)));
    // Longer than the four attempts' timeouts together.
    sent_once_when_the_slot_frees(&retrier, Duration::from_millis(800));
}

/// A GET through the layer while the slot is held for `held`: one request, sent once the
/// slot frees, answered 200 at the first attempt.
fn sent_once_when_the_slot_frees(retrier: &Retrier, held: Duration) {
    let server = Server::always(Reply::status(200));
    let request = tower_request(http::Method::GET, &server.url("/"));
    let (status, outcome) = with_slot_held(retrier, request, Some(held)).expect("a response");
    assert_eq!(status, 200);
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (1, StopReason::FinalStatus)
    );
    assert_eq!(server.requests(), 1);
}

#[test]
fn a_retry_budget_is_not_charged_for_requests_that_never_left() {
    let server = Server::always(Reply::status(200));
    let quota = Arc::new(RetryQuota::new());
    let full = quota.available();
    let retrier = Retrier::new(policy(Duration::from_millis(500))).budget(quota.clone());
    let request = tower_request(http::Method::GET, &server.url("/"));
    let error = with_slot_held(&retrier, request, None).expect_err("never ready");
    assert_eq!(error.outcome().attempts, 0, "{error:?}");
    assert_eq!(quota.available(), full);
    assert_eq!(server.requests(), 0);
}

#[test]
fn a_hedged_copy_that_finds_the_service_not_ready_is_sent_when_it_is() {
    // The first copy is made while the slot is held: its clone of the service is not ready,
    // so the copy waits for it (with the task's waker) and is sent once the slot frees. No
    // second copy: the hedging delay is longer than the hold.
    let hedged = Policy::builder()
        .attempt_timeout(Duration::from_secs(2))
        .max_elapsed(Duration::from_secs(5))
        .hedging(backstop::Hedging::fixed(Duration::from_secs(1)).max_attempts(2))
        .build()
        .expect("policy");
    sent_once_when_the_slot_frees(&Retrier::new(hedged), Duration::from_millis(200));
}
