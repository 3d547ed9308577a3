//! A certificate the smol service does not trust fails the TLS handshake, before anything is
//! sent: `ErrorKind::Tls` through `backstop::tower::error_kind`, permanent, and the error's
//! text names the cause.

#![cfg(all(feature = "smol", feature = "tower", feature = "rustls"))]

use std::sync::Arc;

use backstop::smol::HttpService;
use backstop::ErrorKind;
use bytes::Bytes;
use http_body_util::Full;
use tower::ServiceExt;

/// An HTTPS server on loopback whose certificate is self-signed (no root store trusts it); it
/// runs one handshake.
fn untrusted_server() -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let cert = rcgen::CertificateParams::new(["127.0.0.1".to_owned()])
        .expect("valid params")
        .self_signed(&key)
        .expect("a certificate");
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der());
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key.into())
        .expect("a server config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("https://{}/", listener.local_addr().expect("an address"));
    std::thread::spawn(move || {
        let Ok((mut tcp, _)) = listener.accept() else {
            return;
        };
        let _ = tcp.set_read_timeout(Some(std::time::Duration::from_secs(5)));
        let mut tls = rustls::ServerConnection::new(Arc::new(config)).expect("a connection");
        // Ends when the client rejects the certificate and closes.
        let _ = tls.complete_io(&mut tcp);
    });
    url
}

#[test]
fn an_untrusted_certificate_is_tls() {
    let url = untrusted_server();
    let request = http::Request::get(&url)
        .body(Full::new(Bytes::new()))
        .expect("a valid request");
    let result = smol::block_on(HttpService::new().oneshot(request));
    let error = result.expect_err("the certificate is not trusted");
    assert_eq!(backstop::tower::error_kind(&error), ErrorKind::Tls);
    let text = error.to_string();
    assert_eq!(
        text,
        "TLS handshake failed: certificate rejected: UnknownIssuer"
    );
}
