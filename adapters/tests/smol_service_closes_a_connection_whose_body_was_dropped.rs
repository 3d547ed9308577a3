//! A response body dropped before its end takes its connection with it (it cannot carry
//! another request: RFC 9112 §9.3), so the next request to the same origin makes a new one.

#![cfg(feature = "smol")]

#[path = "common/loopback.rs"]
mod loopback;

use backstop::smol::HttpService;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use loopback::Loopback;
use tower::ServiceExt;

#[test]
fn a_request_after_a_dropped_body_makes_a_new_connection() {
    const HELLO: &str = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let server = Loopback::start(&[HELLO, HELLO]);
    let http = HttpService::new();
    let get = || {
        http::Request::get(&server.origin)
            .body(Full::new(Bytes::new()))
            .expect("a valid request")
    };
    smol::block_on(async {
        let unread = http.clone().oneshot(get()).await.expect("a response");
        drop(unread);
        let response = http.clone().oneshot(get()).await.expect("a response");
        let body = response.into_body().collect().await.expect("a body");
        assert_eq!(&body.to_bytes()[..], b"hello");
    });
    assert_eq!((server.connections(), server.heads().len()), (2, 2));
}
