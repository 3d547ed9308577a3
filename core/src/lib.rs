//! # backstop-core
//!
//! A sans-IO, `no_std`, allocation-free state machine that makes HTTP retries safe: bounded,
//! polite to servers, cancellable, observable, and deterministic to test.
//!
//! [`RetryMachine`] takes [`Event`]s (attempt started, response, network error, time passed,
//! abort) and returns [`Decision`]s (send attempt N with its timeout, wait until T, return this
//! response, give up), each with its reason. Time ([`Instant`]) and randomness (a `rand_core`
//! 0.10 [`Rng`](rand_core::Rng)) are inputs, so every decision is reproducible. The
//! [`backstop`](https://docs.rs/backstop) crate drives it against real HTTP clients (reqwest,
//! tower services, hyper, ureq) and re-exports this crate whole as `backstop::machine`, with
//! the items a front door's user touches (the policy, the outcome, the budgets) at its root.
//!
//! ```
//! use backstop_core::{Decision, Event, Instant, Method, Policy, Request, Response, RetryMachine};
//! use core::time::Duration;
//! use rand_core::SeedableRng;
//!
//! let policy = Policy::builder().max_attempts(3).build()?;
//! let rng = rand_pcg::Pcg64Mcg::seed_from_u64(42);
//! let mut now = Instant::ZERO;
//! let mut machine = RetryMachine::new(policy, Request::new(Method::Get), rng, now);
//! let mut statuses = [503, 503, 200].into_iter();
//! let outcome = loop {
//!     match machine.poll(now) {
//!         Decision::Send { .. } => {
//!             machine.handle(now, Event::AttemptStarted)?;
//!             let status = statuses.next().unwrap_or(200);
//!             now = now.saturating_add(Duration::from_millis(20)); // the request takes 20 ms
//!             machine.handle(now, Event::Response(Response::new(status).retry_after(b"0.1")))?;
//!         }
//!         Decision::Wait { until, .. } => now = until, // sleep (virtual time here)
//!         Decision::Return(outcome) | Decision::GiveUp(outcome) => break outcome,
//!         _ => unreachable!("no other decision while this loop drives the machine"),
//!     }
//! };
//! assert_eq!(outcome.attempts, 3);
//! assert!(outcome.elapsed >= Duration::from_millis(260));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The RNG is an input, so its trait is part of the API: the machine takes any `rand_core` 0.10
//! `Rng` (the trait `rand` 0.10 and `rand_pcg` 0.10 implement; 0.10 renamed `RngCore` to `Rng`).
//! A generator from `rand_core` 0.9 or earlier does not fit: seed a `rand_pcg` 0.10 generator
//! (`Pcg64Mcg::seed_from_u64`) or any other 0.10 one. The `backstop` front doors make their own.
//!
//! The rules: [`Policy`] (every bound and its default, the semantics table), [`Budget`] (retry
//! budgets shared by a whole client), [`parse_retry_after`] and [`parse_rate_limit`] (what the
//! server's fields mean), [`ErrorKind`] and [`ErrorClass`] (which failures are retried).
//!
//! ## Choices where the design is silent
//!
//! - Without a usable `Retry-After` (which wins), a retryable response's rate-limit reset is a
//!   floor exactly like it (same ceiling, spread and deadline check; `DelaySource::RateLimitReset`),
//!   but only when the quota it belongs to is exhausted: a `RateLimit` member with `r=0`, or a
//!   `RateLimit-Remaining` (for `RateLimit-Reset`) or `X-RateLimit-Remaining` (for
//!   `X-RateLimit-Reset-After` and `X-RateLimit-Reset`) of `0`, or, on a 429, no remaining
//!   field. With quota left the wait is the backoff; a `RateLimit` whose members all have
//!   quota left means no floor at all, whatever the older fields say. `X-RateLimit-Reset` is
//!   Unix time unless the policy says delay-seconds ([`XRateLimitReset`]); a Unix reset more
//!   than [`IMPLAUSIBLE_RESET_AGE`] (a day) before the response's `Date` (else the wall clock)
//!   is malformed. See [`parse_rate_limit`] for the structured-field scope.
//! - A 403 is final unless it is a rate-limit answer, as GitHub sends them: its quota exhausted
//!   by the rule above (`r=0` or a remaining field of `0`, with a reset) or a usable
//!   `Retry-After`. Then it is a 429: retried after the reset when the policy retries a 429
//!   (final when it does not), and it closes the origin's gate as a 429 does. A plain 403 carries neither, so it stays final; the policy's switch for the
//!   rate-limit fields turns the exception off.
//! - A `Retry-After` on a final status (a redirect, a 4xx not retried) changes nothing; the
//!   outcome carries it ([`Outcome::retry_after`]) for a caller that follows redirects itself.
//! - [`Policy::worst_case`] bounds the attempts, the time and the longest wait of an operation
//!   from the policy alone; the oracle checks the machine against it on every fuzzed input.
//! - A malformed `Retry-After` is ignored (the backoff applies), as is an HTTP-date when the
//!   response has no usable `Date` and the caller gave no wall clock, and every HTTP-date
//!   without the `std` feature.
//! - Several `Retry-After` fields on one response are malformed (the field is a singleton); the
//!   `http` conversions drop them all.
//! - A `Retry-After` wait gets a random spread of `U[0, min(retry_after_spread, value / 10)]`
//!   above the server's value, never beyond `max_retry_after`.
//! - A zero-length wait (full jitter can draw zero) is not reported: the next poll sends.
//! - `Protocol` errors (an unparsable status line) count as "maybe sent": the server got the
//!   request.
//! - A budget's "success" is a 2xx or 3xx response the policy does not retry; a final 4xx or
//!   5xx (a 400, a 404) is neither a success nor a failure, as in the AWS SDKs' quota and
//!   gRPC's retry throttling (see [`Budget::on_attempt_end`]).

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(
    clippy::std_instead_of_core,
    clippy::alloc_instead_of_core,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[cfg(feature = "std")]
extern crate std;

mod backoff;
mod budget;
mod classify;
mod decision;
mod event;
pub mod grpc;
mod hedge;
#[cfg(feature = "http")]
mod http_conv;
mod jitter;
mod machine;
mod method;
mod non_idempotent;
mod overload;
mod policy;
mod rate_limit;
mod resume;
mod retry_after;
mod server_delay;
mod status;
mod time;
mod worst_case;

pub use backoff::{Backoff, Multiplier};
pub use budget::{Budget, BudgetConfigError, RatioBudget, RetryQuota, TokenBucket, Unlimited};
pub use classify::{AttemptError, ErrorClass, ErrorKind};
pub use decision::{
    AttemptOutcome, Decision, DelaySource, Outcome, SendReason, StopReason, WaitReason,
};
pub use event::{is_idempotency_key, Event, MisuseError, Request, Response};
pub use hedge::{
    CancelReason, FirstCopy, HedgeDecision, HedgeDelay, HedgeEvent, HedgeMachine, HedgeOutcome,
    HedgeTrigger, Hedging, HedgingError, Latencies, LatencyTracker, NoLatencies, A6_MAX_ATTEMPTS,
    MAX_COPIES,
};
pub use jitter::Jitter;
pub use machine::RetryMachine;
pub use method::{Method, MethodSet};
pub use non_idempotent::NonIdempotent;
pub use overload::{
    AdaptiveRateLimiter, Ask, Cubic, FailureRatio, Gate, GateAdmission, GateCloseReason,
    GateConfig, GateConfigError, GateSignal, GateState, NoGate, NoRateLimiter, OriginGate,
    RateLimiter, Reopening, Slot,
};
pub use policy::{ConfigError, Policy, PolicyBuilder, RetryAfterAboveMax};
pub use rate_limit::{parse_rate_limit, XRateLimitReset, IMPLAUSIBLE_RESET_AGE};
pub use resume::{
    parse_content_range, BodyEnd, ContentRange, Counted, Mismatch, NotResumable, RangeFrom,
    Representation, ResumeAnswer, Resumption, ValidatorKind, MAX_VALIDATOR_LEN,
};
pub use retry_after::{
    parse_delay_seconds, parse_http_date, parse_retry_after, RetryAfter, TWO_DIGIT_YEAR_REFERENCE,
};
pub use status::{ResponseClass, StatusSet};
pub use time::{Instant, UnixTime};
pub use worst_case::WorstCase;
