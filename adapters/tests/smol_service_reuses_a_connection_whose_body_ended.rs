//! The smol service gives a connection back to its pool once the response body has ended, and
//! the next request to the same origin goes on it: two requests, one connection. A body with
//! nothing to read gives its connection back unread. Each request goes out in origin form with
//! a `Host` header.

#![cfg(feature = "smol")]

#[path = "common/loopback.rs"]
mod loopback;

use backstop::smol::HttpService;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use loopback::Loopback;
use tower::ServiceExt;

fn get(url: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(url)
        .body(Full::new(Bytes::new()))
        .expect("a valid request")
}

#[test]
fn two_requests_whose_bodies_are_read_to_the_end_use_one_connection() {
    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let server = Loopback::start(&[OK, OK]);
    let http = HttpService::new();
    smol::block_on(async {
        for path in ["/first?page=1", "/second"] {
            let url = format!("{}{path}", server.origin);
            let response = http.clone().oneshot(get(&url)).await.expect("a response");
            let body = response.into_body().collect().await.expect("a body");
            assert_eq!(&body.to_bytes()[..], b"ok");
        }
    });
    assert_eq!(server.connections(), 1);
    let heads = server.heads();
    assert_eq!(heads.len(), 2);
    assert!(
        heads[0].starts_with("GET /first?page=1 HTTP/1.1\r\n"),
        "{heads:?}"
    );
    assert!(
        heads[1].starts_with("GET /second HTTP/1.1\r\n"),
        "{heads:?}"
    );
    let host = format!("host: {}\r\n", server.origin.trim_start_matches("http://"));
    assert!(heads.iter().all(|h| h.contains(&host)), "{heads:?}");
}

#[test]
fn an_empty_body_dropped_unread_gives_its_connection_back() {
    const NO_CONTENT: &str = "HTTP/1.1 204 No Content\r\n\r\n";
    let server = Loopback::start(&[NO_CONTENT, NO_CONTENT]);
    let http = HttpService::new();
    smol::block_on(async {
        for _ in 0..2 {
            let response = http.clone().oneshot(get(&server.origin)).await;
            assert_eq!(response.expect("a response").status(), 204);
        }
    });
    assert_eq!((server.connections(), server.heads().len()), (1, 2));
}
