//! Through the reqwest middleware and the tower layer: a port nobody listens on. The request
//! was never sent, so it is retried (even a POST) until the attempts run out, and fails as
//! `ConnectionRefused`.

use backstop::{ErrorKind, Policy, StopReason};
use backstop_driver::{Retrier, VirtualTime};
use backstop_tests::adapters::Failure;
use backstop_tests::middleware::*;

#[test]
fn a_refused_connection_is_retried_and_reported_as_refused() {
    for stack in Stack::ALL {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let url = format!("http://127.0.0.1:{port}/orders");
        let clock = VirtualTime::new(backstop_tokio::TokioRuntime::new());
        let retrier = Retrier::new(Policy::builder().max_attempts(3).build().expect("policy"));
        let (result, text) = stack.send(
            &retrier,
            &clock,
            default_tls(),
            http::Method::POST,
            &url,
            &[],
        );
        let Err(Failure::Failed { kind, outcome }) = result else {
            panic!("{stack:?}: {result:?}");
        };
        assert_eq!(kind, ErrorKind::ConnectionRefused, "{stack:?}: {text:?}");
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (3, StopReason::Attempts),
            "{stack:?}"
        );
    }
}
