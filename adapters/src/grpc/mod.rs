//! # backstop::grpc
//!
//! Retries and hedging for tonic by gRFC A6, in one line: a tower
//! [`Layer`](tower_layer::Layer) over a tonic `Channel` (or any service of
//! `http::Request<tonic::body::Body>`), under an A6 `retryPolicy` or `hedgingPolicy`
//! ([`RetryPolicy`]), on the tower layer's loop, runtime, budgets, origin gates, hedging,
//! events, spans and metrics.
//!
//! ```
//! use backstop::grpc::{Code, RetryLayer, RetryPolicy};
//! use backstop::tokio::TokioRuntime;
//! use core::time::Duration;
//! use tower::{ServiceBuilder, ServiceExt};
//!
//! let a6 = RetryPolicy::builder()
//!     .max_attempts(4)
//!     .initial_backoff(Duration::from_millis(10))
//!     .max_backoff(Duration::from_millis(100))
//!     .backoff_multiplier(2.0)
//!     .retryable_status_codes(&[Code::Unavailable])
//!     .build()?;
//!
//! // In place of a tonic `Channel` here: a server that is UNAVAILABLE once, then OK
//! // (Trailers-Only answers).
//! let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
//! let seen = calls.clone();
//! let channel = tower::service_fn(move |_: http::Request<tonic::body::Body>| {
//!     let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
//!     let status = if n == 0 { "14" } else { "0" };
//!     let answer = http::Response::builder()
//!         .header("content-type", "application/grpc")
//!         .header("grpc-status", status)
//!         .body(tonic::body::Body::empty());
//!     async move { answer }
//! });
//!
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     // The one line: `GreeterClient::new(ServiceBuilder::new().layer(..).service(channel))`.
//!     let channel = ServiceBuilder::new()
//!         .layer(RetryLayer::new(a6, TokioRuntime::new()))
//!         .service(channel);
//!     let request = http::Request::post("http://[::1]:50051/helloworld.Greeter/SayHello")
//!         .body(tonic::body::Body::empty())?;
//!     let response = channel.oneshot(request).await?;
//!     assert_eq!(response.headers()["grpc-status"], "0");
//!     let outcome = response.extensions().get::<backstop::Outcome>().copied();
//!     assert_eq!(outcome.map(|o| o.attempts), Some(2));
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What a call goes through, by A6:
//!
//! - **Which answers are retried.** A Trailers-Only answer (its headers carry `grpc-status`)
//!   whose code the policy names. Response headers without a status commit the call: the
//!   response is returned (its messages stream to the caller) and never retried, so nothing
//!   after commitment is replayed, whatever its trailers say. An answer that is not gRPC (a
//!   proxy's `503`) has the code its HTTP status maps to (`UNAVAILABLE`).
//! - **Failures.** An attempt that may have reached the server (a reset, an early end) is
//!   `UNAVAILABLE`: retried (hedging: not fatal) only where the policy names that code (under a
//!   service config, only when every policy does); one never sent (a refused connection) is
//!   retried as A6's transparent retry is.
//! - **Pushback.** `grpc-retry-pushback-ms` on a retried answer: a non-negative integer is the
//!   exact wait before the next attempt (`DelaySource::ServerPushback`); a negative or
//!   unparsable value, or more than one, ends the call with that answer
//!   (`StopReason::ServerPushback`). See `backstop::machine::grpc::Pushback`.
//! - **`grpc-previous-rpc-attempts`** on every attempt after the first, retries and hedges.
//! - **The buffer.** The request's messages are buffered for replay up to the per-call limit
//!   ([`RetryLayer::per_rpc_buffer_limit`], 1 MiB): a unary call, or a client stream made
//!   ahead. A call over the limit, or whose stream is still being produced when it starts (a
//!   bidirectional call fed as it goes), is sent once, as is, and never retried
//!   (`StopReason::BodyNotReplayable`): waiting for such a stream could deadlock the caller.
//! - **The deadline.** The request's `grpc-timeout` (tonic's `Request::set_timeout`), else
//!   the policy's `timeout`, bounds the whole call, every attempt included.
//! - **Hedging.** Under a `hedgingPolicy` ([`RetryPolicy::hedging_builder`]) copies go
//!   `hedgingDelay` apart on the same hedging machine as the tower layer's; a code in
//!   `nonFatalStatusCodes` sends the next copy at once, any other answer wins.
//! - **Errors.** A call that ends without a response is a [`tonic::Status`]: the channel's own
//!   error as tonic reads it, `DEADLINE_EXCEEDED` past the deadline, `CANCELLED` after an
//!   [`Abort`](crate::Abort). The response carries the call's [`Outcome`](crate::Outcome).
//! - **Budgets, gates, observers.** Those of the [`Retrier`](crate::Retrier) given to
//!   [`RetryLayer::retrier`]: a [`TokenBucket`](crate::TokenBucket) is A6's retry throttle
//!   (`maxTokens`, `tokenRatio`). When something hears the events, they are named by the
//!   call's method path, and its spans (feature `tracing`) carry OpenTelemetry's RPC
//!   attributes `rpc.system` (`grpc`), `rpc.service` and `rpc.method` beside the HTTP ones
//!   (and, on an attempt answered Trailers-Only, `rpc.grpc.status_code`).
//! - **A service config.** [`RetryLayer::from_service_config`] takes each method's policy
//!   and timeout from a service config's `methodConfig`, and its `retryThrottling` as the
//!   budget ([`ServiceConfig::from_json`] refuses an invalid config with where and why).

mod body;
mod layer;
mod service_config;

pub use backstop_core::grpc::{
    parse_timeout, Code, CodeSet, HedgingPolicyBuilder, PolicyError, Pushback, RetryPolicy,
    RetryPolicyBuilder,
};
pub use body::DEFAULT_PER_RPC_BUFFER_LIMIT;
pub use layer::{Retry, RetryFuture, RetryLayer};
pub use service_config::{ServiceConfig, ServiceConfigError};
