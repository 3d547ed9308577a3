//! # backstop
//!
//! Safe HTTP retries: bounded, polite to servers, cancellable, observable and deterministic to
//! test. One crate, with the front doors behind features:
//!
//! | feature | what it adds |
//! |---|---|
//! | `reqwest` | [`reqwest::RetryMiddleware`], a reqwest-middleware `Middleware` |
//! | `tower` | [`tower::RetryLayer`], a tower `Layer` for HTTP services |
//! | `tokio` | [`tokio::TokioRuntime`]: the tower layer's clock and timers on `tokio::time` |
//! | `smol` | [`smol::SmolRuntime`] (async-io timers) and [`smol::HttpService`], a minimal pooled HTTP/1 service over smol-hyper |
//! | `ureq` | [`ureq::Client`], blocking retries over ureq 3 |
//! | `tracing` | every retry event as a `tracing` event |
//! | `json` | events and metrics as JSON lines |
//! | `rustls` | TLS for the clients backstop builds, and TLS failures found by type |
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
#[cfg(feature = "hyper")]
mod hyper_error;
mod observe;
mod outcome;
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
pub use observe::redact::redact_uri;
pub use observe::Observer;
pub use outcome::{Retried, RetryError};
pub use progress::{mark_connected, mark_connecting};
pub use read::StatusError;
pub use replay::ReplayBody;
pub use request::{
    ensure_idempotency_key, needs_idempotency_key, new_idempotency_key, Attempt, OperationName,
    IDEMPOTENCY_KEY,
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
