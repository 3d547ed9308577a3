//! What the machine tells its driver to do, and why.
//!
//! Rule: one output enum, so a driver has one place to look; plain data, `#[must_use]`,
//! `#[non_exhaustive]`; every variant says what the driver must do next, and carries the reason
//! (which rule fired, which bound was hit) so the driver can log it and a test can assert it.

use core::time::Duration;

use crate::classify::AttemptError;
use crate::time::Instant;

/// What an attempt ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttemptOutcome {
    /// A response with this status arrived.
    Response(u16),
    /// The attempt failed without a response.
    Error(AttemptError),
}

/// The machine's next instruction. Obtain it with
/// [`RetryMachine::poll`](crate::RetryMachine::poll).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "a decision tells the driver what to do next"]
#[non_exhaustive]
pub enum Decision {
    /// Send attempt `attempt` now, and report
    /// [`Event::AttemptStarted`](crate::Event::AttemptStarted) as it starts. Give up on the
    /// attempt after `timeout` (it is already bounded by the overall deadline) and report
    /// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout), or simply poll again once the timeout
    /// has passed. This decision repeats until the attempt is reported started.
    Send {
        /// The attempt's number; the first attempt is 1.
        attempt: u32,
        /// How long the attempt may take.
        timeout: Duration,
        /// Why this attempt is made.
        reason: SendReason,
    },
    /// Attempt `attempt` is in flight: report its response or error when it arrives, and poll
    /// again at `timeout_at` at the latest (the machine then treats the attempt as timed out).
    AwaitResponse {
        /// The attempt in flight.
        attempt: u32,
        /// When its timeout fires.
        timeout_at: Instant,
    },
    /// Sleep until `until`, then poll again. Nothing is sent before then. Keep the previous
    /// response until the next [`Decision::Send`]: if the operation ends first (the driver
    /// wakes at or after the deadline, or an abort comes), that response is the one returned.
    Wait {
        /// When the wait ends.
        until: Instant,
        /// How long the wait is, from the moment it was decided.
        delay: Duration,
        /// Why the machine waits, and what decided the length.
        reason: WaitReason,
    },
    /// Done: hand the last response to the caller. [`Outcome::last`] holds its status.
    Return(Outcome),
    /// Done: give up, handing the caller the last error (or, after an abort, whatever it last
    /// received). [`Outcome::reason`] says why.
    GiveUp(Outcome),
}

impl Decision {
    /// The final outcome, if this decision is terminal.
    #[must_use]
    pub const fn outcome(&self) -> Option<&Outcome> {
        match self {
            Decision::Return(o) | Decision::GiveUp(o) => Some(o),
            _ => None,
        }
    }
}

/// Why an attempt is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SendReason {
    /// The operation's first attempt.
    First,
    /// A retry after the previous attempt ended with this, and after the wait
    /// ([`Decision::Wait`]) that followed it.
    Retry(AttemptOutcome),
    /// A retry sent at once: the wait decided after the previous attempt was zero (a
    /// `Retry-After: 0`, a backoff or jitter of zero), so there was no [`Decision::Wait`]. The
    /// reason says what decided it, as a wait's would: a driver that reports waits reports
    /// this one too, with no delay.
    RetryAtOnce(WaitReason),
}

/// Why the machine waits before the next attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WaitReason {
    /// The failed attempt that caused the retry; `None` for a first attempt that an origin
    /// gate or a rate limiter held back.
    pub cause: Option<AttemptOutcome>,
    /// What decided the length of the wait.
    pub source: DelaySource,
    /// The attempt that follows the wait.
    pub next_attempt: u32,
}

/// What decided the length of a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DelaySource {
    /// The policy's backoff and jitter.
    Backoff,
    /// The server's `Retry-After` (a floor), plus the configured spread.
    RetryAfter,
    /// The server's `Retry-After` exceeded the ceiling and was clamped to it
    /// ([`RetryAfterAboveMax::Clamp`](crate::RetryAfterAboveMax::Clamp)).
    RetryAfterClamped,
    /// A rate-limit field's reset (`RateLimit`, `RateLimit-Reset`, `X-RateLimit-Reset-After`,
    /// `X-RateLimit-Reset`) on a response without a usable `Retry-After`: a floor, plus the
    /// configured spread, exactly like `Retry-After`.
    RateLimitReset,
    /// A rate-limit field's reset exceeded the ceiling and was clamped to it.
    RateLimitResetClamped,
    /// The origin's gate is closed (a server asked every client of it to back off), or
    /// half-open with another operation's probe in flight.
    OriginPaused,
    /// The send-rate limiter has no token yet.
    RateLimited,
    /// The server's gRPC pushback (`grpc-retry-pushback-ms`): exactly its wait, no spread.
    ServerPushback,
    /// The server's gRPC pushback exceeded the ceiling (`max_retry_after`) and was clamped to
    /// it.
    ServerPushbackClamped,
}

impl DelaySource {
    /// A short, stable name for logs.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            DelaySource::Backoff => "backoff",
            DelaySource::RetryAfter => "retry_after",
            DelaySource::RetryAfterClamped => "retry_after_clamped",
            DelaySource::RateLimitReset => "rate_limit_reset",
            DelaySource::RateLimitResetClamped => "rate_limit_reset_clamped",
            DelaySource::OriginPaused => "origin_paused",
            DelaySource::RateLimited => "rate_limited",
            DelaySource::ServerPushback => "server_pushback",
            DelaySource::ServerPushbackClamped => "server_pushback_clamped",
        }
    }

    /// The same server-directed source, clamped to the ceiling.
    pub(crate) const fn clamped(self) -> Self {
        match self {
            DelaySource::RateLimitReset | DelaySource::RateLimitResetClamped => {
                DelaySource::RateLimitResetClamped
            }
            DelaySource::ServerPushback | DelaySource::ServerPushbackClamped => {
                DelaySource::ServerPushbackClamped
            }
            _ => DelaySource::RetryAfterClamped,
        }
    }
}

/// How an operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// Attempts started, the first one included.
    pub attempts: u32,
    /// Time from the machine's creation to the end.
    pub elapsed: Duration,
    /// Why the machine stopped.
    pub reason: StopReason,
    /// What the last attempt ended with; `None` if no attempt ended (an abort or a deadline
    /// before the first response).
    pub last: Option<AttemptOutcome>,
    /// The last response's `Retry-After`, as a delay from when it arrived (an HTTP-date
    /// measured against its `Date`, else the wall clock), whatever its status; `None` when the
    /// last outcome is not a response or it had no usable `Retry-After`. On a final status (a
    /// 301, 302, 303, 307 or 308, a 4xx the policy does not retry) the field changes nothing
    /// here: a caller that follows redirects itself can honour it.
    pub retry_after: Option<Duration>,
}

/// Why the machine stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// The response's status is not retryable (a success, a 404, ...): it is the answer.
    FinalStatus,
    /// The error cannot be helped by retrying (a bad URL, a rejected certificate).
    PermanentError,
    /// The request may have reached the server and its method may not be retried: PUT or
    /// DELETE not added to the policy's methods, or a POST or PATCH under
    /// [`NonIdempotent::Never`](crate::NonIdempotent::Never).
    NotIdempotent,
    /// The request may have reached the server and is a POST or PATCH without an
    /// `Idempotency-Key`: sending one is the caller's opt-in to retries
    /// ([`NonIdempotent::WithIdempotencyKey`](crate::NonIdempotent::WithIdempotencyKey)).
    NoIdempotencyKey,
    /// `max_attempts` attempts were made.
    Attempts,
    /// The next attempt could not start before the deadline (`max_elapsed`).
    Deadline,
    /// The server's `Retry-After` (or, without one, its rate-limit reset) asked for more than
    /// `max_retry_after`.
    RetryAfterAboveMax,
    /// The server's gRPC pushback said not to retry (`grpc-retry-pushback-ms` negative, not a
    /// number, or sent more than once; gRFC A6).
    ServerPushback,
    /// The shared retry budget denied the retry.
    Budget,
    /// The caller aborted.
    Aborted,
    /// The request's body cannot be sent again (a stream, consumed by its one attempt): the
    /// request is not retried, whatever the policy says.
    BodyNotReplayable,
    /// The origin's gate would not open before the deadline (or the policy fails fast on a
    /// paused origin).
    OriginPaused,
    /// The send-rate limiter would not have a token before the deadline (or the policy fails
    /// fast).
    RateLimited,
}

impl StopReason {
    /// A short, stable name for logs and metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::FinalStatus => "final_status",
            StopReason::PermanentError => "permanent_error",
            StopReason::NotIdempotent => "not_idempotent",
            StopReason::NoIdempotencyKey => "no_idempotency_key",
            StopReason::Attempts => "attempts",
            StopReason::Deadline => "deadline",
            StopReason::RetryAfterAboveMax => "retry_after_above_max",
            StopReason::ServerPushback => "server_pushback",
            StopReason::Budget => "budget",
            StopReason::Aborted => "aborted",
            StopReason::BodyNotReplayable => "body_not_replayable",
            StopReason::OriginPaused => "origin_paused",
            StopReason::RateLimited => "rate_limited",
        }
    }

    /// Whether the operation hit one of its limits (attempts, deadline, `Retry-After`
    /// ceiling, budget): what an "exhausted" metric counts.
    #[must_use]
    pub const fn is_limit(self) -> bool {
        matches!(
            self,
            StopReason::Attempts
                | StopReason::Deadline
                | StopReason::RetryAfterAboveMax
                | StopReason::Budget
                | StopReason::OriginPaused
                | StopReason::RateLimited
        )
    }
}

impl core::fmt::Display for StopReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::fmt::Display for AttemptOutcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AttemptOutcome::Response(status) => write!(f, "status {status}"),
            AttemptOutcome::Error(e) => write!(f, "error {} ({})", e.kind, e.class),
        }
    }
}

impl core::fmt::Display for SendReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SendReason::First => f.write_str("first attempt"),
            SendReason::Retry(cause) => write!(f, "retry after {cause}"),
            SendReason::RetryAtOnce(wait) => match wait.cause {
                Some(cause) => write!(f, "retry at once after {cause}"),
                None => f.write_str("retry at once"),
            },
        }
    }
}

impl core::fmt::Display for WaitReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.cause {
            Some(cause) => write!(
                f,
                "{} after {cause}, before attempt {}",
                self.source.as_str(),
                self.next_attempt
            ),
            None => write!(
                f,
                "{} before attempt {}",
                self.source.as_str(),
                self.next_attempt
            ),
        }
    }
}

impl core::fmt::Display for Outcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} after {} attempt(s) in {:?}",
            self.reason, self.attempts, self.elapsed
        )?;
        if let Some(last) = self.last {
            write!(f, ", last {last}")?;
        }
        Ok(())
    }
}

/// One line per decision, for logs and traces: what to do, and why.
///
/// ```
/// use backstop_core::{Decision, Instant, Method, Policy, Request, RetryMachine};
/// use rand_core::SeedableRng;
///
/// let mut m = RetryMachine::new(
///     Policy::default(),
///     Request::new(Method::Get),
///     rand_pcg::Pcg64Mcg::seed_from_u64(1),
///     Instant::ZERO,
/// );
/// assert_eq!(m.poll(Instant::ZERO).to_string(), "send attempt 1 (first attempt), timeout 5s");
/// ```
impl core::fmt::Display for Decision {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Decision::Send {
                attempt,
                timeout,
                reason,
            } => write!(f, "send attempt {attempt} ({reason}), timeout {timeout:?}"),
            Decision::AwaitResponse {
                attempt,
                timeout_at,
            } => write!(
                f,
                "await attempt {attempt} until {:?}",
                timeout_at.as_duration()
            ),
            Decision::Wait {
                until,
                delay,
                reason,
            } => write!(
                f,
                "wait {delay:?} until {:?} ({reason})",
                until.as_duration()
            ),
            Decision::Return(o) => write!(f, "return the response: {o}"),
            Decision::GiveUp(o) => write!(f, "give up: {o}"),
        }
    }
}
