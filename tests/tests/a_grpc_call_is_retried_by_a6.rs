//! A unary call answered UNAVAILABLE twice, then OK, by a real tonic server: retried by A6's
//! policy through a tonic channel, each retry carrying `grpc-previous-rpc-attempts` and, in
//! its `grpc-timeout`, what is left of the call's deadline.

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer};
use backstop::tokio::TokioRuntime;
use backstop::Outcome;
use backstop_tests::greeter::{fixed_a6, runtime, say_hello, Answer, Greeter, HelloRequest};
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
        let a6 = fixed_a6(4, Duration::from_millis(10), &[Code::Unavailable]);
        let channel = ServiceBuilder::new()
            .layer(RetryLayer::new(a6, TokioRuntime::new()))
            .service(greeter.channel());

        let mut request = tonic::Request::new(HelloRequest { name: "ada".into() });
        request.set_timeout(Duration::from_secs(5));
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
        let timeouts: Vec<_> = calls.iter().filter_map(|c| c.timeout).collect();
        assert_eq!(timeouts.len(), 3, "{calls:?}");
        // Each retry is told what is left: less than the attempt before it was.
        assert!(timeouts.windows(2).all(|w| w[1] < w[0]), "{timeouts:?}");
        assert!(timeouts[0] <= Duration::from_secs(5), "{timeouts:?}");
    });
}
