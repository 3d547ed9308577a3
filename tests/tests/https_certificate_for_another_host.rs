//! A certificate from a trusted CA, but for another host name: one attempt, `ErrorKind::Tls`,
//! stopped as a permanent error, and the error's text names the cause.

use backstop::Retrier;
use backstop_tests::certs::TestCa;
use backstop_tests::https::{
    assert_rejected_at_the_handshake, for_each_https_adapter, run_https, Trust,
};
use backstop_tests::server::{Reply, Server};
use backstop_tests::TestRequest;

#[test]
fn a_certificate_for_another_host_is_a_permanent_tls_error_after_one_attempt() {
    let ca = TestCa::new();
    let tls = Trust::only_ca(ca.pem());
    for_each_https_adapter(|adapter| {
        // The URL's host is 127.0.0.1; the certificate names another host only.
        let server = Server::start_tls(
            [Reply::status(200).into()],
            &ca.server_cert(&["other.example"]),
        );
        let request = TestRequest::get(server.url("/"));
        let https = run_https(adapter, &Retrier::default(), request, &tls);
        assert_rejected_at_the_handshake(
            adapter,
            &https,
            &server,
            "certificate rejected: NotValidForName",
        );
    });
}
