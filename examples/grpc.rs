//! `cargo run --example grpc`: a tonic channel retried by gRFC A6 (`backstop` with `grpc` and
//! `tokio`). A greeter on loopback answers UNAVAILABLE, then RESOURCE_EXHAUSTED with
//! `grpc-retry-pushback-ms: 200`, then OK. Your generated client takes the layered channel as
//! it takes the channel: `GreeterClient::new(channel)`.

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer, RetryPolicy};
use backstop::tokio::TokioRuntime;
use backstop::{Outcome, Retrier};
use backstop_tests::greeter::{say_hello, Answer, Greeter, HelloRequest};
use tower::ServiceBuilder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let greeter = Greeter::start([
            Answer::Fail(tonic::Code::Unavailable, &[]),
            Answer::Fail(tonic::Code::ResourceExhausted, &["200"]),
            Answer::Hello,
        ])
        .await;
        let channel = tonic::transport::Endpoint::from_shared(greeter.url())?.connect_lazy();

        let a6 = RetryPolicy::builder()
            .max_attempts(4)
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_secs(1))
            .backoff_multiplier(2.0)
            .retryable_status_codes(&[Code::Unavailable, Code::ResourceExhausted])
            .build()?;
        let retrier = Retrier::default().on_event(|e| println!("{e}"));
        let layer = RetryLayer::new(a6, TokioRuntime::new()).retrier(retrier);
        let channel = ServiceBuilder::new().layer(layer).service(channel);

        let request = tonic::Request::new(HelloRequest {
            name: "world".into(),
        });
        let reply = say_hello(channel, request).await?;
        let attempts = reply.extensions().get::<Outcome>().map(|o| o.attempts);
        println!("{:?} after {attempts:?} attempts", reply.get_ref().message);
        Ok(())
    })
}
