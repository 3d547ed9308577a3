//! Through the reqwest middleware and the tower layer: a self-signed certificate the client
//! does not trust. One attempt, `ErrorKind::Tls`, stopped as a permanent error; nothing
//! reached the server.

use backstop::{ErrorKind, StopReason};
use backstop_driver::{Retrier, Roots, TlsBuilder, VirtualTime};
use backstop_tests::adapters::Failure;
use backstop_tests::certs::{ServerCert, TestCa};
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};

#[test]
fn an_untrusted_certificate_is_a_permanent_tls_error_after_one_attempt() {
    for stack in Stack::ALL {
        let tls = TlsBuilder::new()
            .roots(Roots::Custom)
            .ca_pem(TestCa::new().pem())
            .build()
            .expect("a TLS configuration");
        let server = Server::start_tls(
            [Reply::status(200).into()],
            &ServerCert::self_signed(&["127.0.0.1"]),
        );
        let url = server.url("/");
        let clock = VirtualTime::new(backstop_tokio::TokioRuntime::new());
        let (result, text) = stack.send(
            &Retrier::default(),
            &clock,
            tls,
            http::Method::GET,
            &url,
            &[],
        );
        let Err(Failure::Failed { kind, outcome }) = result else {
            panic!("{stack:?}: {result:?}");
        };
        assert_eq!(kind, ErrorKind::Tls, "{stack:?}: {text:?}");
        assert_eq!(
            (outcome.attempts, outcome.reason),
            (1, StopReason::PermanentError),
            "{stack:?}"
        );
        assert_eq!(server.requests(), 0, "{stack:?}: nothing was sent");
        assert_eq!(server.connections(), 1, "{stack:?}: no second attempt");
    }
}
