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
//! | (the root) | any | any: a [`Transport`] (one `send` per attempt; a closure is one) given to [`run`] | the [`Runtime`](runtime::Runtime) trait ([`VirtualTime`](runtime::VirtualTime) for tests) |
//!
//! Other features: `tracing` (every retry event as a `tracing` event, target `backstop`,
//! redacted, and a span per operation and per attempt with OpenTelemetry's HTTP names:
//! [`observe`]), `metrics` (every attempt and operation as series of the `metrics` facade,
//! with OpenTelemetry's HTTP names: the table is in [`Metrics`]' docs), `rustls` (TLS for the
//! clients backstop builds, and TLS failures found by type: [HTTPS](#https)). None is on by
//! default.
//!
//! Every rule lives in the sans-IO [`RetryMachine`](machine::RetryMachine) of `backstop-core`
//! ([`machine`]); [`run`] and the front doors drive it against a client, and no rule lives in
//! them. Every front door takes the caller's own request: an `http::Request<B>` ([`run`], the
//! tower layer, ureq) or reqwest's. What backstop reads besides its head travels in its
//! extensions: an [`Abort`], an [`OperationName`], a [`Policy`] for this request alone.
//!
//! ```
//! use backstop::runtime::{StdRuntime, VirtualTime};
//! use backstop::{run, Attempt, Retrier};
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
//! anything: nothing is sent. A POST or PATCH is retried only with an `Idempotency-Key`
//! ([`idempotency`]). [`run`] and ureq's `Client::run` return a [`Retried`] (the last
//! response and its [`Outcome`]), whose [`error_for_status`](Retried::error_for_status) turns
//! a 4xx or 5xx into an error that keeps both; the layer and the middleware return the
//! response with the `Outcome` in its extensions. The body is the client's, untouched.
//!
//! ## Where the rest is
//!
//! The root holds what a front door's user touches: the [`Retrier`], the [`Policy`] and its
//! builder, [`Abort`], [`OperationName`], the outcome and the errors, the budgets, hedging,
//! the origin gates, the events and [`Metrics`], and the loop [`run`] with its [`Transport`].
//! Each module holds one concept whole:
//!
//! - [`policy`]: every type a [`PolicyBuilder`] takes; [`hedging`]: a backup copy of a slow
//!   request; [`overload`]: pausing an origin, pacing the send rate;
//! - [`observe`]: the events, traces and metrics, and what is never emitted;
//! - [`classify`]: the error kinds of every front door, and overriding a class;
//! - [`idempotency`]: the `Idempotency-Key`, with which a POST opts in;
//! - [`transport`] and [`runtime`]: a client or an executor of your own;
//! - [`machine`]: the sans-IO machine, whole, to drive from a loop of your own.
//!
//! Recipes, each a doctest on the item it uses: a budget shared by threads or tasks
//! ([`Retrier::budget`]), cancelling from another thread or task ([`Abort`]), testing your own
//! retrying code on virtual time ([`VirtualTime`](runtime::VirtualTime)), draining discarded bodies
//! so that one connection carries every attempt ([`DrainLimits`](transport::DrainLimits)).
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

// The feature table's links resolve in this crate when their feature is on; without it (a
// default-features build) they point at the item on docs.rs, which documents every feature.
// (The empty line above ends the last paragraph: a link's definition cannot continue one.)
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

#[cfg(feature = "grpc")]
pub mod grpc;
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

pub mod body;
pub mod classify;
pub mod hedging;
pub mod idempotency;
pub mod observe;
pub mod overload;
pub mod policy;
pub mod runtime;
pub mod transport;
// Last: an item of the machine that a module above also holds is documented, and linked to,
// in that module (rustdoc keeps the first path it meets).
pub mod machine;

mod abort;
mod drain;
#[cfg(any(feature = "tower", feature = "reqwest"))]
mod hedge;
#[cfg(feature = "hyper")]
mod hyper_error;
mod last_origin;
mod outcome;
mod progress;
mod race;
mod random;
mod read;
mod replay;
mod request;
mod response_view;
mod retrier;
mod run;
mod thread_timer;
mod timed_out;
#[cfg(feature = "rustls")]
mod tls_error;
mod virtual_time;
mod wall_clock;

pub use abort::Abort;
#[doc(inline)]
pub use backstop_core::{
    AdaptiveRateLimiter, Backoff, Budget, BudgetConfigError, ConfigError, ErrorKind, GateConfig,
    GateConfigError, HedgeOutcome, Hedging, HedgingError, Jitter, Method, NonIdempotent, Outcome,
    Policy, PolicyBuilder, RatioBudget, RetryQuota, StatusSet, StopReason, TokenBucket,
};
/// The `http` crate whose types the requests and responses are made of, so callers name them
/// in the same version.
pub use http;
#[doc(inline)]
pub use observe::{EventKind, Metrics, RetryEvent};
pub use outcome::{Retried, RetryError};
#[doc(inline)]
pub use overload::OriginGates;
pub use read::StatusError;
pub use replay::ReplayBody;
pub use request::{Attempt, OperationName};
pub use retrier::Retrier;
pub use run::run;
/// The rustls crate of the TLS failures and of `smol::HttpService::with_tls`, so callers
/// name its types in the same version.
#[cfg(feature = "rustls")]
pub use rustls;
#[doc(inline)]
pub use transport::Transport;

/// What a front door module re-exports whole, so that its users find the common items in
/// one place: the retrier, the loop, the results and errors, the request's extensions, the
/// runtime trait and virtual time, `http`, and with the `rustls` feature `rustls`.
pub mod prelude {
    pub use crate::runtime::{Runtime, VirtualTime};
    #[cfg(feature = "rustls")]
    pub use crate::rustls;
    pub use crate::{
        http, run, Abort, Attempt, Metrics, OperationName, Policy, ReplayBody, Retried, Retrier,
        RetryError, RetryEvent, StatusError, Transport,
    };
}
