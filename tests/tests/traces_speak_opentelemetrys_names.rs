//! A retried request reaches an OpenTelemetry exporter (through `tracing-opentelemetry`) as
//! the HTTP semantic conventions name it: an operation span, and under it one client span per
//! attempt named after the method, with `http.request.method`, `server.address`,
//! `server.port`, `url.full` without the query, `http.response.status_code`, `error.type` on
//! the 503, and `http.request.resend_count` on the second attempt only; the operation span
//! says why it stopped. Through the tower layer over hyper-util, against a loopback server
//! answering 503 then 200.

#[path = "support/exported_spans.rs"]
mod exported_spans;
use exported_spans::exported;

use backstop::runtime::VirtualTime;
use backstop::Retrier;
use backstop_tests::middleware::{block_on, tower_request};
use backstop_tests::server::{Reply, Server};
use opentelemetry::trace::SpanKind;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;
use tower::ServiceExt;

/// The value of attribute `key` of `span`, if it has one.
fn attribute<'s>(span: &'s SpanData, key: &str) -> Option<&'s Value> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    match attribute(span, key) {
        Some(value) => value.as_str().into_owned(),
        None => panic!("no {key} on {}: {:?}", span.name, span.attributes),
    }
}

fn number(span: &SpanData, key: &str) -> Option<i64> {
    attribute(span, key).map(|value| match value {
        Value::I64(n) => *n,
        other => panic!("{key} is not an integer: {other:?}"),
    })
}

#[test]
fn a_retried_get_is_an_operation_span_over_two_http_client_spans() {
    let server = Server::start([
        Reply::status(503).header("Retry-After", "0").into(),
        Reply::status(200).body("ok").into(),
    ]);
    let url = server.url("/items?token=secret");
    let port = i64::from(server.addr().port());

    let (status, spans) = exported(|| {
        block_on(async {
            let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
            let http =
                hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .build_http();
            let client = tower::ServiceBuilder::new()
                .layer(backstop::tower::RetryLayer::new(Retrier::default(), clock))
                .service(http);
            let response = client
                .oneshot(tower_request(http::Method::GET, &url))
                .await
                .expect("a response");
            response.status().as_u16()
        })
    });
    assert_eq!(status, 200);

    let operation = spans
        .iter()
        .find(|s| attribute(s, "backstop.stop_reason").is_some())
        .unwrap_or_else(|| panic!("no operation span: {spans:#?}"));
    let mut attempts: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.parent_span_id == operation.span_context.span_id())
        .collect();
    attempts.sort_by_key(|s| s.start_time);
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    assert_eq!(spans.len(), 3, "{spans:#?}");

    // What every span says of the request, the query left out.
    let expected_url = format!("http://127.0.0.1:{port}/items");
    for span in [operation, attempts[0], attempts[1]] {
        assert_eq!(span.name, "GET", "{span:#?}");
        assert_eq!(text(span, "http.request.method"), "GET");
        assert_eq!(text(span, "server.address"), "127.0.0.1");
        assert_eq!(number(span, "server.port"), Some(port));
        assert_eq!(text(span, "url.full"), expected_url);
        for kv in &span.attributes {
            let value = kv.value.as_str();
            assert!(
                !value.contains("secret") && !value.contains("token"),
                "a secret in {}: {value}",
                kv.key
            );
        }
    }

    assert_eq!(operation.span_kind, SpanKind::Internal);
    assert_eq!(text(operation, "backstop.stop_reason"), "final_status");
    assert_eq!(number(operation, "backstop.attempts"), Some(2));
    assert_eq!(number(operation, "http.response.status_code"), Some(200));

    let (first, second) = (attempts[0], attempts[1]);
    assert_eq!(first.span_kind, SpanKind::Client);
    assert_eq!(second.span_kind, SpanKind::Client);
    assert_eq!(number(first, "http.response.status_code"), Some(503));
    assert_eq!(text(first, "error.type"), "503");
    assert_eq!(number(first, "http.request.resend_count"), None);
    assert_eq!(number(second, "http.response.status_code"), Some(200));
    assert_eq!(attribute(second, "error.type"), None);
    assert_eq!(number(second, "http.request.resend_count"), Some(1));

    // The wait between them is an event of the operation span, with its cause.
    let wait = operation
        .events
        .iter()
        .find(|e| e.name == "retrying after a wait")
        .unwrap_or_else(|| panic!("no wait event: {:#?}", operation.events));
    let cause = wait
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "cause")
        .map(|kv| kv.value.as_str().into_owned());
    assert_eq!(cause.as_deref(), Some("status 503"), "{wait:#?}");
}
