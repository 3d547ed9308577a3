//! # backstop::tokio
//!
//! Async HTTP retries on tokio: the backstop retry loop (`backstop`) with tokio's clock
//! and timers ([`TokioRuntime`], which follows `tokio::time::pause()`), for any async request
//! function ([`run`]) and ready-made over hyper-util's pooled client ([`Client`]).
//!
//! `https://` works with the `rustls` feature: hyper-rustls on rustls' `ring` provider, trusting
//! Mozilla's roots (hyper-rustls's own, its `webpki-roots` feature). TLS is configured with
//! rustls' own API: [`Client::with_tls`] takes any rustls `ClientConfig` (see [Trusting a private
//! CA](#trusting-a-private-ca)), and [`Client::with_http`] any hyper-util client. A TLS failure
//! (a rejected certificate, a failed handshake) is `ErrorKind::Tls`: permanent, never retried,
//! and the error's text names the cause.
//!
//! Each attempt races its timeout and the operation's [`Abort`]; the loser is dropped, which
//! cancels the request in flight (hyper closes its connection). After an abort nothing is sent.
//!
//! ```
//! use backstop::tokio::{Client, Retrier, RetryRequest};
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
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let client = Client::new(Retrier::new(backstop::Policy::default()));
//!     let done = client.run(RetryRequest::get(url)).await?;
//!     assert_eq!((done.response.status().as_u16(), done.outcome.attempts), (200, 2));
//!     let body = done.response.into_body().collect().await?.to_bytes();
//!     assert_eq!(&body[..], b"ok");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! With any other client, give [`run`] (the driver's loop) tokio's clock and a closure that
//! makes one attempt:
//!
//! ```
//! use backstop::tokio::{run, Retrier, RetryRequest, TokioRuntime};
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let done = rt.block_on(run(
//!     &Retrier::default(),
//!     &TokioRuntime::new(),
//!     RetryRequest::get("http://example.invalid/"),
//!     |attempt: backstop::Attempt| async move {
//!         // Send `attempt.request` with your client; here, answer 200 at once.
//!         let _ = attempt.request;
//!         Ok::<_, std::io::Error>(http::Response::new(()))
//!     },
//! ))?;
//! assert_eq!(done.outcome.attempts, 1);
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
//! use backstop::tokio::{Client, Retrier, RetryRequest};
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
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let client = Client::with_tls(Retrier::default(), tls);
//!     let done = client.run(RetryRequest::get(url)).await?;
//!     assert_eq!(done.response.status(), 200);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod client;
mod error;
mod resolve;
mod runtime;

pub use crate::prelude::*;
pub use client::{Client, DefaultConnector, Result};
pub use error::{error_kind, HttpError};
pub use resolve::{Resolver, Resolving};
pub use runtime::TokioRuntime;
