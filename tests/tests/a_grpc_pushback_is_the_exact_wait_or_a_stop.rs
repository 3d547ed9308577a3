//! RESOURCE_EXHAUSTED with `grpc-retry-pushback-ms`, from a real tonic server: a
//! non-negative value is exactly the wait before the next attempt; a negative one, one that
//! is not a number, or two values stop the retries (grpc-go's cases).

use std::time::{Duration, Instant};

use backstop::grpc::{Code, RetryLayer, RetryPolicy};
use backstop::machine::DelaySource;
use backstop::tokio::TokioRuntime;
use backstop::{Retrier, StopReason};
use backstop_tests::events::recorded;
use backstop_tests::greeter::{
    fixed_a6, runtime, say_hello, stop_reason, waits, Answer, Greeter, HelloRequest,
};
use tower::ServiceBuilder;

fn a6() -> RetryPolicy {
    fixed_a6(3, Duration::from_millis(10), &[Code::ResourceExhausted])
}

fn hello() -> tonic::Request<HelloRequest> {
    tonic::Request::new(HelloRequest {
        name: "grace".into(),
    })
}

#[test]
fn a_pushback_of_250_ms_is_waited_exactly() {
    runtime().block_on(async {
        let greeter = Greeter::start([
            Answer::Fail(tonic::Code::ResourceExhausted, &["250"]),
            Answer::Hello,
        ])
        .await;
        let (retrier, events) = recorded(Retrier::default());
        let layer = RetryLayer::new(a6(), TokioRuntime::new()).retrier(retrier);
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let started = Instant::now();
        let reply = say_hello(channel, hello())
            .await
            .expect("OK after the pushback");

        assert_eq!(reply.get_ref().message, "hello grace");
        assert_eq!(
            waits(&events.all()),
            [(Duration::from_millis(250), DelaySource::ServerPushback)]
        );
        assert!(started.elapsed() >= Duration::from_millis(250));
        assert_eq!(greeter.calls().len(), 2);
    });
}

#[test]
fn a_negative_unparsable_or_repeated_pushback_stops_at_once() {
    let stops: [&'static [&'static str]; 3] = [&["-1"], &["xxx"], &["100", "10"]];
    for pushback in stops {
        runtime().block_on(async {
            let greeter =
                Greeter::start([Answer::Fail(tonic::Code::ResourceExhausted, pushback)]).await;
            let (retrier, events) = recorded(Retrier::default());
            let layer = RetryLayer::new(a6(), TokioRuntime::new()).retrier(retrier);
            let channel = ServiceBuilder::new()
                .layer(layer)
                .service(greeter.channel());

            let status = say_hello(channel, hello())
                .await
                .expect_err("the server's answer");

            assert_eq!(
                status.code(),
                tonic::Code::ResourceExhausted,
                "{pushback:?}"
            );
            assert_eq!(greeter.calls().len(), 1, "{pushback:?}");
            assert_eq!(stop_reason(&events.all()), Some(StopReason::ServerPushback));
        });
    }
}

/// A code the policy does not retry, with a pushback that says "do not retry": returned at
/// once, and a failure to the retry throttle (gRFC A6; grpc-java's `RetriableStream` counts it
/// so), where the same code without it is neither a success nor a failure.
#[test]
fn a_stopping_pushback_on_a_code_not_retried_costs_the_throttle_a_token() {
    for (pushback, tokens) in [(&["-1"][..], 9_000), (&[][..], 10_000)] {
        runtime().block_on(async {
            let greeter = Greeter::start([Answer::Fail(tonic::Code::Internal, pushback)]).await;
            let throttle = std::sync::Arc::new(
                backstop::TokenBucket::new(10, 500).expect("grpc-go's throttle"),
            );
            let retrier = Retrier::default().budget(throttle.clone());
            let layer = RetryLayer::new(a6(), TokioRuntime::new()).retrier(retrier);
            let channel = ServiceBuilder::new()
                .layer(layer)
                .service(greeter.channel());

            let status = say_hello(channel, hello())
                .await
                .expect_err("the server's answer");

            assert_eq!(status.code(), tonic::Code::Internal, "{pushback:?}");
            assert_eq!(greeter.calls().len(), 1, "{pushback:?}");
            assert_eq!(throttle.tokens_milli(), tokens, "{pushback:?}");
        });
    }
}
