//! # backstop::reqwest
//!
//! backstop's retries for [reqwest](https://docs.rs/reqwest), as a `reqwest-middleware`
//! [`Middleware`](reqwest_middleware::Middleware). The whole setup is one line:
//!
//! ```
//! use backstop::reqwest::{Retrier, RetryMiddleware};
//! use reqwest_middleware::ClientBuilder;
//! # use std::io::{Read, Write};
//! # // The workspace builds reqwest on rustls without a provider of its own: install ring.
//! # let _ = rustls::crypto::ring::default_provider().install_default();
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
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(RetryMiddleware::new(Retrier::default()))
//!     .build();
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let response = client.get(&url).send().await?;
//!     // How the operation ended travels with the response.
//!     let outcome = response.extensions().get::<backstop::Outcome>().copied();
//!     assert_eq!(outcome.map(|o| o.attempts), Some(2));
//!     assert_eq!(response.text().await?, "ok");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Every request through the client runs the loop every backstop adapter runs
//! (`backstop::run`) on tokio's clock: the policy, `Retry-After` as a floor with a
//! ceiling, the idempotency rules (a POST is retried after it may have been sent only when it
//! carries an `Idempotency-Key`, the caller's opt-in), budgets, events, metrics, redaction.
//!
//! - **The last response is always returned**, with the operation's [`Outcome`] in its
//!   extensions (`response.extensions().get::<backstop::Outcome>()`): a final 503 is `Ok`.
//! - **An operation that ends without a response** is a `reqwest_middleware::Error::Middleware`
//!   holding a [`RetryError`] (see [`retry_error`]): attempts, reason, and the client's error
//!   as its source. Its `Display` names no URL; the source is reqwest's error, whose text
//!   does (`error sending request for url (...)`), and so does anything that prints the chain
//!   (`{:?}`, `{:#}`). The middleware cuts that URL to scheme, host, port and path (no
//!   userinfo, query or fragment, as in the events) before the error reaches you; a path
//!   that itself carries a secret is still there.
//! - **A body that cannot be replayed** (a stream: `Request::try_clone` is `None`) is sent
//!   once, never retried and never re-sent empty; its outcome's reason is
//!   [`StopReason::BodyNotReplayable`](crate::StopReason::BodyNotReplayable).
//! - **Timeouts.** Each attempt races the machine's attempt timeout (bounded by the overall
//!   deadline); the loser is dropped, which cancels reqwest's request. The request's own
//!   reqwest timeout (`RequestBuilder::timeout`, or the client's) still applies inside it.
//! - **A connect that never completes** is `ConnectTimeout` (never sent: retried for any
//!   method) only when reqwest itself reports it: give the client a connect timeout shorter
//!   than the policy's attempt timeout, `reqwest::Client::builder().connect_timeout(
//!   policy.attempt_timeout() / 2)`. Without one, the loop's attempt timer cuts the connect
//!   and the attempt is `Timeout` (maybe sent: a POST without an `Idempotency-Key` is not
//!   retried). The middleware cannot tell a stalled connect from a stalled exchange from
//!   outside reqwest's pool, which may hand the request a pooled connection while a connect
//!   it started is still pending; reqwest's own connect timeout bounds only the connect. An
//!   attempt the deadline cuts shorter than the connect timeout is `Timeout` too.
//! - **Hedging.** Under a policy with [`hedging`](crate::PolicyBuilder::hedging), a request that
//!   [`Policy::hedges`](crate::Policy::hedges) is hedged (see [`hedging`](crate::hedging)): each
//!   copy goes down the rest of the chain with a copy of the request and of its extensions; a
//!   dropped copy's connection is closed; the response carries a
//!   [`HedgeOutcome`](crate::HedgeOutcome) in its extensions.
//! - **Abort.** Put an [`Abort`] in the request's extensions
//!   (`client.get(url).with_extension(abort.clone())`) to cancel the operation from elsewhere;
//!   an [`OperationName`] there names the operation in events.
//! - **A policy per request.** A [`Policy`](crate::Policy) in the request's extensions
//!   (`client.post(url).with_extension(once)`) replaces the retrier's for that request only:
//!   one shared client, a policy per endpoint (the rest of the retrier stays).
//! - **Keys.** [`RetryMiddleware::generate_idempotency_key`] gives each POST and PATCH without
//!   an `Idempotency-Key` one of its own, for servers that deduplicate by it.
//! - **Errors as kinds** ([`error_kind`]): connect failures never sent, TLS permanent (feature
//!   `rustls`), reqwest's timeouts, redirect loops permanent.
//! - **Logs.** With the feature `tracing`, every attempt, wait and outcome is a `tracing` event
//!   (target `backstop`, redacted; a first-try success at DEBUG only).
//!
//! reqwest's TLS is the caller's, configured with reqwest's own API. With reqwest's default
//! features (rustls on aws-lc) `reqwest::Client::new()` works as it is. To stay on ring, enable
//! reqwest's `rustls-no-provider` and install ring as the process default (as the examples do).
//! A TLS failure is `ErrorKind::Tls` (feature `rustls`): permanent, never retried.
//!
//! ## Trusting a private CA
//!
//! reqwest's `Certificate` and `ClientBuilder::tls_certs_only` (or `tls_certs_merge`, which
//! adds the CA to the platform's roots) need one of reqwest's TLS features (`rustls`,
//! `rustls-no-provider`, `native-tls`).
//!
//! ```
//! # let _ = rustls::crypto::ring::default_provider().install_default();
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
//! use backstop::reqwest::{Retrier, RetryMiddleware};
//!
//! // reqwest's own API: the private CA's PEM (here `ca_pem`, e.g. `std::fs::read("ca.pem")?`)
//! // as the only root.
//! let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes())?;
//! let http = reqwest::Client::builder().tls_certs_only([ca]).build()?;
//! let client = reqwest_middleware::ClientBuilder::new(http)
//!     .with(RetryMiddleware::new(Retrier::default()))
//!     .build();
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let response = client.get(&url).send().await?;
//!     assert_eq!(response.status(), 200);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod middleware;
mod resume;

pub use crate::tokio::TokioRuntime;
pub use crate::{http, Abort, Metrics, OperationName, Retrier, RetryError, RetryEvent};
pub use error::{error_kind, retry_error, Error};
pub use middleware::RetryMiddleware;
/// The reqwest-middleware crate backstop's middleware is built for (its `ClientBuilder`,
/// `ClientWithMiddleware`): use it through here and its version always matches.
pub use reqwest_middleware;

#[doc(no_inline)]
pub use crate::Outcome;
