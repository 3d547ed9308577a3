//! A self-signed certificate the client does not trust: one attempt, `ErrorKind::Tls`, stopped
//! as a permanent error, and the error's text names the cause.

use backstop::Retrier;
use backstop_tests::certs::{ServerCert, TestCa};
use backstop_tests::https::{
    assert_rejected_at_the_handshake, for_each_https_adapter, run_https, Trust,
};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn an_untrusted_certificate_is_a_permanent_tls_error_after_one_attempt() {
    // The client trusts a private CA, which did not sign the server's certificate.
    let tls = Trust::only_ca(TestCa::new().pem());
    for_each_https_adapter(|adapter| {
        let server = Server::start_tls(
            [Reply::status(200).into()],
            &ServerCert::self_signed(&["127.0.0.1"]),
        );
        let request = TestRequest::get(server.url("/"));
        let https = run_https(adapter, &Retrier::default(), request, &tls);
        assert_rejected_at_the_handshake(
            adapter,
            &https,
            &server,
            "certificate rejected: UnknownIssuer",
        );
    });
}
