//! A URL or header that does not convert is an error before anything is sent: every front door
//! takes its stack's own request (`http::Request` for ureq and the tower layer, reqwest's for
//! the middleware), whose builder refuses it before the retry loop runs, without showing the
//! value.

use backstop::runtime::VirtualTime;
use backstop::Retrier;
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};

#[test]
fn reqwest_refuses_a_bad_header_before_the_middleware_sends() {
    let server = Server::always(Reply::status(200));
    let clock = VirtualTime::new(backstop::tokio::TokioRuntime::new());
    let error = block_on(async {
        let client = reqwest_client(&Retrier::default(), &clock, &default_tls());
        client
            .get(server.url("/"))
            .header("authorization", "Bearer s3cret\r\n")
            .send()
            .await
    })
    .expect_err("an invalid header value");
    assert!(error.is_builder(), "{error:?}");
    assert!(!error.to_string().contains("s3cret"), "{error}");
    assert_eq!(server.connections(), 0);
}

#[test]
fn http_refuses_a_bad_header_before_ureq_or_the_tower_layer_sends() {
    // ureq and the tower layer take an `http::Request`, whose builder refuses the value: the
    // request never exists, so nothing reaches the retry loop or the server.
    let error = http::Request::get("http://127.0.0.1/")
        .header("authorization", "Bearer s3cret\r\n")
        .body(())
        .expect_err("an invalid header value");
    assert!(!error.to_string().contains("s3cret"), "{error}");
}
