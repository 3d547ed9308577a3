//! A unary call answered UNAVAILABLE twice, then OK, by a real tonic server: retried by A6's
//! policy through a tonic channel, each retry carrying `grpc-previous-rpc-attempts`.

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer, RetryPolicy};
use backstop::tokio::TokioRuntime;
use backstop::Outcome;
use backstop_tests::greeter::{runtime, say_hello, Answer, Greeter, HelloRequest};
use tower::ServiceBuilder;

#[test]
fn unavailable_twice_then_ok_is_three_attempts() {
    runtime().block_on(async {
        let greeter = Greeter::start([
            Answer::Fail(tonic::Code::Unavailable, &[]),
            Answer::Fail(tonic::Code::Unavailable, &[]),
            Answer::Hello,
        ])
        .await;
        let a6 = RetryPolicy::builder()
            .max_attempts(4)
            .initial_backoff(Duration::from_millis(10))
            .max_backoff(Duration::from_millis(10))
            .backoff_multiplier(1.0)
            .retryable_status_codes(&[Code::Unavailable])
            .build()
            .expect("a valid A6 policy");
        let channel = ServiceBuilder::new()
            .layer(RetryLayer::new(a6, TokioRuntime::new()))
            .service(greeter.channel());

        let request = tonic::Request::new(HelloRequest { name: "ada".into() });
        let reply = say_hello(channel, request)
            .await
            .expect("OK at the third attempt");

        assert_eq!(reply.get_ref().message, "hello ada");
        let outcome = reply.extensions().get::<Outcome>().copied();
        assert_eq!(outcome.map(|o| o.attempts), Some(3));
        let calls = greeter.calls();
        let previous: Vec<_> = calls.iter().map(|c| c.previous_attempts.clone()).collect();
        assert_eq!(previous, [None, Some("1".into()), Some("2".into())]);
        assert!(calls.iter().all(|c| c.names == ["ada"]), "{calls:?}");
    });
}
