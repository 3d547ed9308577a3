//! A server stream that sends its headers and a message (the call is committed), then fails
//! with a retryable code in its trailers: the caller reads the message and the failure, and
//! nothing is sent again.

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer};
use backstop::tokio::TokioRuntime;
use backstop_tests::greeter::{fixed_a6, runtime, stream_hellos, Greeter};
use tower::ServiceBuilder;

#[test]
fn the_failure_after_commitment_is_the_callers() {
    runtime().block_on(async {
        let greeter = Greeter::start([]).await;
        let a6 = fixed_a6(5, Duration::from_millis(10), &[Code::Unavailable]);
        let channel = ServiceBuilder::new()
            .layer(RetryLayer::new(a6, TokioRuntime::new()))
            .service(greeter.channel());

        let (read, end) = stream_hellos(channel, "lin")
            .await
            .expect("a committed stream");

        assert_eq!(read, ["hello lin"]);
        assert_eq!(end.code(), tonic::Code::Unavailable);
        assert_eq!(end.message(), "failing after commitment");
        assert_eq!(greeter.calls().len(), 1);
    });
}
