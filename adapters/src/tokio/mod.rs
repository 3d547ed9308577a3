//! # backstop::tokio
//!
//! Async HTTP retries on tokio: the backstop retry loop (`backstop`) with tokio's clock
//! and timers ([`TokioRuntime`], which follows `tokio::time::pause()`), for any async request
//! function ([`run`]) and ready-made over hyper-util's pooled client ([`Client`]).
//!
//! `https://` works with the `rustls` feature (hyper-rustls on rustls'
//! `ring` provider, Mozilla's roots). [`Client::with_tls`] takes a configuration from
//! [`TlsBuilder`] (the platform's roots, a private CA's PEM) or any rustls `ClientConfig`;
//! [`Client::with_http`] takes any hyper-util client. A TLS failure (a rejected certificate,
//! a failed handshake) is `ErrorKind::Tls`: permanent, never retried, and the error's text
//! names the cause.
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

mod client;
mod error;
mod resolve;
mod runtime;

pub use crate::prelude::*;
pub use client::{Client, DefaultConnector, Result};
pub use error::{error_kind, HttpError};
pub use resolve::{Resolver, Resolving};
pub use runtime::TokioRuntime;
