//! # backstop::smol
//!
//! Async HTTP retries on smol: the backstop retry loop (`backstop`) with `async-io`
//! timers ([`SmolRuntime`]), for any async request function ([`run`]) and ready-made over
//! hyper's HTTP/1 client on smol's TCP through `smol-hyper` ([`Client`]).
//!
//! `https://` works with the `rustls` feature (futures-rustls on
//! rustls' `ring` provider, Mozilla's roots). [`Client::with_tls`] takes a configuration from
//! [`TlsBuilder`] (the platform's roots, a private CA's PEM) or any rustls `ClientConfig`. A
//! TLS failure (a rejected certificate, a failed handshake) is `ErrorKind::Tls`: permanent,
//! never retried, and the error's text names the cause.
//!
//! Each attempt races its timeout and the operation's [`Abort`]; the loser is dropped, which
//! cancels the request in flight (hyper closes its connection). After an abort nothing is sent.
//!
//! ```
//! use backstop::smol::{Client, Retrier, RetryRequest};
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
//!     let done = client.run(RetryRequest::get(url)).await?;
//!     assert_eq!((done.response.status().as_u16(), done.outcome.attempts), (200, 2));
//!     let body = done.response.into_body().collect().await?.to_bytes();
//!     assert_eq!(&body[..], b"ok");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
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
