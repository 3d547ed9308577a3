//! # backstop::tower
//!
//! backstop's retries as a tower [`Layer`](tower_layer::Layer) for any HTTP service:
//! [`RetryLayer::new(retrier)`](RetryLayer::new) in front of a hyper-util client, a tonic
//! channel's HTTP stack, or a stack of tower-http layers.
//!
//! ```
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
//!         .layer(RetryLayer::new(Retrier::default()))
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
//! [`OperationName`] there), metrics, redaction.
//!
//! - Each attempt sends a clone of the request (`B: Clone`: `Full<Bytes>`, `String`, ...) to a
//!   clone of the inner service, made ready first. Readiness is backpressure, not an
//!   attempt: it is awaited before the attempt starts, bounded by the operation's deadline
//!   (not the attempt's timeout), and a service never ready sends nothing and ends the
//!   operation at the deadline with no attempt counted. A body that cannot be cloned (a boxed
//!   stream) goes in a [`ReplayBody`], whose factory makes it afresh for each attempt.
//! - The last response is always returned, with the operation's [`Outcome`] in its
//!   extensions; an operation without a response is a [`RetryError`] whose source is the
//!   last attempt's error ([`ServiceError`]).
//! - Each attempt races the machine's attempt timeout (bounded by the deadline) on tokio's
//!   clock by default ([`TokioRuntime`]; `with_runtime` for virtual time).
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

mod body;
mod error;
mod layer;

pub use crate::tokio::TokioRuntime;
pub use crate::{http, Abort, Metrics, OperationName, Retrier, RetryError, RetryEvent};
pub use body::ReplayBody;
pub use error::{error_kind, ServiceError};
pub use layer::{Retry, RetryFuture, RetryLayer};

#[doc(no_inline)]
pub use crate::Outcome;
