//! # backstop::tower
//!
//! backstop's retries as a tower [`Layer`](tower_layer::Layer) for any HTTP service:
//! [`RetryLayer::new(retrier, runtime)`](RetryLayer::new) in front of a hyper-util client, a
//! tonic channel's HTTP stack, a stack of tower-http layers, or on smol
//! `backstop::smol::HttpService`. The runtime is the clock and timers the layer waits on:
//! `backstop::tokio::TokioRuntime` or `backstop::smol::SmolRuntime` (features `tokio`,
//! `smol`).
//!
//! ```
//! use backstop::tokio::TokioRuntime;
//! use backstop::tower::{Retrier, RetryLayer};
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use tower::{ServiceBuilder, ServiceExt};
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
//!     let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
//!         .build_http::<Full<Bytes>>();
//!     let client = ServiceBuilder::new()
//!         .layer(RetryLayer::new(Retrier::default(), TokioRuntime::new()))
//!         .service(http);
//!
//!     let request = http::Request::get(&url).body(Full::new(Bytes::new()))?;
//!     let response = client.oneshot(request).await?;
//!     let outcome = response.extensions().get::<backstop::Outcome>().copied();
//!     assert_eq!(outcome.map(|o| o.attempts), Some(2));
//!     let body = response.into_body().collect().await?.to_bytes();
//!     assert_eq!(&body[..], b"ok");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every call runs the loop every backstop adapter runs (`backstop::run`): the policy,
//! `Retry-After` as a floor with a ceiling, the idempotency rules and `Idempotency-Key`,
//! budgets, abort (an [`Abort`] in the request's extensions), events (named by an
//! [`OperationName`] there), a policy per request (a [`Policy`] there replaces
//! the retrier's for that request), metrics, redaction.
//!
//! - Each attempt sends a clone of the request (`B: Clone`: `Full<Bytes>`, `String`, ...) to the
//!   operation's clone of the inner service, made ready first (a fresh clone after a
//!   readiness error). Readiness is backpressure, not an
//!   attempt: it is awaited before the attempt starts, bounded by the operation's deadline
//!   (not the attempt's timeout), and a service never ready sends nothing and ends the
//!   operation at the deadline with no attempt counted. A body that cannot be cloned (a boxed
//!   stream) goes in a [`ReplayBody`], whose factory makes it afresh for each attempt.
//! - The last response is always returned, with the operation's [`Outcome`] in its
//!   extensions; an operation without a response is a [`RetryError`] whose source is the
//!   last attempt's error ([`ServiceError`]).
//! - Each attempt races the machine's attempt timeout (bounded by the deadline) on the
//!   layer's runtime (`VirtualTime` over it in tests).
//! - Under a policy with [`hedging`](crate::PolicyBuilder::hedging), a request that
//!   [`Policy::hedges`](crate::Policy::hedges) is hedged (see [`hedging`](crate::hedging)): each
//!   copy readies a clone of the inner service of its own (its readiness counts in its time) and
//!   calls it with a clone of the request; a dropped copy's connection is closed; the response
//!   carries a [`HedgeOutcome`](crate::HedgeOutcome) in its extensions.
//! - **A connect that never completes** is `ConnectTimeout` (never sent: retried for any
//!   method) only when the inner client reports it: give hyper-util's `HttpConnector` a
//!   connect timeout shorter than the policy's attempt timeout
//!   (`connector.set_connect_timeout(Some(policy.attempt_timeout() / 2))`). Without one, the
//!   loop's attempt timer cuts the connect and the attempt is `Timeout` (maybe sent: a POST
//!   without an `Idempotency-Key` is not retried): the layer cannot see inside the service,
//!   and hyper-util's pool may hand the request a pooled connection while a connect it
//!   started is still pending. An attempt the deadline cuts shorter than the connect timeout
//!   is `Timeout` too.
//! - The inner service's errors are classified by [`error_kind`]: a hyper-util client's
//!   connect failures are never sent, TLS permanent (feature `rustls`), the rest as the socket
//!   or hyper says.
//! - With the feature `tracing`, every attempt, wait and outcome is a `tracing` event (target
//!   `backstop`, redacted; a first-try success at DEBUG only).
//!
//! ## Trusting a private CA
//!
//! TLS is the inner client's: for hyper-util, hyper-rustls's own builder (with the `rustls`
//! feature, whose TLS failures are `ErrorKind::Tls`: permanent, never retried).
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
//! use backstop::tokio::TokioRuntime;
//! use backstop::tower::{Retrier, RetryLayer};
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use tower::{ServiceBuilder, ServiceExt};
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
//!
//! // hyper-rustls's own builder, over hyper-util's connector.
//! let https = hyper_rustls::HttpsConnectorBuilder::new()
//!     .with_tls_config(tls)
//!     .https_or_http()
//!     .enable_http1()
//!     .build();
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
//!         .build::<_, Full<Bytes>>(https);
//!     let client = ServiceBuilder::new()
//!         .layer(RetryLayer::new(Retrier::default(), TokioRuntime::new()))
//!         .service(http);
//!     let response = client.oneshot(http::Request::get(&url).body(Full::new(Bytes::new()))?).await?;
//!     assert_eq!(response.status(), 200);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod layer;
mod read_body;
mod resume;

pub use crate::{
    http, Abort, Metrics, OperationName, Policy, ReplayBody, Retrier, RetryError, RetryEvent,
};
pub use error::{error_kind, ServiceError};
pub use layer::{Retry, RetryFuture, RetryLayer};
pub use read_body::{ReadBodyFuture, ReadBodyLayer, ReadBodyService};
pub use resume::{ResumeBody, ResumingFuture, ResumingRetry, ResumingRetryLayer};

#[doc(no_inline)]
pub use crate::Outcome;
