//! Measured, not asserted: what `backstop::grpc` costs per unary call beside bare tonic. One
//! `SayHello` answered OK at its first attempt over one tonic `Channel` (HTTP/2, kept open),
//! on a current-thread tokio runtime; the greeter runs in another process.
//!
//! - `bare`: tonic's client over the channel;
//! - `backstop`: the same over `backstop::grpc::RetryLayer` (an A6 retry policy) on
//!   `TokioRuntime`.
//!
//! ```sh
//! tests/benches/grpc_callgrind.sh              # instructions per call, both ways
//! ```
//!
//! `grpc_probe serve` serves and prints its URL; `grpc_probe WAY N URL` makes N calls.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer, RetryPolicy};
use backstop::tokio::TokioRuntime;
use backstop_tests::greeter::{runtime, say_hello, Answer, Greeter, HelloRequest};
use tower::ServiceBuilder;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [serve] if serve == "serve" => runtime().block_on(async {
            let greeter = Greeter::start([Answer::Hello]).await;
            println!("{}", greeter.url());
            std::future::pending::<()>().await;
        }),
        [way, n, url] => {
            let n: u32 = n.parse().expect("a number of calls");
            runtime().block_on(calls(way, n, url.clone()));
        }
        _ => eprintln!("usage: grpc_probe serve | grpc_probe bare|backstop N URL"),
    }
}

async fn calls(way: &str, n: u32, url: String) {
    let channel = tonic::transport::Endpoint::from_shared(url)
        .expect("a URL")
        .connect()
        .await
        .expect("the greeter");
    let a6 = RetryPolicy::builder()
        .max_attempts(4)
        .initial_backoff(Duration::from_millis(100))
        .max_backoff(Duration::from_secs(1))
        .backoff_multiplier(2.0)
        .retryable_status_codes(&[Code::Unavailable])
        .build()
        .expect("a valid policy");
    let layered = ServiceBuilder::new()
        .layer(RetryLayer::new(a6, TokioRuntime::new()))
        .service(channel.clone());
    for _ in 0..n {
        let request = tonic::Request::new(HelloRequest { name: "x".into() });
        let reply = match way {
            "bare" => say_hello(channel.clone(), request).await,
            _ => say_hello(layered.clone(), request).await,
        };
        assert_eq!(reply.expect("OK").get_ref().message, "hello x");
    }
}
