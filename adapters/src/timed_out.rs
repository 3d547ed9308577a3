//! The error of an attempt that the loop's own timer ended.
//!
//! Rule: the caller's classification override sees every attempt error, so an attempt that
//! the loop timed out (rather than the client) needs an error value of its own to be shown.

use core::fmt;
use core::time::Duration;

/// An attempt that the retry loop gave up on when its timeout passed, before the client
/// answered or failed. This is the error the [`Retrier::classify`](crate::Retrier::classify)
/// override is given for the loop's own timeout (a client that enforces its timeouts itself
/// reports its own error instead).
///
/// ```
/// use backstop::classify::ErrorClass;
/// use backstop::ErrorKind;
/// use backstop::transport::AttemptTimedOut;
/// use backstop::Retrier;
///
/// // Never retry an attempt the loop timed out; other timeouts keep their class.
/// let retrier = Retrier::default().classify(|kind, error| {
///     (kind == ErrorKind::Timeout && error.is::<AttemptTimedOut>())
///         .then_some(ErrorClass::Permanent)
/// });
/// # drop(retrier);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttemptTimedOut {
    attempt: u32,
    timeout: Duration,
}

impl AttemptTimedOut {
    /// Attempt `attempt`, given up on after `timeout`.
    pub(crate) const fn new(attempt: u32, timeout: Duration) -> Self {
        AttemptTimedOut { attempt, timeout }
    }

    /// The attempt's number; the first is 1.
    #[must_use]
    pub const fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The timeout the attempt ran into (already cut to the operation's deadline).
    #[must_use]
    pub const fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl fmt::Display for AttemptTimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "attempt {} timed out after {} ms",
            self.attempt,
            self.timeout.as_millis()
        )
    }
}

impl std::error::Error for AttemptTimedOut {}
