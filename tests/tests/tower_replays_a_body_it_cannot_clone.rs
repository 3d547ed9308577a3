//! Through the tower layer, a request whose body type cannot be cloned (a boxed body) goes in
//! a `ReplayBody`: every attempt sends a whole body the factory made afresh, never an empty or
//! half-read one.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use backstop::runtime::VirtualTime;
use backstop::tower::{ReplayBody, RetryLayer};
use backstop::Retrier;
use backstop::StopReason;
use backstop_tests::middleware::block_on;
use backstop_tests::server::{Action, Reply, Server};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use tower::{ServiceBuilder, ServiceExt};

type Boxed = BoxBody<Bytes, Infallible>;

#[test]
fn each_attempt_sends_a_body_the_factory_made() {
    let server = Server::start([
        Action::Reset,
        Reply::status(503).into(),
        Reply::status(201).body("created").into(),
    ]);
    let made = Arc::new(AtomicUsize::new(0));
    let counter = made.clone();
    let body = ReplayBody::new(move || -> Boxed {
        counter.fetch_add(1, Ordering::SeqCst);
        Full::new(Bytes::from_static(br#"{"sku":42}"#)).boxed()
    });
    let (status, outcome) = block_on(async {
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<ReplayBody<Boxed>>();
        let layer = RetryLayer::new(
            Retrier::default(),
            VirtualTime::new(backstop::tokio::TokioRuntime::new()),
        );
        let client = ServiceBuilder::new().layer(layer).service(http);
        let request = http::Request::post(server.url("/orders"))
            .header("idempotency-key", "k-7")
            .body(body)
            .expect("a request");
        let response = client.oneshot(request).await.expect("a response");
        let outcome = *response
            .extensions()
            .get::<backstop::Outcome>()
            .expect("the outcome");
        (response.status(), outcome)
    });
    assert_eq!(status, 201);
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (3, StopReason::FinalStatus)
    );
    // Once for the request built, once per attempt.
    assert_eq!(made.load(Ordering::SeqCst), 4);
    let recorded = server.recorded();
    assert_eq!(recorded.len(), 3);
    // The first request was reset before its body was read; the others carry it whole.
    for r in &recorded[1..] {
        assert_eq!(r.body, br#"{"sku":42}"#);
    }
}
