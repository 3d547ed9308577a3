//! Through the reqwest middleware: a self-signed certificate the client does not trust. One attempt,
//! `ErrorKind::Tls`, stopped as a permanent error; nothing reached the server.

use backstop::{ErrorKind, StopReason};
use backstop_driver::{Retrier, Roots, TlsBuilder, VirtualTime};
use backstop_tests::adapters::Failure;
use backstop_tests::certs::{ServerCert, TestCa};
use backstop_tests::middleware::*;
use backstop_tests::server::{Reply, Server};

#[test]
fn an_untrusted_certificate_is_a_permanent_tls_error_after_one_attempt() {
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
    let retrier = Retrier::default();
    let (result, text) = block_on(async {
        let client = reqwest_client(&retrier, &clock, tls);
        reqwest_answer(client.request(reqwest::Method::GET, &url).send().await).await
    });
    let Err(Failure::Failed { kind, outcome }) = result else {
        panic!("{result:?}");
    };
    assert_eq!(kind, ErrorKind::Tls, "{text:?}");
    assert_eq!(
        (outcome.attempts, outcome.reason),
        (1, StopReason::PermanentError)
    );
    assert_eq!(server.requests(), 0, "nothing was sent");
    assert_eq!(server.connections(), 1, "no second attempt");
}
