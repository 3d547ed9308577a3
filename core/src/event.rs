//! What the driver tells the machine: the one input funnel.
//!
//! Rule: one input enum, so every change to the machine enters through one door. Each event is plain data; a response carries only the
//! parts that bear on a retry (its status, `Retry-After`, `Date`, the rate-limit fields), never
//! its body.

use crate::classify::AttemptError;
use crate::grpc::Pushback;
use crate::method::Method;
use crate::status::ResponseClass;
use crate::time::UnixTime;

/// The facts about a request that decide whether it may be retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    /// The request method.
    pub method: Method,
    /// Whether the request carries a usable `Idempotency-Key` (the same on every attempt): see
    /// [`is_idempotency_key`].
    pub has_idempotency_key: bool,
    /// Whether the request's body can be sent again (bytes, or a factory). A streamed body is
    /// consumed by its one attempt: such a request is never retried.
    pub has_replayable_body: bool,
}

impl Request {
    /// A request with `method`, no `Idempotency-Key`, and a body that can be sent again (or
    /// none).
    #[must_use]
    pub const fn new(method: Method) -> Self {
        Request {
            method,
            has_idempotency_key: false,
            has_replayable_body: true,
        }
    }

    /// The same request, with a body that can (or cannot) be sent again.
    #[must_use]
    pub const fn with_replayable_body(mut self, yes: bool) -> Self {
        self.has_replayable_body = yes;
        self
    }

    /// The same request, carrying (or not) an `Idempotency-Key`.
    #[must_use]
    pub const fn with_idempotency_key(mut self, yes: bool) -> Self {
        self.has_idempotency_key = yes;
        self
    }

    /// The same request, with the raw value of its `Idempotency-Key` field (`None`: no such
    /// field). A value that [`is_idempotency_key`] refuses (empty, or only whitespace) is no
    /// key.
    ///
    /// ```
    /// use backstop_core::{Method, Request};
    ///
    /// let post = Request::new(Method::Post);
    /// assert!(post.with_idempotency_key_value(Some(b"7f3e")).has_idempotency_key);
    /// assert!(!post.with_idempotency_key_value(Some(b"  ")).has_idempotency_key);
    /// assert!(!post.with_idempotency_key_value(None).has_idempotency_key);
    /// ```
    #[must_use]
    pub const fn with_idempotency_key_value(self, value: Option<&[u8]>) -> Self {
        self.with_idempotency_key(match value {
            Some(v) => is_idempotency_key(v),
            None => false,
        })
    }
}

/// Whether the raw value of an `Idempotency-Key` field is a key a server can deduplicate on.
///
/// Rule (draft-ietf-httpapi-idempotency-key-header §2: the key is a unique identifier of the
/// request; an empty identifier identifies nothing): a value that is empty or made only of
/// whitespace (space, tab, CR, LF, VT, FF) is no key, and a POST or PATCH carrying it is not
/// retried once it may have reached the server
/// ([`StopReason::NoIdempotencyKey`](crate::StopReason::NoIdempotencyKey)). Any other value is a
/// key, as sent: backstop does not judge its format.
///
/// ```
/// use backstop_core::is_idempotency_key;
///
/// assert!(is_idempotency_key(b"8e03978e-40d5-43e8-bc93-6894a57f9324"));
/// assert!(is_idempotency_key(b" x "));
/// assert!(!is_idempotency_key(b""));
/// assert!(!is_idempotency_key(b" \t "));
/// ```
#[must_use]
pub const fn is_idempotency_key(value: &[u8]) -> bool {
    let mut rest = value;
    while let [b, tail @ ..] = rest {
        if !matches!(*b, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c) {
            return true;
        }
        rest = tail;
    }
    false
}

/// The parts of a response that bear on a retry.
///
/// ```
/// use backstop_core::{Response, UnixTime};
///
/// let r = Response::new(503)
///     .retry_after(b"Sun, 06 Nov 1994 08:49:47 GMT")
///     .date(b"Sun, 06 Nov 1994 08:49:37 GMT")
///     .wall_clock(UnixTime::from_secs(1_700_000_000));
/// assert_eq!(r.status, 503);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Response<'a> {
    /// The status code.
    pub status: u16,
    /// The raw `Retry-After` field value, if the response has exactly one.
    pub retry_after: Option<&'a [u8]>,
    /// The raw `Date` field value, if any: the reference for an HTTP-date `Retry-After`.
    pub date: Option<&'a [u8]>,
    /// The client's wall clock when the response arrived: the reference for an HTTP-date
    /// `Retry-After` when the response has no usable `Date`. Without either, an HTTP-date
    /// `Retry-After` is ignored (the backoff applies). Also the reference of a Unix-time
    /// `X-RateLimit-Reset`.
    pub wall_clock: Option<UnixTime>,
    /// The raw `RateLimit` field value (a structured-field List), if the response has exactly
    /// one field line. See [`parse_rate_limit`](crate::parse_rate_limit).
    pub rate_limit: Option<&'a [u8]>,
    /// The raw `RateLimit-Policy` field value, if exactly one: the windows that stand in for a
    /// `RateLimit` policy without a reset.
    pub rate_limit_policy: Option<&'a [u8]>,
    /// The raw `RateLimit-Reset` field value (delay-seconds), if exactly one.
    pub rate_limit_reset: Option<&'a [u8]>,
    /// The raw `RateLimit-Remaining` field value, if exactly one: the quota left of the
    /// quota `RateLimit-Reset` belongs to (see the crate's rate-limit rule).
    pub rate_limit_remaining: Option<&'a [u8]>,
    /// The raw `X-RateLimit-Reset-After` field value (delay-seconds), if exactly one.
    pub x_rate_limit_reset_after: Option<&'a [u8]>,
    /// The raw `X-RateLimit-Reset` field value, if exactly one: Unix time or delay-seconds, as
    /// the policy says ([`XRateLimitReset`](crate::XRateLimitReset)).
    pub x_rate_limit_reset: Option<&'a [u8]>,
    /// The raw `X-RateLimit-Remaining` field value, if exactly one: the quota left of the
    /// quota `X-RateLimit-Reset` and `X-RateLimit-Reset-After` belong to.
    pub x_rate_limit_remaining: Option<&'a [u8]>,
    /// Whether it is retryable: by the policy's status set (the default), or as the caller
    /// decided from the rest of the response ([`ResponseClass`]).
    pub class: ResponseClass,
    /// The server's gRPC pushback (`grpc-retry-pushback-ms`), if it sent one. On a retryable
    /// response it replaces every other delay: the next attempt waits exactly its value, or
    /// none follows ([`Pushback::Stop`]).
    pub pushback: Option<Pushback>,
}

impl<'a> Response<'a> {
    /// A response with `status` and no fields.
    #[must_use]
    pub const fn new(status: u16) -> Self {
        Response {
            status,
            retry_after: None,
            date: None,
            wall_clock: None,
            rate_limit: None,
            rate_limit_policy: None,
            rate_limit_reset: None,
            x_rate_limit_reset_after: None,
            x_rate_limit_reset: None,
            rate_limit_remaining: None,
            x_rate_limit_remaining: None,
            class: ResponseClass::ByStatus,
            pushback: None,
        }
    }

    /// With the server's gRPC pushback ([`Pushback::parse`]).
    #[must_use]
    pub const fn pushback(mut self, pushback: Pushback) -> Self {
        self.pushback = Some(pushback);
        self
    }

    /// With the caller's word on whether it is retryable (default:
    /// [`ResponseClass::ByStatus`]).
    ///
    /// ```
    /// use backstop_core::{Response, ResponseClass};
    ///
    /// // A 200 whose body said "not ready yet": retried like a 503.
    /// let r = Response::new(200).class(ResponseClass::Retryable);
    /// assert_eq!(r.class, ResponseClass::Retryable);
    /// ```
    #[must_use]
    pub const fn class(mut self, class: ResponseClass) -> Self {
        self.class = class;
        self
    }

    /// With a raw `Retry-After` value.
    #[must_use]
    pub const fn retry_after(mut self, value: &'a [u8]) -> Self {
        self.retry_after = Some(value);
        self
    }

    /// With a raw `Date` value.
    #[must_use]
    pub const fn date(mut self, value: &'a [u8]) -> Self {
        self.date = Some(value);
        self
    }

    /// With the client's wall clock at arrival.
    #[must_use]
    pub const fn wall_clock(mut self, now: UnixTime) -> Self {
        self.wall_clock = Some(now);
        self
    }

    /// With a raw `RateLimit` value, such as `"default";r=0;t=10`.
    #[must_use]
    pub const fn rate_limit(mut self, value: &'a [u8]) -> Self {
        self.rate_limit = Some(value);
        self
    }

    /// With a raw `RateLimit-Policy` value, such as `"default";q=100;w=60`.
    #[must_use]
    pub const fn rate_limit_policy(mut self, value: &'a [u8]) -> Self {
        self.rate_limit_policy = Some(value);
        self
    }

    /// With a raw `RateLimit-Reset` value (delay-seconds).
    #[must_use]
    pub const fn rate_limit_reset(mut self, value: &'a [u8]) -> Self {
        self.rate_limit_reset = Some(value);
        self
    }

    /// With a raw `X-RateLimit-Reset-After` value (delay-seconds).
    #[must_use]
    pub const fn x_rate_limit_reset_after(mut self, value: &'a [u8]) -> Self {
        self.x_rate_limit_reset_after = Some(value);
        self
    }

    /// With a raw `X-RateLimit-Reset` value (Unix time or delay-seconds, as the policy says).
    #[must_use]
    pub const fn x_rate_limit_reset(mut self, value: &'a [u8]) -> Self {
        self.x_rate_limit_reset = Some(value);
        self
    }

    /// With a raw `RateLimit-Remaining` value, such as `0`.
    #[must_use]
    pub const fn rate_limit_remaining(mut self, value: &'a [u8]) -> Self {
        self.rate_limit_remaining = Some(value);
        self
    }

    /// With a raw `X-RateLimit-Remaining` value, such as `4999`.
    #[must_use]
    pub const fn x_rate_limit_remaining(mut self, value: &'a [u8]) -> Self {
        self.x_rate_limit_remaining = Some(value);
        self
    }
}

/// An input to the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event<'a> {
    /// The attempt the machine asked for ([`Decision::Send`](crate::Decision::Send)) has
    /// started.
    AttemptStarted,
    /// The attempt in flight got a response (its head; the body is the driver's business).
    Response(Response<'a>),
    /// The attempt in flight failed without a response.
    Error(AttemptError),
    /// Time passed (a timer fired). Only `now` matters.
    TimePassed,
    /// The caller cancelled the operation. No attempt follows.
    Abort,
}

/// An event that does not fit the machine's state: a driver bug, reported instead of a panic.
/// The machine's state is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MisuseError {
    /// [`Event::AttemptStarted`] arrived, but the machine had not decided to send.
    NoSendPending,
    /// A response or error arrived, but no attempt was in flight (it may already have timed
    /// out).
    NoAttemptInFlight,
    /// A hedging driver reported a copy cancelled that the machine had not told it to cancel.
    NoCancelPending,
    /// A body failure arrived ([`RetryMachine::body_failed`](crate::RetryMachine::body_failed)),
    /// but the machine had not returned a response.
    NoResponseReturned,
}

impl core::fmt::Display for MisuseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            MisuseError::NoSendPending => {
                "attempt started, but the machine had not decided to send"
            }
            MisuseError::NoAttemptInFlight => {
                "response or error for an attempt that is not in flight"
            }
            MisuseError::NoCancelPending => {
                "copy reported cancelled, but the machine had not asked to cancel it"
            }
            MisuseError::NoResponseReturned => {
                "body failure reported, but the machine had not returned a response"
            }
        })
    }
}

impl core::error::Error for MisuseError {}
