//! An aborted operation never calls the attempt function or the body factory, on every
//! adapter: nothing is sent, and a body factory (a `ReplayBody`'s on the tower layer) is not
//! called for an attempt that the abort cancelled before it started.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use backstop::runtime::VirtualTime;
use backstop::tower::{ReplayBody, RetryLayer};
use backstop::StopReason;
use backstop::{Abort, Retrier};
use backstop_tests::adapters::{for_each_adapter, Clock, Failure};
use backstop_tests::middleware::block_on;
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;
use bytes::Bytes;
use http_body_util::Full;
use tower::{ServiceBuilder, ServiceExt};

#[test]
fn an_aborted_operation_never_calls_the_body_factory() {
    for_each_adapter(|adapter| {
        let server = Server::always(Reply::status(200));
        let abort = Abort::new();
        abort.abort();
        let made = Arc::new(AtomicUsize::new(0));
        let counter = made.clone();
        let request = TestRequest::post(server.url("/orders"))
            .idempotency_key("k-1")
            .body_factory(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                Bytes::from_static(b"{}")
            })
            .abort_on(&abort);
        let run = adapter.run(&Retrier::default(), request, Clock::Virtual);

        let context = format!("{adapter:?}: {run:?}");
        let Err(Failure::Aborted(outcome)) = run.result else {
            panic!("{context}")
        };
        assert_eq!((outcome.attempts, outcome.reason), (0, StopReason::Aborted));
        assert_eq!(server.requests(), 0, "{context}");
        // Once, when the request is made (by `ReplayBody::new` on the tower layer, which would
        // call it again for each attempt; by the test harness on ureq and reqwest, which clone
        // the bytes); never for an attempt.
        assert_eq!(made.load(Ordering::SeqCst), 1, "{context}");
    });
}

#[test]
fn an_aborted_tower_operation_never_calls_the_replay_body_factory() {
    let server = Server::always(Reply::status(200));
    let made = Arc::new(AtomicUsize::new(0));
    let counter = made.clone();
    let body = ReplayBody::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Full::new(Bytes::from_static(b"{}"))
    });
    let abort = Abort::new();
    abort.abort();
    let result = block_on(async {
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build_http::<ReplayBody<Full<Bytes>>>();
        let layer = RetryLayer::new(
            Retrier::default(),
            VirtualTime::new(backstop::tokio::TokioRuntime::new()),
        );
        let client = ServiceBuilder::new().layer(layer).service(http);
        let mut request = http::Request::post(server.url("/orders"))
            .header("idempotency-key", "k-2")
            .body(body)
            .expect("a request");
        request.extensions_mut().insert(abort);
        client.oneshot(request).await
    });
    let error = result.expect_err("aborted");
    assert!(error.is_aborted(), "{error:?}");
    assert_eq!(error.outcome().attempts, 0);
    // Once, by `ReplayBody::new`; never for an attempt.
    assert_eq!(made.load(Ordering::SeqCst), 1);
    assert_eq!(server.requests(), 0);
}
