//! A body resumed after a cut reaches an OpenTelemetry exporter as the conventions name a
//! resend: each resume is a client span with `http.request.resend_count` and the `206` it got,
//! the first attempt's span has none. Through the reqwest middleware with `resume_bodies`,
//! against a loopback server that closes the first body early.

#[path = "support/exported_spans.rs"]
mod exported_spans;
use exported_spans::exported;

use backstop::reqwest::RetryMiddleware;
use backstop::Retrier;
use backstop_tests::middleware::{block_on, default_tls};
use backstop_tests::server::{Action, Fault, Representation, Served, Server};
use opentelemetry::trace::SpanKind;
use opentelemetry::Value;
use opentelemetry_sdk::trace::SpanData;

fn number(span: &SpanData, key: &str) -> Option<i64> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| match kv.value {
            Value::I64(n) => n,
            ref other => panic!("{key} is not an integer: {other:?}"),
        })
}

#[test]
fn each_resume_is_a_client_span_with_its_resend_count() {
    let content: Vec<u8> = (0..64 * 1024u32).map(|i| (i % 251) as u8).collect();
    let representation = Representation::new(content.clone()).strong_etag("v1");
    let server = Server::always(Action::Serve(
        Served::new(representation).faults([Fault::CloseAt(10_000)]),
    ));
    let (read, spans) = exported(|| {
        block_on(async {
            let http = default_tls()
                .reqwest(reqwest::Client::builder())
                .build()
                .expect("a reqwest client");
            let client = reqwest_middleware::ClientBuilder::new(http.clone())
                .with(RetryMiddleware::new(Retrier::default().seed(7)).resume_bodies(http))
                .build();
            let response = client.get(server.url("/file")).send().await.unwrap();
            response.bytes().await.map(|b| b.to_vec())
        })
    });
    assert!(read.ok() == Some(content), "the whole body");
    let clients: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.span_kind == SpanKind::Client)
        .collect();
    assert_eq!(clients.len(), 2, "{clients:#?}");
    let first = clients
        .iter()
        .find(|s| number(s, "http.request.resend_count").is_none())
        .expect("the first attempt's span");
    assert_eq!(number(first, "http.response.status_code"), Some(200));
    let resume = clients
        .iter()
        .find(|s| number(s, "http.request.resend_count") == Some(1))
        .expect("the resume's span, a resend");
    assert_eq!(number(resume, "http.response.status_code"), Some(206));
}
