//! # backstop
//!
//! Safe HTTP retries: bounded, polite to servers, cancellable, observable and deterministic to
//! test. One crate, with the front doors behind features of the same names:
//!
//! | front door (feature) | runtime | ready-made HTTP client | clock and sleep |
//! |---|---|---|---|
//! | [`reqwest`] | tokio | your reqwest 0.13 client, as a reqwest-middleware 0.5 [`reqwest::RetryMiddleware`] | tokio's, as `tokio` |
//! | [`tower`] | the one given to [`tower::RetryLayer::new`] | any tower HTTP service (a hyper-util client, tower-http layers, smol's `HttpService`) | the runtime's |
//! | [`ureq`] | blocking, the calling thread | ureq 3.5, through [`ureq::Client`] | `std::time::Instant`; parks until the deadline or an abort |
//! | [`tokio`] | tokio | none: [`tokio::TokioRuntime`] is the tower layer's, the reqwest middleware's and [`run`]'s runtime | `tokio::time::Instant` (so `tokio::time::pause()` works) |
//! | [`smol`] | smol | [`smol::HttpService`]: hyper 1 over smol's TCP (`smol-hyper`), pooled | [`smol::SmolRuntime`]: `async_io::Timer` |
//! | (the root) | any | any: a [`Transport`] (one `send` per attempt; a closure is one) given to [`run`] | the [`Runtime`] trait ([`VirtualTime`] for tests) |
//!
//! Other features: `tracing` (every retry event as a `tracing` event, target `backstop`,
//! redacted, and a span per operation and per attempt with OpenTelemetry's HTTP names:
//! [Traces](#traces-feature-tracing)), `metrics` (every attempt and operation as series of the
//! `metrics` facade, with OpenTelemetry's HTTP names: the table is in [`Metrics`]' docs),
//! `rustls` (TLS for the clients backstop builds, and TLS failures found by type).
//! None is on by default. (For JSON lines, format the [`RetryEvent`]s an
//! [`on_event`](Retrier::on_event) observer receives with your own serializer.)
//!
//! Every rule lives in [`backstop-core`](backstop_core)'s sans-IO [`RetryMachine`], which this
//! crate re-exports at its root (`backstop::Policy`, `backstop::StopReason`, …).
//!
//! Every front door takes the caller's own request: an `http::Request<B>` ([`run`], the tower
//! layer, ureq) or reqwest's. What backstop reads besides its head travels in its extensions:
//! an [`Abort`], an [`OperationName`], a [`Policy`] for this request alone.
//!
//! [`run`] drives a [`RetryMachine`] against any [`Transport`] (a client, or a closure that
//! makes one attempt): it turns each
//! decision into an action (send, wait, return, give up), races every attempt against its
//! timeout and an [`Abort`], replays the request body ([`ReplayBody`] for one that cannot be
//! cloned), keeps one `Idempotency-Key` across
//! attempts, releases a discarded response before the next attempt (reading its body to its
//! end when it is small and quick, [`Transport::drain`], so that the connection carries the
//! next attempt: [`DrainLimits`]), and reports every attempt,
//! wait and outcome to the observers (a callback, [`Metrics`], and `tracing` under the
//! `tracing` feature).
//!
//! A front door supplies only what differs between executors and clients, quinn-style:
//!
//! - a [`Runtime`]: its clock and its sleep (`ureq` blocks the thread, [`StdRuntime`]; `smol`
//!   uses `async-io` timers, `tokio` uses `tokio::time`);
//! - its HTTP client, as the [`Transport`] given to [`run`]: one attempt, the mapping of the
//!   client's errors to an [`ErrorKind`], and how to drain a discarded body.
//!
//! No retry rule lives here or in a front door: every rule is the machine's.
//!
//! Written once for the front doors, by feature:
//!
//! - always: [`connect_error_kind`] for a failure before the request was sent (DNS through
//!   [`ResolveError`], refused, connect time-out, TLS), and [`error_chain`], which also steps
//!   into the error an `io::Error` carries; [`mark_connecting`] and [`mark_connected`], with
//!   which an async client's connector tells the loop whether an attempt its timer ends was
//!   still connecting (`ConnectTimeout`, never sent) or had a connection (`Timeout`);
//! - `smol`, `tower`: `exchange_error_kind`, hyper's errors once connected;
//! - `rustls`: `TlsFailure` finds and names a TLS failure in an error chain, and with this
//!   feature [`connect_error_kind`] and `exchange_error_kind` say [`ErrorKind::Tls`]:
//!   permanent, never retried. TLS itself is configured with each client's own API (each
//!   front door's docs trust a private CA); backstop builds no TLS configuration.
//!
//! ```
//! use backstop::{run, Attempt, Retrier, StdRuntime, VirtualTime};
//!
//! let retrier = Retrier::new(backstop::Policy::default());
//! let request = http::Request::get("http://127.0.0.1:1/").body(())?;
//! let mut statuses = [503_u16, 200].into_iter();
//! // An attempt function that answers from a list instead of the network, on virtual time.
//! let result = futures_lite::future::block_on(run(
//!     &retrier,
//!     &VirtualTime::new(StdRuntime::new()),
//!     request,
//!     |_attempt: Attempt<()>| {
//!         let status = statuses.next().unwrap_or(500);
//!         async move {
//!             let response = http::Response::builder().status(status).body(());
//!             response.map_err(std::io::Error::other)
//!         }
//!     },
//! ))?;
//! assert_eq!(result.response.status(), 200);
//! assert_eq!(result.outcome.attempts, 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Requests
//!
//! A URL or header that does not convert is `http`'s builder error, before backstop sees
//! anything: nothing is sent. A POST or PATCH opts in to retries with an `Idempotency-Key`:
//! [`new_idempotency_key`] makes one (a UUID v4), [`ensure_idempotency_key`] adds one where
//! there is none, as the layer's and the middleware's `generate_idempotency_key()` do. [`run`]
//! and ureq's `Client::run` return a [`Retried`] (the last response and its [`Outcome`]), whose
//! [`error_for_status`](Retried::error_for_status) turns a 4xx or 5xx into an error that keeps
//! both; the layer and the middleware return the response with the `Outcome` in its extensions.
//! The body is the client's, untouched.
//!
//! ```
//! # #[cfg(feature = "ureq")] {
//! # use std::io::{Read, Write};
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("http://{}/orders", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     for (stream, answer) in listener.incoming().zip([
//! #         "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
//! #         "HTTP/1.1 201 Created\r\nContent-Length: 8\r\nConnection: close\r\n\r\n{\"id\":7}",
//! #     ]) {
//! #         let mut stream = stream.unwrap();
//! #         let (mut seen, mut buf) = (Vec::new(), [0; 4096]);
//! #         while !seen.ends_with(b"}") { // the whole request, body included
//! #             let n = stream.read(&mut buf).unwrap();
//! #             if n == 0 { break }
//! #             seen.extend_from_slice(&buf[..n]);
//! #         }
//! #         let _ = stream.write_all(answer.as_bytes());
//! #     }
//! # });
//! use backstop::{OperationName, Policy};
//! use backstop::ureq::{Client, Retrier};
//!
//! // A header that does not convert is `http`'s error: nothing reaches backstop or the server.
//! let bad = http::Request::post(&url)
//!     .header("authorization", "Bearer s3cret\r\nX-Injected: yes") // a newline: invalid
//!     .body(());
//! assert!(bad.is_err());
//!
//! let mut request = http::Request::post(&url)
//!     .header("content-type", "application/json")
//!     .header("idempotency-key", backstop::new_idempotency_key()) // the opt-in
//!     .body(serde_json::to_vec(&serde_json::json!({ "sku": 42 }))?)?;
//! request.extensions_mut().insert(OperationName::new("create-order"));
//! request.extensions_mut().insert(Policy::builder().max_attempts(2).build()?); // this request's
//! let mut done = Client::new(Retrier::default())
//!     .run(request)?
//!     .error_for_status()?; // "HTTP 503 Service Unavailable after 2 attempts (stopped: attempts)"
//! let order: serde_json::Value = serde_json::from_str(&done.response.body_mut().read_to_string()?)?;
//! assert_eq!((order["id"].as_u64(), done.outcome.attempts), (Some(7), 2));
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Recipes, each a doctest on the item it uses: a budget shared by threads or tasks
//! ([`Retrier::budget`]), cancelling from another thread or task ([`Abort`]), testing your own
//! retrying code on virtual time ([`VirtualTime`]), draining discarded bodies so that one
//! connection carries every attempt ([`DrainLimits`]).
//!
//! ## Hedging
//!
//! Retries fix errors; hedging fixes slowness. Under a policy with
//! [`PolicyBuilder::hedging`](crate::PolicyBuilder::hedging), the tower layer and the reqwest
//! middleware send a second copy of a request that has not answered within the delay (fixed,
//! or adaptive: a percentile of the latencies the retrier's [`LatencyTracker`] saw), take the
//! first final answer and drop the other copies. Dropping a copy cancels its request: on
//! HTTP/1.1 its connection is closed (the server may still do the work), on HTTP/2 its stream
//! is reset. Only a request whose method may be sent again by itself, with a body that can be
//! sent again, is hedged ([`Policy::hedges`]): a POST or PATCH with an `Idempotency-Key` is
//! retried instead, because its server answers a concurrent repeat of the key with 409
//! Conflict, which would win over the copy that did the work; every copy after
//! the first is paid for by the retrier's [`budget`](Retrier::budget), so retries and hedges
//! share one limit. The response's extensions hold a [`HedgeOutcome`] (which copy won, how
//! many were cancelled or suppressed) beside its [`Outcome`]; the events report each copy
//! ([`EventKind::CopySent`], [`EventKind::CopyCancelled`]). [`run`] and blocking ureq do not
//! hedge (a [`Transport`] and a ureq call carry one request at a time): they retry under the
//! same policy's retry settings.
//!
//! ```
//! # #[cfg(all(feature = "tower", feature = "tokio"))] {
//! use backstop::tokio::TokioRuntime;
//! use backstop::tower::RetryLayer;
//! use backstop::{HedgeOutcome, Hedging, Policy, Retrier};
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use std::time::Duration;
//! use tower::{ServiceBuilder, ServiceExt};
//! # use std::io::{Read, Write};
//! # let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! # let url = format!("http://{}/report", listener.local_addr()?);
//! # std::thread::spawn(move || {
//! #     for (i, stream) in listener.incoming().take(2).enumerate() {
//! #         let mut stream = stream.unwrap();
//! #         let mut buf = [0; 1024];
//! #         let _ = stream.read(&mut buf);
//! #         // The first copy never gets an answer: its stream stays open, unanswered.
//! #         if i == 0 { std::mem::forget(stream); continue }
//! #         let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfast");
//! #     }
//! # });
//!
//! // A second copy after 50 ms without an answer.
//! let policy = Policy::builder()
//!     .hedging(Hedging::fixed(Duration::from_millis(50)))
//!     .build()?;
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
//!         .build_http::<Full<Bytes>>();
//!     let client = ServiceBuilder::new()
//!         .layer(RetryLayer::new(Retrier::new(policy), TokioRuntime::new()))
//!         .service(http);
//!     let response = client.oneshot(http::Request::get(&url).body(Full::default())?).await?;
//!     let hedged = *response.extensions().get::<HedgeOutcome>().expect("hedged");
//!     assert_eq!((hedged.winner, hedged.cancelled), (Some(2), 1));
//!     assert_eq!(response.into_body().collect().await?.to_bytes(), "fast");
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Overload control past one operation
//!
//! A `Retry-After` on a 429 or 503 says how long the *service* is unavailable, not one
//! request. With [`Retrier::origin_gates`] the retrier keeps an [`OriginGate`] per origin
//! ([`OriginGates`]): such an answer closes it, every new operation to that origin waits for
//! the reopening (or gives up with `origin_paused` when that is past its deadline, or at once
//! under [`fail_fast_when_paused`](crate::PolicyBuilder::fail_fast_when_paused)), retries
//! already pending are floored at it, and the reopening is half-open: one probe goes first.
//! With [`Retrier::rate_limiter`] an [`AdaptiveRateLimiter`] (AWS's adaptive retry mode: a
//! CUBIC token bucket, off until the first throttle) paces every attempt of every operation.
//! Both are consulted by the machine before each attempt, through every front door, and
//! before each copy of a hedged operation: a backup is not sent to a paused origin, and
//! goes out at the later of its hedging delay and the reopening. The events say when a gate
//! closes or reopens ([`EventKind::GateClosed`], [`EventKind::GateReopened`]), when the
//! limiter turns on ([`EventKind::RateLimiterEnabled`]), and why an operation waited
//! ([`DelaySource::OriginPaused`], [`DelaySource::RateLimited`]).
//!
//! ```
//! # #[cfg(feature = "ureq")] {
//! use backstop::{AdaptiveRateLimiter, GateConfig, OriginGates, Retrier};
//! use std::sync::Arc;
//!
//! let retrier = Retrier::default()
//!     .origin_gates(Arc::new(OriginGates::new(GateConfig::new())?))
//!     .rate_limiter(Arc::new(AdaptiveRateLimiter::new()));
//! // Every operation of this client (and of its clones) shares the gates and the limiter.
//! let client = backstop::ureq::Client::new(retrier);
//! # drop(client);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## HTTPS
//!
//! TLS is the client's, and so is its configuration: backstop builds none. With the `rustls`
//! feature the clients backstop makes speak `https://` on rustls' `ring` provider (no OpenSSL,
//! no cmake), trusting Mozilla's roots: ureq's own rustls stack ([`ureq`]), futures-rustls and
//! the `webpki-roots` crate ([`smol::HttpService`]). Under the tower layer hyper-util speaks it
//! through hyper-rustls (`with_webpki_roots()` for Mozilla's), reqwest through its own. Each
//! is configured with its own API, and the module docs of [`ureq`], [`smol`], [`reqwest`] and
//! [`tower`] each trust a private CA in one example. For anything else (client certificates,
//! pinning, another crypto provider, a proxy), build the client's TLS configuration as its own
//! docs say.
//!
//! ## Errors: one kind per failure, on every front door
//!
//! The mapping is written once ([`connect_error_kind`] before the request is sent,
//! `exchange_error_kind` after, `find_tls_error` and [`ResolveError`] for ureq's errors); a
//! front door only says which phase failed. [`Retrier::classify`] overrides the class.
//!
//! | failure | kind (every front door) | class |
//! |---|---|---|
//! | host name does not resolve ([`ResolveError`]; under reqwest and tower, hyper-util's `dns error`) | `Dns` | not sent |
//! | TCP connection refused | `ConnectionRefused` | not sent |
//! | any other connect failure: unreachable, a reset or an end of file during the TLS handshake, a connect error not recognised | as the first telling `io::Error` says, else `Other` | maybe sent (an error not recognised is never taken for one that did not send) |
//! | TCP connect timed out (ureq's connect timeout; the attempt timer while smol's `HttpService` is still connecting; reqwest's `connect_timeout` or hyper-util's `set_connect_timeout`, which need one below the attempt timeout: without it a stalled connect there is `Timeout`) | `ConnectTimeout` | not sent |
//! | certificate rejected (unknown issuer, expired, another host's name, revoked), handshake refused, no common protocol version, any other `rustls::Error`; a certificate another TLS stack rejected, found by its text | `Tls` | permanent, never retried |
//! | URI without a host, a relative URI, a scheme the client does not speak (`ftp://`; `https` without TLS), a port out of range | `InvalidRequest` | permanent, nothing sent |
//! | connected, then reset / broken pipe / EOF | `ConnectionReset` / `BrokenPipe` / `UnexpectedEof` | maybe sent |
//! | connected, then a response cut short or unparsable | `UnexpectedEof` / `Protocol` | maybe sent |
//!
//! A TLS failure's text names its cause and nothing secret:
//! `TLS handshake failed: certificate rejected: UnknownIssuer`.
//!
//! ## Observability
//!
//! Each attempt, wait and outcome is a [`RetryEvent`] (operation name, method, URL without
//! userinfo, query or fragment, attempt, status or error kind and class, reason, the delay
//! actually slept, total elapsed, final result), delivered to a callback
//! ([`Retrier::on_event`]) and, with the `tracing` feature, to `tracing`: an operation that
//! succeeded at its first attempt logs at DEBUG only; a wait before a retry and an operation
//! that needed retries are INFO; an operation that gave up is WARN. [`Metrics`] counts the
//! share of operations that retried, mean attempts, successes after a retry, operations that
//! hit a limit, and 429/503/504 responses; with the `metrics` feature, the same facts go to the
//! `metrics` facade's recorder as OpenTelemetry-named series. Bodies, query strings, userinfo and every header
//! (`Authorization`, `Cookie`, `Proxy-Authorization`, the raw `Idempotency-Key`) are never
//! emitted; the logs of your own hyper-util or reqwest client are yours (hyper-util's pool logs
//! its key, userinfo included, at debug level).
//!
//! ### Traces (feature `tracing`)
//!
//! Each operation is a span, and each attempt (or hedged copy) a span under it, with the names
//! of OpenTelemetry's HTTP client conventions, so that `tracing-opentelemetry` exports them as
//! any instrumented client's. Both are INFO, target `backstop`, and are made only when a
//! subscriber wants them. The tracing names are `operation` and `attempt`; `otel.name` names
//! both after the method, as the conventions name a client span. A dashboard receives, for a
//! GET answered 503 (`Retry-After: 0`) then 200:
//!
//! ```text
//! GET  (internal)  http.request.method=GET  server.address=127.0.0.1  server.port=8080
//!   url.full=http://127.0.0.1:8080/items           (no query, no userinfo, no fragment)
//!   backstop.operation=list-items  backstop.attempts=2  backstop.stop_reason=final_status
//!   http.response.status_code=200
//!   event "retrying after a wait"  next_attempt=2 delay_us=0 cause="status 503" source="retry_after"
//!   event "operation finished"     attempts=2 reason="final_status" elapsed_us=…
//! ├─ GET  (client)  http.request.method=GET  server.address=127.0.0.1  server.port=8080
//! │    url.full=http://127.0.0.1:8080/items
//! │    http.response.status_code=503  error.type=503  status=Error
//! └─ GET  (client)  … the same request attributes …  http.request.resend_count=1
//!      http.response.status_code=200
//! ```
//!
//! An attempt that failed without a response has `error.type` set to its
//! [`ErrorKind`] (`connection_refused`, `timeout`, …); a hedged copy cancelled in flight has
//! `backstop.cancelled` (`superseded`, `fatal`, `aborted`). The events go to the operation's span as span events
//! at their own levels (the waits are INFO). Each attempt's request also carries its
//! [`AttemptNumber`] in its extensions, for a layer below backstop to record
//! `http.request.resend_count` on its own spans.
//!
//! ```
//! use backstop::{Metrics, Retrier};
//!
//! let metrics = Metrics::new();
//! let retrier = Retrier::default()
//!     .on_event(|event| eprintln!("{event}")) // one redacted line per event
//!     .metrics(&metrics);
//! # drop(retrier);
//! let m = metrics.snapshot();
//! println!("retried {:.0} %, mean attempts {:.2}", m.retried_share() * 100.0, m.mean_attempts());
//! ```

// The feature table's links resolve in this crate when their feature is on; without it (a
// default-features build) they point at the item on docs.rs, which documents every feature.
#![cfg_attr(
    not(feature = "reqwest"),
    doc = concat!("[`reqwest::RetryMiddleware`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/reqwest/struct.RetryMiddleware.html")
)]
#![cfg_attr(
    not(feature = "tower"),
    doc = concat!("[`tower::RetryLayer`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/tower/struct.RetryLayer.html")
)]
#![cfg_attr(
    not(feature = "tokio"),
    doc = concat!("[`tokio::TokioRuntime`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/tokio/struct.TokioRuntime.html")
)]
#![cfg_attr(
    not(feature = "smol"),
    doc = concat!("[`smol::SmolRuntime`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/smol/struct.SmolRuntime.html")
)]
#![cfg_attr(
    not(feature = "smol"),
    doc = concat!("[`smol::HttpService`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/smol/struct.HttpService.html")
)]
#![cfg_attr(
    not(feature = "ureq"),
    doc = concat!("[`ureq::Client`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/ureq/struct.Client.html")
)]
#![cfg_attr(
    not(feature = "reqwest"),
    doc = concat!("[`reqwest`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/reqwest/index.html")
)]
#![cfg_attr(
    not(feature = "tower"),
    doc = concat!("[`tower`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/tower/index.html")
)]
#![cfg_attr(
    not(feature = "tower"),
    doc = concat!("[`tower::RetryLayer::new`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/tower/struct.RetryLayer.html#method.new")
)]
#![cfg_attr(
    not(feature = "tokio"),
    doc = concat!("[`tokio`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/tokio/index.html")
)]
#![cfg_attr(
    not(feature = "smol"),
    doc = concat!("[`smol`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/smol/index.html")
)]
#![cfg_attr(
    not(feature = "ureq"),
    doc = concat!("[`ureq`]: https://docs.rs/backstop/", env!("CARGO_PKG_VERSION"), "/backstop/ureq/index.html")
)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// The sans-IO machine, whole; its items are also at this crate's root.
pub use backstop_core;
#[doc(inline)]
pub use backstop_core::*;

#[cfg(feature = "reqwest")]
pub mod reqwest;
#[cfg(feature = "smol")]
pub mod smol;
#[cfg(feature = "tokio")]
pub mod tokio;
#[cfg(feature = "tower")]
pub mod tower;
#[cfg(feature = "ureq")]
pub mod ureq;

mod abort;
mod classify;
mod drain;
#[cfg(any(feature = "tower", feature = "reqwest"))]
mod hedge;
#[cfg(feature = "hyper")]
mod hyper_error;
mod observe;
mod outcome;
mod overload;
mod progress;
mod read;
mod replay;
mod request;
mod response_view;
mod retrier;
mod run;
mod runtime;
mod thread_timer;
mod timed_out;
#[cfg(feature = "rustls")]
mod tls_error;
mod transport;
mod virtual_time;
mod wall_clock;

pub use abort::{Abort, HookGuard};
pub use classify::{
    connect_error_kind, default_error_kind, error_chain, find_error, find_io_error, io_error_kind,
    is_unservable_uri, write_tls_cause, ResolveError, UnsupportedUri,
};
pub use drain::{drain_body, DrainLimits};
/// The `http` crate whose types the requests and responses are made of, so callers name them
/// in the same version.
pub use http;
#[cfg(feature = "hyper")]
pub use hyper_error::exchange_error_kind;
pub use observe::events::{EventKind, RetryEvent};
pub use observe::metrics::{Metrics, MetricsSnapshot};
pub use observe::redact::{redact_uri, RedactedUri};
pub use observe::Observer;
pub use outcome::{Retried, RetryError};
pub use overload::OriginGates;
pub use progress::{mark_connected, mark_connecting};
pub use read::StatusError;
pub use replay::ReplayBody;
pub use request::{
    ensure_idempotency_key, needs_idempotency_key, new_idempotency_key, Attempt, AttemptNumber,
    OperationName, IDEMPOTENCY_KEY,
};
pub use response_view::{ClassifyResponse, ResponseView};
pub use retrier::{ClassifyOverride, Retrier};
pub use run::run;
pub use runtime::{Epoch, Runtime, Sleep, StdRuntime};
/// The rustls crate of the TLS failures and of `smol::HttpService::with_tls`, so callers
/// name its types in the same version.
#[cfg(feature = "rustls")]
pub use rustls;
pub use timed_out::AttemptTimedOut;
#[cfg(feature = "rustls")]
pub use tls_error::{find_tls_error, TlsFailure};
pub use transport::Transport;
pub use virtual_time::VirtualTime;
pub use wall_clock::{SkewedClock, SystemClock, WallClock};

/// What a front door module re-exports whole, so that its users find the common items in
/// one place: the retrier, the loop, the results and errors, the request's extensions, the
/// runtime trait and virtual time, `http`, and with the `rustls` feature `rustls`.
pub mod prelude {
    #[cfg(feature = "rustls")]
    pub use crate::rustls;
    pub use crate::{
        http, run, Abort, Attempt, Metrics, OperationName, Policy, ReplayBody, Retried, Retrier,
        RetryError, RetryEvent, Runtime, StatusError, Transport, VirtualTime,
    };
}
