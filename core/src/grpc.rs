//! gRPC's retry rules (gRFC A6) as plain data: the status codes, the server's pushback, and
//! the `retryPolicy` and `hedgingPolicy` validated into a [`Policy`](crate::Policy).
//!
//! Rule (gRFC A6): a call is retried only before it is committed, on a Trailers-Only answer
//! (the response headers carry `grpc-status`) whose code the policy names; the server's
//! `grpc-retry-pushback-ms` sets the next wait exactly or stops the retries; every retry and
//! hedge carries `grpc-previous-rpc-attempts`; a [`TokenBucket`](crate::TokenBucket) is A6's
//! retry throttle. An adapter reads the answer's code ([`Code::from_bytes`]), tells the machine
//! its [`class`](RetryPolicy::class) and [`Pushback`] on a [`Response`](crate::Response), and
//! the machines do the rest.
//!
//! ```
//! use backstop_core::grpc::{Code, Pushback, RetryPolicy};
//! use backstop_core::{Decision, DelaySource, Event, Instant, Method, Request, Response, RetryMachine};
//! use core::time::Duration;
//! use rand_core::SeedableRng;
//!
//! let a6 = RetryPolicy::builder()
//!     .max_attempts(3)
//!     .initial_backoff(Duration::from_millis(100))
//!     .max_backoff(Duration::from_secs(1))
//!     .backoff_multiplier(2.0)
//!     .retryable_status_codes(&[Code::ResourceExhausted])
//!     .build()?;
//! let rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
//! let now = Instant::ZERO;
//! let mut machine = RetryMachine::new(a6.policy(), Request::new(Method::Post), rng, now);
//! assert!(matches!(machine.poll(now), Decision::Send { .. }));
//! machine.handle(now, Event::AttemptStarted)?;
//! // A Trailers-Only RESOURCE_EXHAUSTED with `grpc-retry-pushback-ms: 250`.
//! let answer = Response::new(200)
//!     .class(a6.class(Code::from_bytes(b"8")))
//!     .pushback(Pushback::parse(b"250"));
//! machine.handle(now, Event::Response(answer))?;
//! match machine.poll(now) {
//!     Decision::Wait { until, reason, .. } => {
//!         assert_eq!(until, Instant::from_millis(250)); // exactly the server's wait
//!         assert_eq!(reason.source, DelaySource::ServerPushback);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod code;
mod pushback;
mod retry_policy;
mod timeout;

pub use code::{Code, CodeSet};
pub use pushback::Pushback;
pub use retry_policy::{HedgingPolicyBuilder, PolicyError, RetryPolicy, RetryPolicyBuilder};
pub use timeout::{encode_timeout, parse_timeout, TimeoutValue};

/// The request field that carries how many attempts went before this one (gRFC A6): absent on
/// the first attempt, `1` on the first retry or hedge, and so on.
pub const PREVIOUS_RPC_ATTEMPTS: &str = "grpc-previous-rpc-attempts";

/// The response field of the server's pushback ([`Pushback`]).
pub const RETRY_PUSHBACK_MS: &str = "grpc-retry-pushback-ms";

/// The response field of a call's status: in the trailers, or in the headers of a
/// Trailers-Only answer (the only kind A6 retries).
pub const STATUS: &str = "grpc-status";

/// The request field of the call's deadline ([`parse_timeout`]).
pub const TIMEOUT: &str = "grpc-timeout";

#[cfg(test)]
mod tests;
