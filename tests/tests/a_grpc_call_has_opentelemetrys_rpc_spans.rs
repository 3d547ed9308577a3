//! A retried gRPC call reaches an OpenTelemetry exporter with the RPC conventions' attributes
//! on its operation span and on each attempt's client span: `rpc.system` `grpc`,
//! `rpc.service` and `rpc.method` from the method's path, beside the HTTP ones; the attempt
//! answered Trailers-Only UNAVAILABLE has `rpc.grpc.status_code` 14.

#[path = "support/exported_spans.rs"]
mod exported_spans;
use exported_spans::exported;

use std::time::Duration;

use backstop::grpc::{Code, RetryLayer};
use backstop::tokio::TokioRuntime;
use backstop_tests::greeter::{fixed_a6, runtime, say_hello, Answer, Greeter, HelloRequest};
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::SpanData;
use tower::ServiceBuilder;

fn text(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

#[test]
fn every_span_of_the_call_names_its_service_and_method() {
    let (attempts, spans) = exported(|| {
        runtime().block_on(async {
            let greeter =
                Greeter::start([Answer::Fail(tonic::Code::Unavailable, &[]), Answer::Hello]).await;
            let a6 = fixed_a6(3, Duration::from_millis(5), &[Code::Unavailable]);
            let channel = ServiceBuilder::new()
                .layer(RetryLayer::new(a6, TokioRuntime::new()))
                .service(greeter.channel());
            let request = tonic::Request::new(HelloRequest { name: "ada".into() });
            let reply = say_hello(channel, request).await.expect("OK on the retry");
            reply
                .extensions()
                .get::<backstop::Outcome>()
                .map(|o| o.attempts)
        })
    });
    assert_eq!(attempts, Some(2));
    let ours: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "operation" || s.name == "POST")
        .collect();
    assert_eq!(ours.len(), 3, "{spans:?}"); // the operation and its two attempts
    for span in &ours {
        assert_eq!(
            text(span, "rpc.system").as_deref(),
            Some("grpc"),
            "{span:?}"
        );
        assert_eq!(
            text(span, "rpc.service").as_deref(),
            Some("helloworld.Greeter")
        );
        assert_eq!(text(span, "rpc.method").as_deref(), Some("SayHello"));
    }
    let codes: Vec<_> = ours
        .iter()
        .filter(|s| s.name == "POST")
        .map(|s| text(s, "rpc.grpc.status_code"))
        .collect();
    // The OK's code comes in its trailers, after the attempt: its span has none.
    assert!(codes.contains(&Some("14".into())), "{codes:?}");
    assert!(codes.contains(&None), "{codes:?}");
}
