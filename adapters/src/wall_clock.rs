//! The wall clock, injected.
//!
//! Rule (RFC 9110 §10.2.3, §6.6.1): an HTTP-date `Retry-After` is measured against the response's
//! `Date` when it has one, else against the caller's wall clock. The wall clock is an input so that
//! a test can skew it and prove that the server's `Date` wins.

use core::time::Duration;

use backstop_core::UnixTime;

/// A source of wall-clock time.
pub trait WallClock: Send + Sync {
    /// The current wall-clock time.
    fn now(&self) -> UnixTime;
}

/// The system's wall clock (`std::time::SystemTime`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl WallClock for SystemClock {
    fn now(&self) -> UnixTime {
        UnixTime::from_system_time(std::time::SystemTime::now())
    }
}

/// The system's wall clock, ahead of (or behind) the truth by a fixed amount: a client whose
/// clock is wrong.
///
/// ```
/// use backstop::runtime::{SkewedClock, SystemClock, WallClock};
/// use std::time::Duration;
///
/// let ahead = SkewedClock::ahead(Duration::from_secs(3600));
/// assert!(ahead.now() > SystemClock.now());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SkewedClock {
    ahead: bool,
    by: Duration,
}

impl SkewedClock {
    /// A clock `by` ahead of the system clock.
    #[must_use]
    pub const fn ahead(by: Duration) -> Self {
        SkewedClock { ahead: true, by }
    }

    /// A clock `by` behind the system clock.
    #[must_use]
    pub const fn behind(by: Duration) -> Self {
        SkewedClock { ahead: false, by }
    }
}

impl WallClock for SkewedClock {
    fn now(&self) -> UnixTime {
        let t = SystemClock.now().as_duration();
        UnixTime::from_duration(if self.ahead {
            t.saturating_add(self.by)
        } else {
            t.saturating_sub(self.by)
        })
    }
}
