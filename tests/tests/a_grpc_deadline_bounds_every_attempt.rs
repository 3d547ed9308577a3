//! The call's deadline from its `grpc-timeout` (tonic's `Request::set_timeout`) bounds the
//! whole call: a server slower than it ends the call with DEADLINE_EXCEEDED near the
//! deadline, and a retry that could not start before it is not sent.

use std::time::{Duration, Instant};

use backstop::grpc::{Code, RetryLayer, RetryPolicy};
use backstop::tokio::TokioRuntime;
use backstop::{Retrier, StopReason};
use backstop_tests::events::recorded;
use backstop_tests::greeter::{runtime, say_hello, stop_reason, Answer, Greeter, HelloRequest};
use tower::ServiceBuilder;

fn a6(backoff: Duration) -> RetryPolicy {
    RetryPolicy::builder()
        .max_attempts(5)
        .initial_backoff(backoff)
        .max_backoff(backoff)
        .backoff_multiplier(1.0)
        .retryable_status_codes(&[Code::Unavailable])
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a valid A6 policy")
}

fn hello(timeout: Duration) -> tonic::Request<HelloRequest> {
    let mut request = tonic::Request::new(HelloRequest { name: "x".into() });
    request.set_timeout(timeout);
    request
}

#[test]
fn a_slow_server_ends_the_call_at_its_deadline() {
    runtime().block_on(async {
        let greeter = Greeter::start([Answer::Slow(Duration::from_secs(10))]).await;
        let layer = RetryLayer::new(a6(Duration::from_millis(10)), TokioRuntime::new());
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let started = Instant::now();
        let status = say_hello(channel, hello(Duration::from_millis(300)))
            .await
            .expect_err("past the deadline");

        assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(5),
            "{took:?}"
        );
        assert_eq!(greeter.calls().len(), 1);
    });
}

#[test]
fn a_retry_that_would_start_past_the_deadline_is_not_sent() {
    runtime().block_on(async {
        // The pushback makes the wait exact: 1 s, past the call's 200 ms deadline.
        let greeter = Greeter::start([Answer::Fail(tonic::Code::Unavailable, &["1000"])]).await;
        let (retrier, events) = recorded(Retrier::default());
        let layer =
            RetryLayer::new(a6(Duration::from_millis(10)), TokioRuntime::new()).retrier(retrier);
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let started = Instant::now();
        let status = say_hello(channel, hello(Duration::from_millis(200)))
            .await
            .expect_err("UNAVAILABLE");

        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert!(started.elapsed() < Duration::from_millis(900));
        assert_eq!(greeter.calls().len(), 1);
        assert_eq!(stop_reason(&events.all()), Some(StopReason::Deadline));
    });
}
