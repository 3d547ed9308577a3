//! A channel to a port nobody listens on: each attempt's connection is refused (never sent,
//! so retried whatever the method), and the call ends UNAVAILABLE after `maxAttempts`, the
//! channel's own error as tonic reads it.

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer};
use backstop::tokio::TokioRuntime;
use backstop::{Retrier, StopReason};
use backstop_tests::events::recorded;
use backstop_tests::greeter::{fixed_a6, runtime, say_hello, stop_reason, HelloRequest};
use tower::ServiceBuilder;

#[test]
fn a_refused_connection_is_retried_then_unavailable() {
    runtime().block_on(async {
        // A port that was bound and released: nobody listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .expect("a valid URL")
            .connect_lazy();
        let a6 = fixed_a6(3, Duration::from_millis(5), &[Code::Unavailable]);
        let (retrier, events) = recorded(Retrier::default());
        let layer = RetryLayer::new(a6, TokioRuntime::new()).retrier(retrier);
        let channel = ServiceBuilder::new().layer(layer).service(channel);

        let request = tonic::Request::new(HelloRequest { name: "x".into() });
        let status = say_hello(channel, request)
            .await
            .expect_err("nobody answers");

        assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
        let events = events.all();
        let ended = events
            .iter()
            .filter(|e| matches!(e, backstop::EventKind::AttemptEnded { .. }))
            .count();
        assert_eq!(ended, 3, "{events:?}");
        assert_eq!(stop_reason(&events), Some(StopReason::Attempts));
    });
}
