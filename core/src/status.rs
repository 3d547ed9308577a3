//! Which response statuses are transient and worth another attempt.
//!
//! Rule (RFC 9110 §15, RFC 6585 §4, RFC 8470 §5.2): by default only
//! 408 Request Timeout, 425 Too Early, 429 Too Many Requests, 500 Internal Server Error,
//! 502 Bad Gateway, 503 Service Unavailable and 504 Gateway Timeout are retried. Every other
//! status, 400, 401, 403 and 404 among them, goes straight back to the caller, with one
//! exception: a 403 that is a rate-limit answer (its quota exhausted, or a `Retry-After`) is
//! retried like a 429 (see [`PolicyBuilder::rate_limit_fields`](crate::PolicyBuilder::rate_limit_fields)).

/// The lowest status code a set can hold.
const FIRST: u16 = 100;
/// The highest status code a set can hold (RFC 9110 §15: three digits, first digit 1 to 5).
const LAST: u16 = 599;
/// Bit `n` is status `n` (the bits below `FIRST` stay clear): a lookup is one comparison, a
/// shift and a load, with no offset to subtract.
const WORDS: usize = (LAST as usize) / 64 + 1;

/// A set of HTTP status codes (100 to 599), stored as a fixed-size bitset.
///
/// ```
/// use backstop_core::StatusSet;
///
/// let set = StatusSet::DEFAULT_RETRYABLE;
/// assert!(set.contains(503));
/// assert!(!set.contains(404));
/// assert!(!set.contains(1_000)); // out of range: never a member
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StatusSet([u64; WORDS]);

impl StatusSet {
    /// The empty set.
    pub const EMPTY: StatusSet = StatusSet([0; WORDS]);

    /// 408, 425, 429, 500, 502, 503, 504.
    pub const DEFAULT_RETRYABLE: StatusSet = StatusSet::EMPTY
        .with_const(408)
        .with_const(425)
        .with_const(429)
        .with_const(500)
        .with_const(502)
        .with_const(503)
        .with_const(504);

    /// Whether a status code is a valid member (100 to 599).
    #[must_use]
    pub const fn in_range(status: u16) -> bool {
        status >= FIRST && status <= LAST
    }

    /// Whether `status` is in the set. Statuses outside 100 to 599 never are.
    #[must_use]
    pub const fn contains(&self, status: u16) -> bool {
        // Below `FIRST` the bits are clear: one comparison.
        let i = status as usize;
        if i > LAST as usize {
            return false;
        }
        // `status <= LAST`, so `i / 64 < WORDS`.
        #[allow(clippy::indexing_slicing)]
        let word = self.0[i / 64];
        word & (1 << (i % 64)) != 0
    }

    /// Builds a set from a slice. Returns the first out-of-range code as the error.
    ///
    /// ```
    /// use backstop_core::StatusSet;
    ///
    /// assert!(StatusSet::try_from_codes(&[429, 503]).is_ok());
    /// assert_eq!(StatusSet::try_from_codes(&[429, 99]), Err(99));
    /// ```
    pub fn try_from_codes(codes: &[u16]) -> Result<Self, u16> {
        let mut set = StatusSet::EMPTY;
        for &code in codes {
            if !Self::in_range(code) {
                return Err(code);
            }
            set = set.with_const(code);
        }
        Ok(set)
    }

    /// Callers pass only codes in `FIRST..=LAST` (checked by `in_range`).
    #[allow(clippy::indexing_slicing)]
    pub(crate) const fn with_const(mut self, status: u16) -> Self {
        let i = status as usize;
        self.0[i / 64] |= 1 << (i % 64);
        self
    }

    /// Callers pass only codes in `FIRST..=LAST` (checked by `in_range`).
    #[allow(clippy::indexing_slicing)]
    pub(crate) const fn without_const(mut self, status: u16) -> Self {
        let i = status as usize;
        self.0[i / 64] &= !(1 << (i % 64));
        self
    }
}

/// The caller's word on one response: whether it is a failure worth another attempt, decided
/// by something other than its status (a `200` whose body or header says "try again", a `404`
/// that one endpoint answers until a resource exists, a `503` the caller wants back at once).
///
/// Only which responses are retryable changes: every other rule still holds for a
/// [`Retryable`](Self::Retryable) response (the methods and idempotency keys, the attempts,
/// the deadline, the budget, `Retry-After` and the rate-limit fields).
///
/// ```
/// use backstop_core::{ResponseClass, StatusSet};
///
/// let set = StatusSet::DEFAULT_RETRYABLE;
/// assert!(ResponseClass::ByStatus.is_retryable(503, &set));
/// assert!(ResponseClass::Retryable.is_retryable(200, &set));
/// assert!(!ResponseClass::Final.is_retryable(503, &set));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResponseClass {
    /// Retryable when the policy's status set holds its status (the default).
    #[default]
    ByStatus,
    /// Retryable, whatever its status.
    Retryable,
    /// Returned to the caller, whatever its status.
    Final,
    /// Returned to the caller, whatever its status, as an error: a budget counts it neither
    /// as a success nor as a failure, as a final 4xx. A gRPC answer with a code other than
    /// `OK` that the policy does not retry is one ([`grpc::RetryPolicy::class`](crate::grpc::RetryPolicy::class)).
    FinalError,
}

impl ResponseClass {
    /// Whether a response of this class with `status` is retryable under `statuses`.
    #[must_use]
    #[inline]
    pub const fn is_retryable(self, status: u16, statuses: &StatusSet) -> bool {
        match self {
            ResponseClass::ByStatus => statuses.contains(status),
            ResponseClass::Retryable => true,
            ResponseClass::Final | ResponseClass::FinalError => false,
        }
    }
}

impl Default for StatusSet {
    fn default() -> Self {
        StatusSet::DEFAULT_RETRYABLE
    }
}
