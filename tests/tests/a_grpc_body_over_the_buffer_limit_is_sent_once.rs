//! The request's messages are buffered for replay up to the per-call limit: a client stream
//! within it is replayed whole on the retry; a request over it is sent once, as is, and its
//! retryable failure is the caller's, with the reason.

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer, RetryPolicy};
use backstop::tokio::TokioRuntime;
use backstop::{Retrier, StopReason};
use backstop_tests::events::recorded;
use backstop_tests::greeter::{
    fixed_a6, runtime, say_hello, say_hello_to_all, stop_reason, Answer, Greeter, HelloRequest,
};
use tower::ServiceBuilder;

fn a6() -> RetryPolicy {
    fixed_a6(3, Duration::from_millis(10), &[Code::Unavailable])
}

#[test]
fn a_request_over_the_limit_is_sent_once() {
    runtime().block_on(async {
        let greeter = Greeter::start([Answer::Fail(tonic::Code::Unavailable, &[])]).await;
        let (retrier, events) = recorded(Retrier::default());
        let layer = RetryLayer::new(a6(), TokioRuntime::new())
            .retrier(retrier)
            .per_rpc_buffer_limit(64);
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let long = "n".repeat(100);
        let request = tonic::Request::new(HelloRequest { name: long.clone() });
        let status = say_hello(channel, request).await.expect_err("UNAVAILABLE");

        assert_eq!(status.code(), tonic::Code::Unavailable);
        let calls = greeter.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].names, [long]); // sent whole, as it was
        assert_eq!(
            stop_reason(&events.all()),
            Some(StopReason::BodyNotReplayable)
        );
    });
}

#[test]
fn a_client_stream_within_the_limit_is_replayed_whole() {
    runtime().block_on(async {
        let greeter =
            Greeter::start([Answer::Fail(tonic::Code::Unavailable, &[]), Answer::Hello]).await;
        let layer = RetryLayer::new(a6(), TokioRuntime::new());
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let names = vec!["ada".to_owned(), "grace".to_owned(), "lin".to_owned()];
        let reply = say_hello_to_all(channel, names.clone())
            .await
            .expect("OK on the retry");

        assert_eq!(reply.get_ref().message, "hello ada and grace and lin");
        let calls = greeter.calls();
        assert_eq!(calls.len(), 2);
        assert!(calls.iter().all(|c| c.names == names), "{calls:?}");
    });
}
