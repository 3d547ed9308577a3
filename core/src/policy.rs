//! The retry policy: every bound and rule, validated once.
//!
//! Rule (bad configuration is an error, never a panic): configuration is checked when it is built,
//! never asserted later; a [`Policy`] that exists is valid. Defaults are given on each
//! builder method and in [`Policy`]'s semantics table.
//!
//! What is refused is what is always a mistake: no attempt at all, no time at all, a backoff
//! whose base exceeds its cap, a status outside 100..=599 or a 1xx/2xx status in the retryable
//! set (RFC 9110 §15.2, §15.3: informational and successful answers are not failures; retrying
//! them repeats work that succeeded), a non-idempotent method among the retried ones. What is
//! odd but can be meant is built, and [`Policy::worst_case`] and the setters' docs say what it
//! costs:
//!
//! | configuration | what it does |
//! |---|---|
//! | `Backoff::constant(0)` with a huge `max_attempts` | retries back to back until `max_elapsed`: `worst_case().attempts` is `max_attempts` (the herd experiment in `tests/herd` runs this on purpose) |
//! | `max_retry_after(0)` | any server-directed wait above zero is above the ceiling: the operation gives up, or under [`RetryAfterAboveMax::Clamp`] retries at once |
//! | `attempt_timeout` above `max_elapsed` | every attempt's timeout is cut at the deadline |
//! | an empty status set | no status is retried; errors still are |
//! | an empty method set | only attempts that never reached the server (and POST/PATCH with an `Idempotency-Key`) are retried |

use core::fmt;
use core::time::Duration;

use crate::backoff::Backoff;
use crate::decision::StopReason;
use crate::event::Request;
use crate::hedge::{Hedging, HedgingError};
use crate::jitter::Jitter;
use crate::machine::PerPolicy;
use crate::method::{Method, MethodSet};
use crate::non_idempotent::NonIdempotent;
use crate::rate_limit::XRateLimitReset;
use crate::status::{ResponseClass, StatusSet};

/// What the machine does when a `Retry-After` (or a rate-limit reset) asks for more than
/// [`PolicyBuilder::max_retry_after`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryAfterAboveMax {
    /// Stop at once and return the response (the default): a wait that long is not a retry
    /// the caller asked for.
    #[default]
    GiveUp,
    /// Wait `max_retry_after` instead and retry (the classic `fetchWithRetry` behaviour; the server may well
    /// answer 429 again).
    Clamp,
}

/// A validated retry policy. Build one with [`Policy::builder`]; `Policy::default()` is the
/// builder's defaults.
///
/// <!-- readme:defaults -->
/// **The defaults** (`Policy::default()`, which `Retrier::default()` and every front door
/// use): at most **4 attempts**, **5 s per attempt and 15 s in all** (an endpoint that needs
/// longer fails where the bare client would have waited), statuses 408, 425, 429, 500, 502,
/// 503, 504, methods GET, HEAD, OPTIONS (POST and PATCH only with an `Idempotency-Key`),
/// exponential backoff from 300 ms capped at 5 s with full jitter, and a `Retry-After` ceiling
/// of 60 s. Every number changes through `Policy::builder()`, whose `build()` returns a
/// `ConfigError` for anything inconsistent, never a panic.
/// <!-- /readme:defaults -->
///
/// ```
/// use backstop_core::{Backoff, Jitter, Method, Policy, StatusSet};
/// use core::time::Duration;
///
/// // The defaults, as stated above.
/// let d = Policy::default();
/// assert_eq!((d.max_attempts(), d.attempt_timeout(), d.max_elapsed()),
///            (4, Duration::from_secs(5), Duration::from_secs(15)));
/// assert_eq!(d.retryable_statuses(), StatusSet::DEFAULT_RETRYABLE);
/// assert!([408, 425, 429, 500, 502, 503, 504].iter().all(|&s| d.retryable_statuses().contains(s)));
/// assert_eq!(d.backoff(), Backoff::exponential(Duration::from_millis(300), Duration::from_secs(5)));
/// assert_eq!((d.jitter(), d.max_retry_after()), (Jitter::Full, Duration::from_secs(60)));
///
/// let policy = Policy::builder()
///     .max_attempts(3)
///     .max_elapsed(Duration::from_secs(10))
///     .backoff(Backoff::exponential(Duration::from_millis(100), Duration::from_secs(2)))
///     .jitter(Jitter::Equal)
///     .add_retry_method(Method::Put)
///     .build()
///     .expect("valid policy");
/// assert_eq!(policy.max_attempts(), 3);
///
/// // Bad configuration is an error, not a panic.
/// assert!(Policy::builder().max_attempts(0).build().is_err());
/// ```
///
/// # Semantics
///
/// | rule | default | notes |
/// |---|---|---|
/// | `max_attempts` | 4 | counts the first attempt |
/// | `max_elapsed` | 15 s | from the machine's creation; no attempt starts at or after the deadline |
/// | `attempt_timeout` | 5 s | each attempt gets `min(attempt_timeout, deadline - now)` |
/// | backoff | exponential, base 300 ms, cap 5 s | retry n waits `min(cap, base * 2^(n-1))`; also linear and constant ([`Backoff`]); saturating, no overflow at attempt 10,000 |
/// | jitter | full: `U[0, d]` | also equal `d/2 + U[0, d/2]`, decorrelated `min(cap, U[base, 3 * previous])`, none ([`Jitter`]); never above the cap |
/// | retryable statuses | 408, 425, 429, 500, 502, 503, 504 | everything else is returned at once; a 1xx or 2xx in the set is a [`ConfigError`] (`StatusNotAnError`) |
/// | retryable methods | GET, HEAD, OPTIONS | add PUT, DELETE (or TRACE) with [`PolicyBuilder::add_retry_method`] |
/// | POST, PATCH | retried once maybe sent only when the request carries an `Idempotency-Key` | the key is the caller's opt-in (an empty or blank value is no key); without one the first answer is final and the reason is `no_idempotency_key`; [`NonIdempotent::Never`] forbids such retries, [`NonIdempotent::ServerDeduplicatesWithoutKey`] allows them without a key (for a server that deduplicates by other means) |
/// | errors | not sent (DNS, refused): retried for any method; maybe sent (reset, EOF, timeout): retryable methods only; aborted: never, and distinct from a timeout; permanent (TLS, bad URL): never | the caller can override any classification ([`ErrorClass`](crate::ErrorClass)) |
/// | `Retry-After` | honoured as a floor | delay-seconds (decimals such as `0.1` accepted) or an HTTP-date in any of the three forms, measured against the response's `Date` when present ([`parse_retry_after`](crate::parse_retry_after)); malformed means absent (the backoff applies); huge values saturate |
/// | rate-limit fields | honoured as a floor, like `Retry-After`, only when their quota is exhausted | on a retryable status without a usable `Retry-After` (which wins): `RateLimit` (with `RateLimit-Policy`), `RateLimit-Reset`, `X-RateLimit-Reset-After` and `X-RateLimit-Reset`, as [`parse_rate_limit`](crate::parse_rate_limit) says; same ceiling, spread and deadline check; the wait's source is `rate_limit_reset`; off with [`PolicyBuilder::rate_limit_fields`]`(false)` |
/// | a 403 as a rate-limit answer | retried like a 429 | a 403 whose quota is exhausted (an exhausted `RateLimit` member, or a remaining field of `0`, with a reset: GitHub's primary limit) or with a usable `Retry-After` (its secondary limit) is a 429: retryable while 429 is among the retryable statuses (final, as a 429 then is, when it is not), floored at the reset (or the `Retry-After`) within the same ceiling and deadline, and closes the origin's gate; any other 403 is final; off with the rate-limit fields; a caller's [`ResponseClass`](crate::ResponseClass) other than `ByStatus` decides alone |
/// | `X-RateLimit-Reset` | Unix time | measured against the response's `Date`, else the wall clock; more than a day ([`IMPLAUSIBLE_RESET_AGE`](crate::IMPLAUSIBLE_RESET_AGE)) before it is malformed, not "now"; [`XRateLimitReset::DelaySeconds`] for APIs that send seconds from now |
/// | `max_retry_after` | 60 s | above it: return the response at once ([`RetryAfterAboveMax::Clamp`] waits the ceiling instead); also the ceiling of a rate-limit reset |
/// | `retry_after_spread` | 1 s | a random `U[0, min(spread, value/10)]` above the server's value, never past the ceiling, so clients told the same instant do not return together |
/// | the response body (a driver's bounded read: `backstop::body::ReadBody`) | not read: the operation ends at the head | with a limit, the driver reads the whole body inside the attempt, under its timeout, the deadline and the abort: a body that breaks off (a reset, an end short of its `Content-Length`) is [`ErrorKind::BodyCut`](crate::ErrorKind::BodyCut), maybe sent (retried for the retryable methods, in the same count and budget); a body over the limit is [`ErrorKind::BodyTooLarge`](crate::ErrorKind::BodyTooLarge), permanent, never truncated; a stalled one is the attempt's time-out |
/// | a resumable body (a driver's streaming body: `resume_bodies` on each front door) | off | a GET's `200` with a strong validator (an `ETag` not marked weak, or a `Last-Modified` at least 1 s before `Date`), a `Content-Length` and no `Accept-Ranges: none` resumes after a cut, an end short of its length, or a stall past `body_idle_timeout`: `Range: bytes=N-` after the N bytes handed over, `If-Range` with the validator, accepted only as a `206` at N with the same length, validator and coding; each resume is an attempt of the same operation ([`RetryMachine::body_failed`](crate::RetryMachine::body_failed)): the same `max_attempts`, budget, gates and limiter, no resume starts at or after the deadline, the first resume after progress goes at once; a `200` after bytes were handed over, or any mismatch, is [`ErrorKind::BodyChanged`](crate::ErrorKind::BodyChanged), never spliced |
/// | `body_idle_timeout` | 5 s (or `max_elapsed` when shorter) | the longest a resumable body may go without a byte; zero or longer than `max_elapsed` is a [`ConfigError`] (`BodyIdleTimeout`) |
/// | deadline | | a wait that would end at or after the deadline is not waited: the last response or error is returned at once, reason `deadline` |
/// | abort | | from any state: the next decision is "give up: aborted"; nothing is sent after it |
/// | budget | none | a shared retry budget ([`Budget`](crate::Budget)) may deny a retry: reason `budget` |
/// | `Retry-After` on a final status | changes nothing | a 301, 302, 303, 307, 308 or a 4xx the policy does not retry is returned at once; [`Outcome::retry_after`](crate::Outcome::retry_after) carries the value for a caller that follows redirects itself |
/// | worst case | [`Policy::worst_case`] | at most `max_attempts` requests; at most `min(max_elapsed, attempts x attempt_timeout + (attempts - 1) x longest wait)` when the driver acts on each decision as it comes; the longest wait is `min(max(backoff cap, max_retry_after), max_elapsed - 1 ns)`; under hedging, the larger of this and the hedged bound, field by field (the paths that retry instead follow these settings) |
///
/// Every terminal decision carries an [`Outcome`](crate::Outcome): the number of attempts, the
/// time elapsed, the [`StopReason`], what the last attempt ended with, and that response's
/// `Retry-After`. The driver holds the response itself, so nothing the server said is lost.
// `Debug` is written out: it shows the settings, not what the machines compute from them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Policy {
    max_attempts: u32,
    max_elapsed: Duration,
    attempt_timeout: Duration,
    backoff: Backoff,
    jitter: Jitter,
    retryable_statuses: StatusSet,
    retry_methods: MethodSet,
    non_idempotent: NonIdempotent,
    max_retry_after: Duration,
    retry_after_above_max: RetryAfterAboveMax,
    retry_after_spread: Duration,
    rate_limit_fields: bool,
    x_rate_limit_reset: XRateLimitReset,
    hedging: Option<Hedging>,
    fail_fast_when_paused: bool,
    /// The caller's, if set (the default follows `max_elapsed`).
    body_idle_timeout: Option<Duration>,
    /// What the machines read of the fields above, computed from them when the policy is
    /// built (so two policies equal in their fields are equal in it too).
    per_policy: PerPolicy,
}

/// The body idle timeout when the caller sets none (and `max_elapsed` is not shorter).
const DEFAULT_BODY_IDLE: Duration = Duration::from_secs(5);

const DEFAULT: Policy = Policy::computed(Policy {
    max_attempts: 4,
    max_elapsed: Duration::from_secs(15),
    attempt_timeout: Duration::from_secs(5),
    backoff: Backoff::exponential(Duration::from_millis(300), Duration::from_secs(5)),
    jitter: Jitter::Full,
    retryable_statuses: StatusSet::DEFAULT_RETRYABLE,
    retry_methods: MethodSet::SAFE,
    non_idempotent: NonIdempotent::WithIdempotencyKey,
    max_retry_after: Duration::from_secs(60),
    retry_after_above_max: RetryAfterAboveMax::GiveUp,
    retry_after_spread: Duration::from_secs(1),
    rate_limit_fields: true,
    x_rate_limit_reset: XRateLimitReset::UnixTime,
    hedging: None,
    fail_fast_when_paused: false,
    body_idle_timeout: None,
    // Computed from the fields above by `Policy::computed`.
    per_policy: PerPolicy::UNCOMPUTED,
});

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("max_attempts", &self.max_attempts)
            .field("max_elapsed", &self.max_elapsed)
            .field("attempt_timeout", &self.attempt_timeout)
            .field("backoff", &self.backoff)
            .field("jitter", &self.jitter)
            .field("retryable_statuses", &self.retryable_statuses)
            .field("retry_methods", &self.retry_methods)
            .field("non_idempotent", &self.non_idempotent)
            .field("max_retry_after", &self.max_retry_after)
            .field("retry_after_above_max", &self.retry_after_above_max)
            .field("retry_after_spread", &self.retry_after_spread)
            .field("rate_limit_fields", &self.rate_limit_fields)
            .field("x_rate_limit_reset", &self.x_rate_limit_reset)
            .field("hedging", &self.hedging)
            .field("fail_fast_when_paused", &self.fail_fast_when_paused)
            .field("body_idle_timeout", &self.body_idle_timeout())
            .finish()
    }
}

impl Default for Policy {
    fn default() -> Self {
        DEFAULT
    }
}

impl Policy {
    /// A builder starting from the defaults.
    pub const fn builder() -> PolicyBuilder {
        PolicyBuilder {
            policy: DEFAULT,
            error: None,
        }
    }

    /// The most attempts, the first one included (default: 4).
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The time from the machine's creation after which no attempt starts (default: 15 s).
    #[must_use]
    pub const fn max_elapsed(&self) -> Duration {
        self.max_elapsed
    }

    /// The longest a single attempt may take, further bounded by the deadline (default: 5 s).
    #[must_use]
    pub const fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
    }

    /// The backoff (default: exponential, base 300 ms, cap 5 s).
    #[must_use]
    pub const fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// The jitter (default: full).
    #[must_use]
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// Whether `status` is retried: [`Policy::retryable_statuses`] read in place (the set is
    /// not copied).
    #[inline]
    pub(crate) const fn retries_status(&self, status: u16) -> bool {
        self.retryable_statuses.contains(status)
    }

    /// The statuses that are retried (default: 408, 425, 429, 500, 502, 503, 504).
    #[must_use]
    pub const fn retryable_statuses(&self) -> StatusSet {
        self.retryable_statuses
    }

    /// The idempotent methods that are retried (default: GET, HEAD, OPTIONS).
    #[must_use]
    pub const fn retry_methods(&self) -> MethodSet {
        self.retry_methods
    }

    /// Which POST and PATCH requests are retried once they may have reached the server
    /// (default: those carrying an `Idempotency-Key`).
    #[must_use]
    pub const fn non_idempotent(&self) -> NonIdempotent {
        self.non_idempotent
    }

    /// The longest `Retry-After` (or, without one, rate-limit reset) honoured (default: 60 s).
    #[must_use]
    pub const fn max_retry_after(&self) -> Duration {
        self.max_retry_after
    }

    /// What happens above [`max_retry_after`](Self::max_retry_after) (default: give up).
    #[must_use]
    pub const fn retry_after_above_max(&self) -> RetryAfterAboveMax {
        self.retry_after_above_max
    }

    /// The most random time added above a `Retry-After` (default: 1 s); see
    /// [`PolicyBuilder::retry_after_spread`].
    #[must_use]
    pub const fn retry_after_spread(&self) -> Duration {
        self.retry_after_spread
    }

    /// Whether a retryable response's rate-limit fields are a floor when it has no usable
    /// `Retry-After` (default: yes); see [`PolicyBuilder::rate_limit_fields`].
    #[must_use]
    pub const fn rate_limit_fields(&self) -> bool {
        self.rate_limit_fields
    }

    /// Whether the rate-limit fields of a response with `status` and `class` can bear on the
    /// decision, so that a driver needs to look them up: the policy reads them, and the
    /// response is retryable, or a 403 (which an exhausted quota makes a rate-limit answer;
    /// see [`PolicyBuilder::rate_limit_fields`]). A driver that skips them otherwise keeps the
    /// usual response (a 200) from paying for lookups nobody reads.
    ///
    /// ```
    /// use backstop_core::{Policy, ResponseClass};
    ///
    /// let p = Policy::default();
    /// assert!(p.rate_limit_fields_bear_on(429, ResponseClass::ByStatus));
    /// assert!(p.rate_limit_fields_bear_on(403, ResponseClass::ByStatus));
    /// assert!(!p.rate_limit_fields_bear_on(200, ResponseClass::ByStatus));
    /// assert!(!p.rate_limit_fields_bear_on(403, ResponseClass::Final));
    /// ```
    #[must_use]
    #[inline]
    pub const fn rate_limit_fields_bear_on(&self, status: u16, class: ResponseClass) -> bool {
        self.rate_limit_fields
            && match class {
                ResponseClass::ByStatus => status == 403 || self.retries_status(status),
                ResponseClass::Retryable => true,
                ResponseClass::Final | ResponseClass::FinalError => false,
            }
    }

    /// How `X-RateLimit-Reset` is read (default: Unix time).
    #[must_use]
    pub const fn x_rate_limit_reset(&self) -> XRateLimitReset {
        self.x_rate_limit_reset
    }

    /// The hedging policy, if the operations under this policy are hedged instead of retried
    /// (see [`PolicyBuilder::hedging`]).
    #[must_use]
    pub const fn hedging(&self) -> Option<Hedging> {
        self.hedging
    }

    /// Whether a request is hedged under this policy: the policy hedges, the request's body can
    /// be sent again, and its method may be sent again by itself (one of the policy's retry
    /// methods, with no `Idempotency-Key`).
    ///
    /// A request with an `Idempotency-Key` is retried, never hedged. A server that follows the
    /// Idempotency-Key draft answers a concurrent repeat of a key still in progress with 409
    /// Conflict: a backup copy of a keyed POST would be that repeat, and its 409 (a final
    /// answer) would win over the copy that created the resource. Retried instead, the copies
    /// of a keyed request never overlap.
    ///
    /// ```
    /// use backstop_core::{Hedging, Method, Policy, Request};
    /// use core::time::Duration;
    ///
    /// let p = Policy::builder().hedging(Hedging::fixed(Duration::from_millis(50))).build()?;
    /// assert!(p.hedges(Request::new(Method::Get)));
    /// assert!(!p.hedges(Request::new(Method::Post))); // sent once
    /// assert!(!p.hedges(Request::new(Method::Post).with_idempotency_key(true))); // retried
    /// assert!(!Policy::default().hedges(Request::new(Method::Get))); // no hedging
    /// # Ok::<(), backstop_core::ConfigError>(())
    /// ```
    #[must_use]
    pub const fn hedges(&self, request: Request) -> bool {
        self.hedging.is_some()
            && request.has_replayable_body
            && !request.has_idempotency_key
            && self.may_retry(request.method, false)
    }

    /// Whether an operation gives up at once instead of waiting when its first attempt finds
    /// the origin's gate closed or the rate limiter empty (see
    /// [`PolicyBuilder::fail_fast_when_paused`]).
    #[must_use]
    pub const fn fail_fast_when_paused(&self) -> bool {
        self.fail_fast_when_paused
    }

    /// The longest a resumable streaming body may go without a byte before it is taken for
    /// stalled (a half-open connection) and resumed (default: 5 s, or `max_elapsed` when
    /// that is shorter).
    #[must_use]
    pub const fn body_idle_timeout(&self) -> Duration {
        match self.body_idle_timeout {
            Some(d) => d,
            None if self.max_elapsed.as_nanos() < DEFAULT_BODY_IDLE.as_nanos() => self.max_elapsed,
            None => DEFAULT_BODY_IDLE,
        }
    }

    /// What the machines read of this policy, in nanoseconds (computed when it was built).
    #[inline]
    pub(crate) const fn per_policy(&self) -> PerPolicy {
        self.per_policy
    }

    /// This policy with its machine part computed from its fields.
    const fn computed(mut self) -> Self {
        self.per_policy = PerPolicy::of(&self);
        self
    }

    /// The longest single wait this policy can ever decide: the backoff's cap or the
    /// `Retry-After` ceiling, whichever is larger.
    #[must_use]
    pub fn max_wait(&self) -> Duration {
        self.backoff.cap().max(self.max_retry_after)
    }

    /// Whether a request with `method` may be retried after it may have reached the server.
    /// `has_idempotency_key` says whether it carries an `Idempotency-Key`.
    ///
    /// ```
    /// use backstop_core::{Method, Policy};
    ///
    /// let p = Policy::default();
    /// assert!(p.may_retry(Method::Get, false));
    /// assert!(p.may_retry(Method::Post, true)); // the key is the caller's opt-in
    /// assert!(!p.may_retry(Method::Post, false));
    /// assert!(!p.may_retry(Method::Put, false)); // PUT needs `add_retry_method(Method::Put)`
    /// ```
    #[must_use]
    pub const fn may_retry(&self, method: Method, has_idempotency_key: bool) -> bool {
        self.retry_refusal(method, has_idempotency_key).is_none()
    }

    /// Why a request with `method` is not sent again once it may have reached the server:
    /// [`StopReason::NoIdempotencyKey`] for a POST or PATCH that lacks the key the policy asks
    /// for, [`StopReason::NotIdempotent`] for any other method or policy that forbids it;
    /// `None` when it may be sent again.
    ///
    /// ```
    /// use backstop_core::{Method, Policy, StopReason};
    ///
    /// let p = Policy::default();
    /// assert_eq!(p.retry_refusal(Method::Post, false), Some(StopReason::NoIdempotencyKey));
    /// assert_eq!(p.retry_refusal(Method::Delete, true), Some(StopReason::NotIdempotent));
    /// assert_eq!(p.retry_refusal(Method::Get, false), None);
    /// ```
    #[must_use]
    pub const fn retry_refusal(
        &self,
        method: Method,
        has_idempotency_key: bool,
    ) -> Option<StopReason> {
        self.non_idempotent.refusal(
            method,
            self.retry_methods.contains(method),
            has_idempotency_key,
        )
    }
}

/// Builds a [`Policy`]; every setter consumes and returns the builder, and
/// [`build`](Self::build) validates the whole.
#[derive(Clone, Copy, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct PolicyBuilder {
    policy: Policy,
    error: Option<ConfigError>,
}

impl PolicyBuilder {
    /// The most attempts, the first one included (default: 4). Must be at least 1. A large
    /// value with a zero backoff retries back to back until `max_elapsed`; see
    /// [`Policy::worst_case`].
    pub const fn max_attempts(mut self, n: u32) -> Self {
        self.policy.max_attempts = n;
        self
    }

    /// The overall deadline, measured from the machine's creation (default: 15 s). Must not be zero.
    pub const fn max_elapsed(mut self, d: Duration) -> Self {
        self.policy.max_elapsed = d;
        self
    }

    /// The per-attempt timeout (default: 5 s); an attempt's timeout is also never later than the
    /// overall deadline (so a value above `max_elapsed` is cut there). Must not be zero.
    pub const fn attempt_timeout(mut self, d: Duration) -> Self {
        self.policy.attempt_timeout = d;
        self
    }

    /// The backoff (default: exponential, base 300 ms, cap 5 s). The base must not exceed the cap.
    pub const fn backoff(mut self, backoff: Backoff) -> Self {
        self.policy.backoff = backoff;
        self
    }

    /// The jitter (default: full).
    pub const fn jitter(mut self, jitter: Jitter) -> Self {
        self.policy.jitter = jitter;
        self
    }

    /// Replaces the retryable statuses (default: 408, 425, 429, 500, 502, 503, 504). Each must be
    /// between 300 and 599: a 1xx or 2xx status is not a failure
    /// ([`ConfigError::StatusNotAnError`]). An empty set retries no status, only errors.
    pub fn retryable_statuses(mut self, codes: &[u16]) -> Self {
        match StatusSet::try_from_codes(codes) {
            Ok(set) => self.policy.retryable_statuses = set,
            Err(code) => self.error = Some(ConfigError::StatusOutOfRange(code)),
        }
        self
    }

    /// Adds one status to the retryable ones; the others stay. Like
    /// [`retryable_statuses`](Self::retryable_statuses), it must be between 300 and 599.
    ///
    /// ```
    /// use backstop_core::Policy;
    ///
    /// let p = Policy::builder().add_retryable_status(409).remove_retryable_status(500).build()?;
    /// assert!(p.retryable_statuses().contains(409) && p.retryable_statuses().contains(503));
    /// assert!(!p.retryable_statuses().contains(500));
    /// # Ok::<(), backstop_core::ConfigError>(())
    /// ```
    pub const fn add_retryable_status(self, code: u16) -> Self {
        self.edit_retryable_status(code, true)
    }

    /// Removes one status from the retryable ones; the others stay. A status that is not
    /// retryable stays so; one outside 100 to 599 is an error
    /// ([`ConfigError::StatusOutOfRange`]).
    pub const fn remove_retryable_status(self, code: u16) -> Self {
        self.edit_retryable_status(code, false)
    }

    /// Adds (`add`) or removes one retryable status; one outside 100 to 599 is an error.
    const fn edit_retryable_status(mut self, code: u16, add: bool) -> Self {
        let set = self.policy.retryable_statuses;
        if !StatusSet::in_range(code) {
            self.error = Some(ConfigError::StatusOutOfRange(code));
        } else if add {
            self.policy.retryable_statuses = set.with_const(code);
        } else {
            self.policy.retryable_statuses = set.without_const(code);
        }
        self
    }

    /// Replaces the retryable statuses with a prepared set (checked as
    /// [`retryable_statuses`](Self::retryable_statuses) is, by [`build`](Self::build)).
    pub const fn retryable_status_set(mut self, set: StatusSet) -> Self {
        self.policy.retryable_statuses = set;
        self
    }

    /// Adds an idempotent method to the retried ones (default: GET, HEAD, OPTIONS); the others
    /// stay. PUT, DELETE and TRACE may be added; a non-idempotent method is an error (POST and
    /// PATCH are retried when they carry an `Idempotency-Key`: see
    /// [`non_idempotent`](Self::non_idempotent)).
    pub const fn add_retry_method(mut self, method: Method) -> Self {
        if method.is_idempotent() {
            self.policy.retry_methods = self.policy.retry_methods.with(method);
        } else {
            self.error = Some(ConfigError::MethodNotIdempotent(method));
        }
        self
    }

    /// Retries exactly `methods` and no other: the defaults (GET, HEAD, OPTIONS) are dropped
    /// unless listed. Each must be idempotent.
    ///
    /// ```
    /// use backstop_core::{Method, Policy};
    ///
    /// let p = Policy::builder().retry_only_methods(&[Method::Put]).build()?;
    /// assert!(p.may_retry(Method::Put, false));
    /// assert!(!p.may_retry(Method::Get, false)); // not listed: no longer retried
    /// # Ok::<(), backstop_core::ConfigError>(())
    /// ```
    pub fn retry_only_methods(mut self, methods: &[Method]) -> Self {
        self.policy.retry_methods = MethodSet::EMPTY;
        for &m in methods {
            self = self.add_retry_method(m);
        }
        self
    }

    /// Which POST and PATCH requests are retried once they may have reached the server
    /// (default: [`NonIdempotent::WithIdempotencyKey`], those that carry the key).
    pub const fn non_idempotent(mut self, choice: NonIdempotent) -> Self {
        self.policy.non_idempotent = choice;
        self
    }

    /// The longest `Retry-After` (or, without one, rate-limit reset) honoured (default: 60 s).
    /// Zero honours only `Retry-After: 0`: any longer server-directed wait gives up, or under
    /// [`RetryAfterAboveMax::Clamp`] is cut to nothing.
    pub const fn max_retry_after(mut self, d: Duration) -> Self {
        self.policy.max_retry_after = d;
        self
    }

    /// What happens when `Retry-After` exceeds [`max_retry_after`](Self::max_retry_after)
    /// (default: give up and return the response).
    pub const fn retry_after_above_max(mut self, what: RetryAfterAboveMax) -> Self {
        self.policy.retry_after_above_max = what;
        self
    }

    /// The largest random time added above a `Retry-After` value (default: 1 s), so that clients told
    /// the same instant do not all return at once. The spread actually drawn is
    /// `U[0, min(spread, value / 10)]`, and never takes a wait past `max_retry_after`. Zero
    /// disables it. The server's value is always a floor.
    pub const fn retry_after_spread(mut self, d: Duration) -> Self {
        self.policy.retry_after_spread = d;
        self
    }

    /// Whether a retryable response without a usable `Retry-After` has its rate-limit fields
    /// (`RateLimit` with `RateLimit-Policy`, `RateLimit-Reset`, `X-RateLimit-Reset-After`,
    /// `X-RateLimit-Reset`) read as a floor, exactly like `Retry-After`: the same ceiling
    /// ([`max_retry_after`](Self::max_retry_after)), the same spread, the same deadline check
    /// (default: yes), when the quota they belong to is exhausted (`r=0`, a remaining field of
    /// `0`, or no remaining field on a 429; see the crate docs). `Retry-After` wins when both
    /// are present. `false` ignores them.
    ///
    /// The same switch makes a 403 a rate-limit answer: a 403 (not retryable by status) whose
    /// quota is exhausted, or that carries a usable `Retry-After`, is a 429 (GitHub answers an
    /// exhausted quota with either status): retried after it when 429 is among the
    /// [retryable statuses](Self::retryable_statuses), final when it is not. With `false`,
    /// every 403 is final.
    pub const fn rate_limit_fields(mut self, yes: bool) -> Self {
        self.policy.rate_limit_fields = yes;
        self
    }

    /// How `X-RateLimit-Reset` is read: Unix time (the default, as GitHub sends it) or
    /// delay-seconds (as some other APIs do).
    pub const fn x_rate_limit_reset(mut self, reading: XRateLimitReset) -> Self {
        self.policy.x_rate_limit_reset = reading;
        self
    }

    /// Hedges the operations instead of retrying them (gRFC A6: one or the other per
    /// operation): copies of the request go out `hedging`'s delay apart, or at once after a
    /// non-final answer, and the first final answer wins. Only a request whose method may be
    /// sent again by itself, without an `Idempotency-Key`, and with a body that can be sent
    /// again, is hedged ([`Policy::hedges`]); a keyed POST or PATCH is retried instead; the
    /// attempt timeout, deadline, retryable statuses and
    /// `Retry-After` handling of this policy apply to every copy; its `max_attempts` and
    /// backoff do not. See [`HedgeMachine`](crate::HedgeMachine).
    pub const fn hedging(mut self, hedging: Hedging) -> Self {
        self.policy.hedging = Some(hedging);
        self
    }

    /// A new operation whose first attempt finds the origin's gate closed (or half-open with
    /// another operation's probe) or the send-rate limiter empty gives up at once
    /// ([`StopReason::OriginPaused`], [`StopReason::RateLimited`]) instead of waiting (the
    /// default: it waits, within its deadline). Retries always wait: they are floored at the
    /// reopening time.
    pub const fn fail_fast_when_paused(mut self, yes: bool) -> Self {
        self.policy.fail_fast_when_paused = yes;
        self
    }

    /// The longest a resumable streaming body may go without a byte (default: 5 s, or
    /// `max_elapsed` when that is shorter): past it,
    /// the body is stalled (a half-open connection, a server that stopped sending) and
    /// resumes, as an attempt of the same operation, within its deadline. Must not be zero,
    /// nor longer than `max_elapsed` (a stall found after the deadline cannot be resumed).
    pub const fn body_idle_timeout(mut self, d: Duration) -> Self {
        self.policy.body_idle_timeout = Some(d);
        self
    }

    /// Validates and returns the policy.
    pub fn build(self) -> Result<Policy, ConfigError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let p = self.policy;
        if p.max_attempts == 0 {
            return Err(ConfigError::ZeroMaxAttempts);
        }
        if p.max_elapsed.is_zero() {
            return Err(ConfigError::ZeroMaxElapsed);
        }
        if p.attempt_timeout.is_zero() {
            return Err(ConfigError::ZeroAttemptTimeout);
        }
        if let Some(idle) = p.body_idle_timeout {
            if idle.is_zero() || idle > p.max_elapsed {
                return Err(ConfigError::BodyIdleTimeout {
                    idle,
                    max_elapsed: p.max_elapsed,
                });
            }
        }
        if p.backoff.base() > p.backoff.cap() {
            return Err(ConfigError::BackoffBaseAboveCap {
                base: p.backoff.base(),
                cap: p.backoff.cap(),
            });
        }
        if let Some(code) = (100..300).find(|&c| p.retryable_statuses.contains(c)) {
            return Err(ConfigError::StatusNotAnError(code));
        }
        if let Some(h) = p.hedging {
            h.check().map_err(ConfigError::Hedging)?;
        }
        Ok(Policy::computed(p))
    }
}

/// Why a policy could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigError {
    /// `max_attempts` was zero: at least the first attempt must be allowed.
    ZeroMaxAttempts,
    /// `max_elapsed` was zero: no attempt could start.
    ZeroMaxElapsed,
    /// `attempt_timeout` was zero: no attempt could finish.
    ZeroAttemptTimeout,
    /// The backoff's base exceeds its cap.
    BackoffBaseAboveCap {
        /// The configured base.
        base: Duration,
        /// The configured cap.
        cap: Duration,
    },
    /// A retryable status outside 100 to 599.
    StatusOutOfRange(u16),
    /// A 1xx or 2xx status among the retryable ones: an informational or successful answer is
    /// not a failure, and retrying it repeats work that succeeded.
    StatusNotAnError(u16),
    /// A non-idempotent method was added to the retried methods.
    MethodNotIdempotent(Method),
    /// The hedging policy was refused.
    Hedging(HedgingError),
    /// `body_idle_timeout` was zero, or longer than `max_elapsed`.
    BodyIdleTimeout {
        /// The configured idle timeout.
        idle: Duration,
        /// The configured deadline.
        max_elapsed: Duration,
    },
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::ZeroMaxAttempts => f.write_str("max_attempts must be at least 1"),
            ConfigError::ZeroMaxElapsed => f.write_str("max_elapsed must be greater than zero"),
            ConfigError::ZeroAttemptTimeout => {
                f.write_str("attempt_timeout must be greater than zero")
            }
            ConfigError::BackoffBaseAboveCap { base, cap } => write!(
                f,
                "backoff base ({base:?}) must not exceed its cap ({cap:?})"
            ),
            ConfigError::StatusOutOfRange(code) => {
                write!(f, "retryable status {code} is outside 100..=599")
            }
            ConfigError::StatusNotAnError(code) => write!(
                f,
                "retryable status {code} is an informational or success status (1xx/2xx), not a failure: only 3xx to 5xx may be retried"
            ),
            ConfigError::MethodNotIdempotent(m) => write!(
                f,
                "{m} is not idempotent: send an Idempotency-Key, which opts the request in to retries"
            ),
            ConfigError::Hedging(e) => e.fmt(f),
            ConfigError::BodyIdleTimeout { idle, max_elapsed } => write!(
                f,
                "body_idle_timeout ({idle:?}) must be greater than zero and at most max_elapsed ({max_elapsed:?})"
            ),
        }
    }
}

impl core::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_design() {
        let p = Policy::default();
        assert_eq!(Ok(p), Policy::builder().build());
        assert_eq!(p.max_attempts(), 4);
        assert_eq!(p.max_elapsed(), Duration::from_secs(15));
        assert_eq!(p.attempt_timeout(), Duration::from_secs(5));
        assert_eq!(
            p.backoff(),
            Backoff::exponential(Duration::from_millis(300), Duration::from_secs(5))
        );
        assert_eq!(p.jitter(), Jitter::Full);
        assert_eq!(p.retryable_statuses(), StatusSet::DEFAULT_RETRYABLE);
        assert_eq!(p.retry_methods(), MethodSet::SAFE);
        assert_eq!(p.non_idempotent(), NonIdempotent::WithIdempotencyKey);
        assert_eq!(p.max_retry_after(), Duration::from_secs(60));
        assert_eq!(p.retry_after_above_max(), RetryAfterAboveMax::GiveUp);
        assert_eq!(p.max_wait(), Duration::from_secs(60));
        assert!(p.rate_limit_fields());
        assert_eq!(p.x_rate_limit_reset(), XRateLimitReset::UnixTime);
    }

    #[test]
    fn every_policy_carries_the_machine_part_of_its_own_fields() -> Result<(), ConfigError> {
        let built = Policy::builder()
            .max_elapsed(Duration::from_secs(u64::MAX))
            .attempt_timeout(Duration::from_millis(7))
            .backoff(Backoff::exponential(Duration::ZERO, Duration::from_secs(2)))
            .jitter(Jitter::None)
            .build()?;
        for p in [Policy::default(), built] {
            assert_eq!(p.per_policy(), PerPolicy::of(&p));
            assert_ne!(p.per_policy(), PerPolicy::UNCOMPUTED);
        }
        assert_eq!(built.per_policy().max_elapsed, u64::MAX);
        assert_eq!(built.per_policy().attempt_timeout, 7_000_000);
        #[cfg(feature = "std")]
        {
            // `Debug` shows the settings only.
            let shown = std::format!("{built:?}");
            assert!(shown.starts_with("Policy { max_attempts: 4,"), "{shown}");
            assert!(shown.contains("body_idle_timeout: 5s }"), "{shown}");
            assert!(!shown.contains("per_policy"), "{shown}");
        }
        Ok(())
    }

    #[test]
    fn bad_configuration_is_a_clear_error() {
        let cases = [
            (
                Policy::builder().max_attempts(0),
                ConfigError::ZeroMaxAttempts,
            ),
            (
                Policy::builder().max_elapsed(Duration::ZERO),
                ConfigError::ZeroMaxElapsed,
            ),
            (
                Policy::builder().attempt_timeout(Duration::ZERO),
                ConfigError::ZeroAttemptTimeout,
            ),
            (
                Policy::builder().backoff(Backoff::exponential(
                    Duration::from_secs(2),
                    Duration::from_secs(1),
                )),
                ConfigError::BackoffBaseAboveCap {
                    base: Duration::from_secs(2),
                    cap: Duration::from_secs(1),
                },
            ),
            (
                Policy::builder().retryable_statuses(&[503, 600]),
                ConfigError::StatusOutOfRange(600),
            ),
            (
                Policy::builder().add_retry_method(Method::Post),
                ConfigError::MethodNotIdempotent(Method::Post),
            ),
            (
                Policy::builder().retry_only_methods(&[Method::Get, Method::Patch]),
                ConfigError::MethodNotIdempotent(Method::Patch),
            ),
        ];
        for (builder, expected) in cases {
            assert_eq!(builder.build(), Err(expected));
        }
    }

    #[test]
    fn config_errors_explain_themselves() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            ConfigError::ZeroMaxAttempts.to_string(),
            "max_attempts must be at least 1"
        );
        assert!(ConfigError::MethodNotIdempotent(Method::Post)
            .to_string()
            .contains("Idempotency-Key"));
    }

    #[test]
    fn retry_only_methods_replaces_the_default_set() {
        let p = Policy::builder()
            .retry_only_methods(&[Method::Put])
            .build()
            .unwrap_or_default();
        assert!(p.retry_methods().contains(Method::Put));
        assert!(!p.retry_methods().contains(Method::Get));
    }
}
