//! # backstop::smol
//!
//! Async HTTP retries on smol: the backstop retry loop (`backstop`) with `async-io`
//! timers ([`SmolRuntime`]), for any async request function ([`run`]) and ready-made over
//! hyper's HTTP/1 client on smol's TCP through `smol-hyper` ([`Client`]).
//!
//! Why backstop keeps a small client of its own here, when the other front doors wrap the
//! caller's: smol has no pooled HTTP client or `tower` service to wrap (hyper-util's pool and
//! connector are tokio's; reqwest is tokio's). [`Client`] is the least that retries need on
//! smol: hyper's connection-level API over `smol::net::TcpStream`, one connection kept per
//! operation so a retry reuses it, and the connector's report of whether an attempt was still
//! connecting (`ConnectTimeout`, never sent) or had a connection. Any other client plugs into
//! [`run`] with [`SmolRuntime`] as a `Transport`.
//!
//! `https://` works with the `rustls` feature: futures-rustls on rustls' `ring` provider,
//! trusting Mozilla's roots (the `webpki-roots` crate: futures-rustls brings no roots of its
//! own). TLS is configured with rustls' own API: [`Client::with_tls`] takes any rustls
//! `ClientConfig` (see [Trusting a private CA](#trusting-a-private-ca)). A TLS failure (a
//! rejected certificate, a failed handshake) is `ErrorKind::Tls`: permanent, never retried, and
//! the error's text names the cause.
//!
//! Each attempt races its timeout and the operation's [`Abort`]; the loser is dropped, which
//! cancels the request in flight (hyper closes its connection). After an abort nothing is sent.
//!
//! ```
//! use backstop::smol::{Client, Retrier};
//! use http_body_util::BodyExt;
//! # use std::io::{Read, Write};
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("http://{}/hello", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     for (stream, answer) in listener.incoming().zip([
//! #         "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
//! #         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
//! #     ]) {
//! #         let mut stream = stream.unwrap();
//! #         let mut buf = [0; 1024];
//! #         let _ = stream.read(&mut buf);
//! #         let _ = stream.write_all(answer.as_bytes());
//! #     }
//! # });
//!
//! smol::block_on(async {
//!     let client = Client::new(Retrier::new(backstop::Policy::default()));
//!     let done = client.run(http::Request::get(url).body(bytes::Bytes::new())?).await?;
//!     assert_eq!((done.response.status().as_u16(), done.outcome.attempts), (200, 2));
//!     let body = done.response.into_body().collect().await?.to_bytes();
//!     assert_eq!(&body[..], b"ok");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Trusting a private CA
//!
//! ```
//! # #[cfg(feature = "rustls")] {
//! # // A private CA, a certificate it signs for 127.0.0.1, and one HTTPS answer on loopback.
//! # let ca_key = rcgen::KeyPair::generate()?;
//! # let mut ca = rcgen::CertificateParams::new(Vec::<String>::new())?;
//! # ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
//! # let ca_pem = ca.self_signed(&ca_key)?.pem();
//! # let key = rcgen::KeyPair::generate()?;
//! # let cert = rcgen::CertificateParams::new(["127.0.0.1".to_owned()])?
//! #     .signed_by(&key, &rcgen::Issuer::new(ca, ca_key))?;
//! # let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der());
//! # let server = rustls::ServerConfig::builder()
//! #     .with_no_client_auth()
//! #     .with_single_cert(vec![cert.der().clone()], key.into())?;
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("https://{}/", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     let (tcp, _) = listener.accept().unwrap();
//! #     let connection = rustls::ServerConnection::new(std::sync::Arc::new(server)).unwrap();
//! #     let mut tls = rustls::StreamOwned::new(connection, tcp);
//! #     let _ = std::io::Read::read(&mut tls, &mut [0; 4096]);
//! #     let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
//! #     let _ = std::io::Write::write_all(&mut tls, ok);
//! #     tls.conn.send_close_notify();
//! #     let _ = std::io::Write::flush(&mut tls);
//! # });
//! use backstop::smol::{Client, Retrier};
//! use rustls::pki_types::{pem::PemObject, CertificateDer};
//!
//! // rustls' own API: the private CA's PEM (here `ca_pem`; `CertificateDer::pem_file_iter(path)?`
//! // reads a file) in a root store of its own.
//! let mut roots = rustls::RootCertStore::empty();
//! for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
//!     roots.add(cert?)?;
//! }
//! let tls = rustls::ClientConfig::builder()
//!     .with_root_certificates(roots)
//!     .with_no_client_auth();
//! // To trust Mozilla's roots as well, start from
//! // `RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }`.
//!
//! let client = Client::with_tls(Retrier::default(), tls);
//! let done = smol::block_on(client.run(http::Request::get(url).body(bytes::Bytes::new())?))?;
//! assert_eq!(done.response.status(), 200);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod client;
mod connect;
mod error;
mod runtime;

pub use crate::prelude::*;
pub use client::{Client, Result};
pub use error::{error_kind, HttpError};
pub use runtime::SmolRuntime;
