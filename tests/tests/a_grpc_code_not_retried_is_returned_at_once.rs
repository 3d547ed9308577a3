//! A code outside `retryableStatusCodes` (INTERNAL) from a real tonic server is the caller's
//! answer at once: one attempt, no wait.

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer};
use backstop::tokio::TokioRuntime;
use backstop::{Retrier, StopReason};
use backstop_tests::events::recorded;
use backstop_tests::greeter::{
    fixed_a6, runtime, say_hello, stop_reason, waits, Answer, Greeter, HelloRequest,
};
use tower::ServiceBuilder;

#[test]
fn internal_is_returned_after_one_attempt() {
    runtime().block_on(async {
        let greeter = Greeter::start([Answer::Fail(tonic::Code::Internal, &[])]).await;
        let a6 = fixed_a6(5, Duration::from_millis(10), &[Code::Unavailable]);
        let (retrier, events) = recorded(Retrier::default());
        let layer = RetryLayer::new(a6, TokioRuntime::new()).retrier(retrier);
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let request = tonic::Request::new(HelloRequest { name: "x".into() });
        let status = say_hello(channel, request).await.expect_err("INTERNAL");

        assert_eq!(status.code(), tonic::Code::Internal);
        assert_eq!(status.message(), "failing on purpose");
        assert_eq!(greeter.calls().len(), 1);
        let events = events.all();
        assert!(waits(&events).is_empty(), "{events:?}");
        assert_eq!(stop_reason(&events), Some(StopReason::FinalStatus));
    });
}
