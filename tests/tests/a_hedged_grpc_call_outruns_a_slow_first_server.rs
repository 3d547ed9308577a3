//! A6 hedging through a tonic channel: the first copy meets a slow server, a second copy goes
//! after `hedgingDelay` (with `grpc-previous-rpc-attempts: 1`) and its answer wins; a
//! non-fatal code sends the next copy at once.

use std::time::{Duration, Instant};

use backstop::grpc::{Code, RetryLayer, RetryPolicy};
use backstop::tokio::TokioRuntime;
use backstop::HedgeOutcome;
use backstop_tests::greeter::{runtime, say_hello, Answer, Greeter, HelloRequest};
use tower::ServiceBuilder;

fn hedging(delay: Duration) -> RetryPolicy {
    RetryPolicy::hedging_builder()
        .max_attempts(3)
        .hedging_delay(delay)
        .non_fatal_status_codes(&[Code::Unavailable])
        .build()
        .expect("a valid A6 hedging policy")
}

fn hello() -> tonic::Request<HelloRequest> {
    tonic::Request::new(HelloRequest { name: "bo".into() })
}

#[test]
fn the_second_copy_wins_over_a_slow_first() {
    runtime().block_on(async {
        let greeter = Greeter::start([Answer::Slow(Duration::from_secs(5)), Answer::Hello]).await;
        let layer = RetryLayer::new(hedging(Duration::from_millis(50)), TokioRuntime::new());
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let started = Instant::now();
        let reply = say_hello(channel, hello())
            .await
            .expect("the second copy's OK");

        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(reply.get_ref().message, "hello bo");
        let hedged = reply.extensions().get::<HedgeOutcome>().copied();
        assert_eq!(hedged.and_then(|h| h.winner), Some(2));
        let previous: Vec<_> = greeter
            .calls()
            .into_iter()
            .map(|c| c.previous_attempts)
            .collect();
        assert_eq!(previous, [None, Some("1".into())]);
    });
}

#[test]
fn a_non_fatal_code_sends_the_next_copy_at_once() {
    runtime().block_on(async {
        let greeter =
            Greeter::start([Answer::Fail(tonic::Code::Unavailable, &[]), Answer::Hello]).await;
        // The delay would hold the second copy for a minute: only the answer sends it.
        let layer = RetryLayer::new(hedging(Duration::from_secs(60)), TokioRuntime::new());
        let channel = ServiceBuilder::new()
            .layer(layer)
            .service(greeter.channel());

        let started = Instant::now();
        let reply = say_hello(channel, hello())
            .await
            .expect("the second copy's OK");

        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(reply.get_ref().message, "hello bo");
        assert_eq!(greeter.calls().len(), 2);
    });
}
