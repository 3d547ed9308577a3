//! Through `backstop::tower::RetryLayer` on smol: a 503 and then a 200, on one connection.
//! The layer reads the discarded 503's body to its end, which gives the connection back to the
//! smol service's pool, and the retry takes it.

#![cfg(all(feature = "smol", feature = "tower"))]

#[path = "common/loopback.rs"]
mod loopback;

use backstop::smol::{HttpService, Retrier, SmolRuntime};
use backstop::tower::RetryLayer;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use loopback::Loopback;
use tower::{Layer, ServiceExt};

#[test]
fn a_503_then_a_200_come_on_one_kept_connection() {
    let server = Loopback::start(&[
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 4\r\n\r\nbusy",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    ]);
    let client = RetryLayer::new(Retrier::default(), SmolRuntime::new()).layer(HttpService::new());
    let request = http::Request::get(format!("{}/hello", server.origin))
        .body(Full::new(Bytes::new()))
        .expect("a valid request");
    smol::block_on(async {
        let response = client.oneshot(request).await.expect("a response");
        let outcome = response.extensions().get::<backstop::Outcome>().copied();
        assert_eq!(
            (response.status().as_u16(), outcome.map(|o| o.attempts)),
            (200, Some(2))
        );
        let body = response.into_body().collect().await.expect("a body");
        assert_eq!(&body.to_bytes()[..], b"ok");
    });
    assert_eq!((server.connections(), server.heads().len()), (1, 2));
}
