//! # backstop::smol
//!
//! Async HTTP retries on smol: [`HttpService`], a tower service that sends requests over
//! hyper's HTTP/1 client on smol's TCP (through `smol-hyper`) and keeps their connections,
//! wrapped in `backstop::tower::RetryLayer` (the `tower` feature) on smol's clock and timers
//! ([`SmolRuntime`]). [`run`] with [`SmolRuntime`] drives any other async client as a
//! `Transport`.
//!
//! Why backstop keeps an HTTP service of its own here, when the other front doors wrap the
//! caller's: smol has no pooled HTTP client or `tower` service to wrap (hyper-util's pool and
//! connector are tokio's; reqwest is tokio's). [`HttpService`] is the least that retries need
//! on smol: hyper's connection-level API over `smol::net::TcpStream`; a small pool of idle
//! connections, so that a retry (and the next request) reuses the connection the last
//! response came on; and the connector's report of whether an attempt was still connecting
//! (`ConnectTimeout`, never sent) or had a connection (`Timeout`, maybe sent). It does not
//! retry: that is the layer's.
//!
//! The pool keeps at most 8 idle HTTP/1 connections per scheme, host and port. A connection
//! goes back to it only when its response's [`Body`] has been read to its end (the layer reads
//! a discarded response's body within `Retrier::drain`'s limits for this) and its request has
//! been written in full; a body dropped before its end closes its connection, and a connection
//! whose server answered before reading the whole request body (a 413 to a large upload, say)
//! is not kept, as hyper is still writing the body there. A request takes the most recently
//! used idle connection that hyper says is ready, else makes a new one; one the server closed
//! while it was idle is discarded, and a request it gives back unsent goes on a new connection.
//! No task runs besides each connection's own (hyper's, on smol's global executor); idle
//! connections have no time-out of their own: the server's idle time-out closes them.
//!
//! `https://` works with the `rustls` feature: futures-rustls on rustls' `ring` provider,
//! trusting Mozilla's roots (the `webpki-roots` crate: futures-rustls brings no roots of its
//! own). TLS is configured with rustls' own API: [`HttpService::with_tls`] takes any rustls
//! `ClientConfig` (see [Trusting a private CA](#trusting-a-private-ca)). A TLS failure (a
//! rejected certificate, a failed handshake) is `ErrorKind::Tls`: permanent, never retried, and
//! the error's text names the cause.
//!
//! The service's errors ([`HttpError`]) are classified by [`error_kind`], and by
//! `backstop::tower::error_kind` through the layer: a refused connection is
//! `ConnectionRefused`, a TLS failure `Tls`, a URI it cannot send to (a relative one, a scheme
//! other than `http` or `https`) `InvalidRequest`.
//!
//! Each attempt races its timeout and the operation's [`Abort`]; the loser is dropped, which
//! cancels the request in flight (hyper closes its connection). After an abort nothing is sent.
//!
//! ```
//! # #[cfg(feature = "tower")] {
//! use backstop::smol::{HttpService, Retrier, SmolRuntime};
//! use backstop::tower::RetryLayer;
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use tower::{Layer, ServiceExt};
//! # use std::io::{Read, Write};
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("http://{}/hello", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     // One connection, kept for both answers.
//! #     let (mut stream, _) = listener.accept().unwrap();
//! #     for answer in [
//! #         "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n",
//! #         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
//! #     ] {
//! #         let mut buf = [0; 1024];
//! #         let _ = stream.read(&mut buf);
//! #         let _ = stream.write_all(answer.as_bytes());
//! #     }
//! # });
//!
//! let client = RetryLayer::new(Retrier::default(), SmolRuntime::new())
//!     .layer(HttpService::new());
//!
//! smol::block_on(async {
//!     let request = http::Request::get(&url).body(Full::new(Bytes::new()))?;
//!     let response = client.oneshot(request).await?;
//!     let outcome = response.extensions().get::<backstop::Outcome>().copied();
//!     assert_eq!(outcome.map(|o| o.attempts), Some(2));
//!     let body = response.into_body().collect().await?.to_bytes();
//!     assert_eq!(&body[..], b"ok");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # }
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
//! use backstop::smol::HttpService;
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use rustls::pki_types::{pem::PemObject, CertificateDer};
//! use tower::ServiceExt;
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
//! let http = HttpService::with_tls(tls);
//! let request = http::Request::get(&url).body(Full::new(Bytes::new()))?;
//! let response = smol::block_on(http.oneshot(request))?;
//! assert_eq!(response.status(), 200);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod body;
mod connect;
mod connection;
mod error;
mod pool;
mod runtime;
mod service;

pub use crate::prelude::*;
pub use body::Body;
pub use error::{error_kind, HttpError};
pub use runtime::SmolRuntime;
pub use service::HttpService;
