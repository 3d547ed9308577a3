//! The smol service's failures before anything was sent get the kinds that say so, through
//! `backstop::tower::error_kind` (the layer's classifier) as through `backstop::smol::error_kind`:
//! a refused connection is `ConnectionRefused` (retried even for a POST), a URI the service
//! cannot send to (relative, or a scheme it does not speak) `InvalidRequest`, a host that did
//! not resolve `Dns`.

#![cfg(all(feature = "smol", feature = "tower"))]

use backstop::classify::ResolveError;
use backstop::runtime::VirtualTime;
use backstop::smol::{HttpError, HttpService, Retrier, SmolRuntime};
use backstop::tower::RetryLayer;
use backstop::{ErrorKind, Policy, RetryError};
use bytes::Bytes;
use http_body_util::Full;
use tower::{Layer, ServiceExt};

fn request(method: http::Method, url: &str) -> http::Request<Full<Bytes>> {
    http::Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::new()))
        .expect("a valid request")
}

/// A loopback URL nothing listens on: the port was just bound, then let go.
fn refusing_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    format!("http://{}/", listener.local_addr().expect("an address"))
}

#[test]
fn a_refused_connect_is_connection_refused() {
    let url = refusing_url();
    let result = smol::block_on(HttpService::new().oneshot(request(http::Method::GET, &url)));
    let error = result.expect_err("nothing listens");
    assert!(matches!(error, HttpError::Connect(_)), "{error:?}");
    assert_eq!(
        backstop::tower::error_kind(&error),
        ErrorKind::ConnectionRefused
    );
    assert_eq!(
        backstop::smol::error_kind(&error),
        ErrorKind::ConnectionRefused
    );
}

#[test]
fn a_refused_post_is_retried_through_the_layer_as_never_sent() {
    let url = refusing_url();
    let policy = Policy::builder()
        .max_attempts(2)
        .build()
        .expect("a valid policy");
    let client = RetryLayer::new(Retrier::new(policy), VirtualTime::new(SmolRuntime::new()))
        .layer(HttpService::new());
    let result = smol::block_on(client.oneshot(request(http::Method::POST, &url)));
    let Err(RetryError::Failed { kind, outcome, .. }) = result else {
        panic!("{result:?}");
    };
    assert_eq!((kind, outcome.attempts), (ErrorKind::ConnectionRefused, 2));
}

#[test]
fn a_uri_the_service_cannot_send_to_is_an_invalid_request() {
    for url in ["/relative", "ftp://127.0.0.1/", "http:/no-host"] {
        let Ok(uri) = url.parse::<http::Uri>() else {
            continue;
        };
        let mut get = request(http::Method::GET, "/");
        *get.uri_mut() = uri;
        let result = smol::block_on(HttpService::new().oneshot(get));
        let error = result.expect_err("nothing can be sent");
        assert!(matches!(error, HttpError::InvalidUri), "{url}: {error:?}");
        assert_eq!(
            backstop::tower::error_kind(&error),
            ErrorKind::InvalidRequest,
            "{url}"
        );
    }
}

/// A resolver's failure, as the service reports one (no lookup here: no network).
fn unresolved() -> HttpError {
    HttpError::Dns(ResolveError::new(std::io::Error::other(
        "failed to lookup address information: Name or service not known",
    )))
}

#[test]
fn an_unknown_host_is_dns() {
    assert_eq!(backstop::smol::error_kind(&unresolved()), ErrorKind::Dns);
}

#[test]
fn an_unknown_host_is_dns_through_the_layers_classifier() {
    assert_eq!(backstop::tower::error_kind(&unresolved()), ErrorKind::Dns);
}
