//! Time as an input: the machine never reads a clock.
//!
//! Rule (so that every decision is reproducible): every method that needs the time takes `now`, and core only
//! ever compares instants the caller gave it. Two kinds of time appear:
//!
//! - [`Instant`]: a monotonic instant, the time since an epoch the caller chooses (for example
//!   the moment its own `std::time::Instant` clock was first read). All deadlines and waits are
//!   expressed in it.
//! - [`UnixTime`]: a wall-clock time, seconds since 1970-01-01T00:00:00Z. It is needed only to
//!   turn an HTTP-date `Retry-After` into a delay when the response has no `Date` header.

use core::time::Duration;

/// A monotonic instant: the time elapsed since an epoch chosen by the caller, at nanosecond
/// resolution.
///
/// Instants span about 584 years from the epoch (`u64` nanoseconds); all arithmetic saturates
/// there. An `Instant` never overflows and never panics.
///
/// ```
/// use backstop_core::Instant;
/// use core::time::Duration;
///
/// let t = Instant::from_millis(1_500);
/// assert_eq!(t.saturating_add(Duration::from_millis(500)), Instant::from_secs(2));
/// assert_eq!(Instant::ZERO.saturating_duration_since(t), Duration::ZERO);
/// assert_eq!(Instant::from_duration(Duration::MAX), Instant::MAX);
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The epoch itself.
    pub const ZERO: Instant = Instant(0);

    /// The latest representable instant, about 584 years after the epoch.
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `since_epoch` after the caller's epoch (saturating at [`Instant::MAX`]).
    #[must_use]
    #[inline]
    pub const fn from_duration(since_epoch: Duration) -> Self {
        Instant(nanos_saturating(since_epoch))
    }

    /// The instant `secs` seconds after the epoch.
    #[must_use]
    #[inline]
    pub const fn from_secs(secs: u64) -> Self {
        Instant(secs.saturating_mul(1_000_000_000))
    }

    /// The instant `millis` milliseconds after the epoch.
    #[must_use]
    #[inline]
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis.saturating_mul(1_000_000))
    }

    /// The instant `nanos` nanoseconds after the epoch.
    #[must_use]
    #[inline]
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// The time elapsed since the epoch.
    #[must_use]
    #[inline]
    pub const fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    #[must_use]
    #[inline]
    pub const fn saturating_add(self, d: Duration) -> Self {
        Instant(self.0.saturating_add(nanos_saturating(d)))
    }

    /// `self - earlier`, or zero when `earlier` is later than `self`.
    #[must_use]
    #[inline]
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Instant {
    /// Nanoseconds since the caller's epoch: the machine's arithmetic stays in integers and
    /// builds a `Duration` only for what it reports.
    #[inline]
    pub(crate) const fn nanos(self) -> u64 {
        self.0
    }
}

impl core::fmt::Debug for Instant {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Instant({:?})", self.as_duration())
    }
}

/// A duration in nanoseconds, saturating at `u64::MAX` (584 years).
#[inline]
pub(crate) const fn nanos_saturating(d: Duration) -> u64 {
    let n = d.as_nanos();
    if n > u64::MAX as u128 {
        u64::MAX
    } else {
        n as u64
    }
}

/// A wall-clock time: the time since 1970-01-01T00:00:00Z (the Unix epoch).
///
/// Core never reads the wall clock; a caller that wants HTTP-date `Retry-After` values honoured
/// on responses without a `Date` header passes its own reading (see
/// [`Response::wall_clock`](crate::Response::wall_clock)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(Duration);

impl UnixTime {
    /// The Unix epoch.
    pub const EPOCH: UnixTime = UnixTime(Duration::ZERO);

    /// The time `secs` seconds after the Unix epoch.
    #[must_use]
    pub const fn from_secs(secs: u64) -> Self {
        UnixTime(Duration::from_secs(secs))
    }

    /// The time `since_epoch` after the Unix epoch.
    #[must_use]
    pub const fn from_duration(since_epoch: Duration) -> Self {
        UnixTime(since_epoch)
    }

    /// The time since the Unix epoch.
    #[must_use]
    pub const fn as_duration(self) -> Duration {
        self.0
    }

    /// `self - earlier`, or zero when `earlier` is later (a date in the past means "now").
    #[must_use]
    pub const fn saturating_duration_since(self, earlier: UnixTime) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// Reads a [`std::time::SystemTime`]; times before 1970 become the epoch.
    #[cfg(feature = "std")]
    #[must_use]
    pub fn from_system_time(t: std::time::SystemTime) -> Self {
        UnixTime(
            t.duration_since(std::time::UNIX_EPOCH)
                .unwrap_or(Duration::ZERO),
        )
    }
}

#[cfg(feature = "std")]
impl From<std::time::SystemTime> for UnixTime {
    fn from(t: std::time::SystemTime) -> Self {
        UnixTime::from_system_time(t)
    }
}
