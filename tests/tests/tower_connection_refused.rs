//! Through the tower layer: a port nobody listens on. The request was never sent, so it is retried
//! (even a POST) until the attempts run out, and fails as `ConnectionRefused`.

use backstop::{ErrorKind, Policy, StopReason};
use backstop_driver::{Retrier, VirtualTime};
use backstop_tests::adapters::Failure;
use backstop_tests::middleware::*;

#[test]
fn a_refused_connection_is_retried_and_reported_as_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/orders");
    let clock = VirtualTime::new(backstop_tokio::TokioRuntime::new());
    let retrier = Retrier::new(Policy::builder().max_attempts(3).build().expect("policy"));
    let (result, text) = block_on(async {
        let client = tower_client(&retrier, &clock, default_tls());
        let request = tower_request(http::Method::POST, &url);

        tower_answer(client, request).await
    });
    let Err(Failure::Failed { kind, outcome }) = result else {
        panic!("{result:?}");
    };
    assert_eq!(kind, ErrorKind::ConnectionRefused, "{text:?}");
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (3, StopReason::Attempts)
    );
}
