//! A request with a method outside the HTTP semantic conventions' known set (`PURGE`) reaches
//! an OpenTelemetry exporter as those conventions say: `http.request.method` is `_OTHER`,
//! `http.request.method_original` is the method as sent, and the spans are named `HTTP`, the
//! operation's and its attempt's alike. Through the tower layer over hyper-util, against a
//! loopback server.

#[path = "support/exported_spans.rs"]
mod exported_spans;
use exported_spans::exported;

use backstop::runtime::VirtualTime;
use backstop::Retrier;
use backstop_tests::middleware::{block_on, tower_request};
use backstop_tests::server::{Reply, Server};
use opentelemetry::KeyValue;
use opentelemetry_sdk::trace::SpanData;
use tower::ServiceExt;

/// The text of attribute `key` of `span`, if it has one.
fn text(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

/// The spans a request with `method` leaves, the operation's first.
fn spans_of(method: http::Method) -> Vec<SpanData> {
    let server = Server::start([Reply::status(200).into()]);
    let url = server.url("/cache/item");
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
                .oneshot(tower_request(method, &url))
                .await
                .expect("a response");
            response.status().as_u16()
        })
    });
    assert_eq!(status, 200);
    let mut spans = spans;
    assert_eq!(spans.len(), 2, "an operation and its attempt: {spans:#?}");
    spans.sort_by_key(|s| text(s, "backstop.stop_reason").is_none());
    spans
}

#[test]
fn an_extension_method_is_other_with_its_original_and_its_spans_are_named_http() {
    let purge = http::Method::from_bytes(b"PURGE").expect("a method");
    for span in spans_of(purge) {
        assert_eq!(span.name, "HTTP", "{span:#?}");
        assert_eq!(
            text(&span, "http.request.method").as_deref(),
            Some("_OTHER")
        );
        assert_eq!(
            text(&span, "http.request.method_original").as_deref(),
            Some("PURGE"),
            "{span:#?}"
        );
    }
    // A known method is itself, with no original beside it.
    for span in spans_of(http::Method::DELETE) {
        assert_eq!(span.name, "DELETE", "{span:#?}");
        assert_eq!(
            text(&span, "http.request.method").as_deref(),
            Some("DELETE")
        );
        assert_eq!(
            text(&span, "http.request.method_original"),
            None,
            "{span:#?}"
        );
    }
}
