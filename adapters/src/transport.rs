//! What a client supplies to the retry loop: one attempt, its error's kind, and how to drain
//! a discarded body.
//!
//! Rule: the loop ([`run`](crate::run)) is written once, over this small trait; a front door
//! is an implementation of it, and any closure that makes one attempt is one too.
//!
//! [`run`](crate::run) drives a [`RetryMachine`](crate::machine::RetryMachine) against any
//! [`Transport`] (a client, or a closure that makes one attempt): it turns each decision into an
//! action (send, wait, return, give up), races every attempt against its timeout and an
//! [`Abort`](crate::Abort), replays the request body ([`ReplayBody`] for one that cannot be
//! cloned), keeps one `Idempotency-Key` across attempts, releases a discarded response before the
//! next attempt (reading its body to its end when it is small and quick, [`Transport::drain`], so
//! that the connection carries the next attempt: [`DrainLimits`]), and reports every attempt, wait
//! and outcome to the observers (a callback, [`Metrics`](crate::Metrics), and `tracing` under the
//! `tracing` feature).
//!
//! A front door supplies only what differs between executors and clients, quinn-style:
//!
//! - a [`Runtime`](crate::runtime::Runtime): its clock and its sleep (`ureq` blocks the thread,
//!   [`StdRuntime`](crate::runtime::StdRuntime); `smol` uses `async-io` timers, `tokio` uses
//!   `tokio::time`);
//! - its HTTP client, as the [`Transport`] given to [`run`](crate::run): one attempt, the mapping
//!   of the client's errors to an [`ErrorKind`], and how to drain a discarded body.
//!
//! No retry rule lives here or in a front door: every rule is the machine's.
//!
//! Written once for the front doors, by feature:
//!
//! - always: [`connect_error_kind`](crate::classify::connect_error_kind) for a failure before the
//!   request was sent (DNS through [`ResolveError`](crate::classify::ResolveError), refused,
//!   connect time-out, TLS), and [`error_chain`](crate::classify::error_chain), which also steps
//!   into the error an `io::Error` carries; [`mark_connecting`] and [`mark_connected`], with which
//!   an async client's connector tells the loop whether an attempt its timer ends was still
//!   connecting (`ConnectTimeout`, never sent) or had a connection (`Timeout`);
//! - `smol`, `tower`: `exchange_error_kind`, hyper's errors once connected;
//! - `rustls`: `TlsFailure` finds and names a TLS failure in an error chain, and with this feature
//!   [`connect_error_kind`](crate::classify::connect_error_kind) and `exchange_error_kind` say
//!   [`ErrorKind::Tls`]: permanent, never retried. TLS itself is configured with each client's own
//!   API (each front door's docs trust a private CA); backstop builds no TLS configuration.

use core::future::Future;

use crate::classify::{default_error_kind, ErrorKind};

pub use crate::abort::HookGuard;
pub use crate::drain::{drain_body, DrainLimits};
pub use crate::progress::{mark_connected, mark_connecting};
pub use crate::replay::ReplayBody;
pub use crate::request::{Attempt, AttemptNumber};
pub use crate::timed_out::AttemptTimedOut;

/// One client, as the retry loop drives it.
///
/// `B` is the request body's type (each attempt's [`Attempt::request`] is an
/// `http::Request<B>`). Only [`send`](Self::send) is required; a closure `FnMut(Attempt<B>)
/// -> impl Future<Output = Result<http::Response<R>, E>>` is a `Transport` with every other
/// method at its default (name its argument's type, `|attempt: Attempt<Bytes>|`, when the
/// closure reads it: `run` takes any `Transport`, so it cannot tell the compiler).
///
/// ```
/// use backstop::runtime::StdRuntime;
/// use backstop::transport::DrainLimits;
/// use backstop::{run, Attempt, ErrorKind, Retrier};
/// use backstop::runtime::VirtualTime;
/// use backstop::Transport;
///
/// /// A client whose every error happens before the request leaves.
/// struct Queue;
///
/// impl<B> Transport<B> for Queue {
///     type Body = ();
///     type Error = std::io::Error;
///
///     async fn send(&mut self, _: Attempt<B>) -> Result<http::Response<()>, std::io::Error> {
///         Err(std::io::Error::other("queue full"))
///     }
///
///     fn error_kind(&self, _: &std::io::Error) -> ErrorKind {
///         ErrorKind::ConnectionRefused // never sent: retried for any method
///     }
/// }
///
/// let result = futures_lite::future::block_on(run(
///     &Retrier::default(),
///     &VirtualTime::new(StdRuntime::new()),
///     http::Request::post("http://127.0.0.1:1/orders").body(())?,
///     Queue,
/// ));
/// let Err(backstop::RetryError::Failed { kind, outcome, .. }) = result else { panic!() };
/// assert_eq!((kind, outcome.attempts), (ErrorKind::ConnectionRefused, 4));
/// # Ok::<(), http::Error>(())
/// ```
pub trait Transport<B = bytes::Bytes> {
    /// The response body.
    type Body;
    /// The client's error.
    type Error: std::error::Error + 'static;

    /// Performs one attempt: one HTTP exchange up to the response head. The loop races it
    /// against the attempt's timeout and the operation's abort, and drops the future when
    /// either wins, which cancels the request in flight.
    fn send(
        &mut self,
        attempt: Attempt<B>,
    ) -> impl Future<Output = Result<http::Response<Self::Body>, Self::Error>>;

    /// The kind of the client's error (default: [`default_error_kind`], which reads its
    /// chain: a TLS failure, a host that did not resolve, the socket's I/O error). The
    /// retrier's override, if any, then picks the class.
    fn error_kind(&self, error: &Self::Error) -> ErrorKind {
        default_error_kind(error)
    }

    /// Reads a discarded response's body to its end, so that the client can send the next
    /// attempt on the same connection (default: drop it, which closes its connection). It
    /// reads at most `limits.max_bytes()` (see [`drain_body`] for any
    /// `http_body::Body`); the loop races it against `limits.max_time()` and the abort and
    /// drops the body when either wins. A blocking drain, which completes within the loop's
    /// first poll of it, must bound its own time by `max_time`.
    fn drain(&mut self, body: Self::Body, limits: DrainLimits) -> impl Future<Output = ()> {
        let _ = limits;
        drop(body);
        core::future::ready(())
    }

    /// Resolves when the client can take the next attempt (default: at once): a `tower`
    /// service's `poll_ready`, whose ready service the implementation keeps for `send`.
    ///
    /// Readiness is backpressure, not an attempt: the wait for it is not timed by the
    /// attempt's timeout, not counted in [`Outcome::attempts`](crate::Outcome), and sends
    /// nothing. It is bounded by the operation's deadline and ended by the abort: when either
    /// comes first, the future is dropped and the operation ends, with reason `deadline` or
    /// `aborted`. A readiness that fails is `send`'s to return, as the attempt's error.
    fn ready(&mut self) -> impl Future<Output = ()> {
        core::future::ready(())
    }
}

impl<F, Fut, B, R, E> Transport<B> for F
where
    F: FnMut(Attempt<B>) -> Fut,
    Fut: Future<Output = Result<http::Response<R>, E>>,
    E: std::error::Error + 'static,
{
    type Body = R;
    type Error = E;

    fn send(&mut self, attempt: Attempt<B>) -> impl Future<Output = Result<http::Response<R>, E>> {
        self(attempt)
    }
}
