//! The delay before a retry when the server gave no `Retry-After`.
//!
//! Rule (the usual capped exponential backoff, AWS Architecture Blog 2015): for retry `n` (`n = 1` is the first
//! retry) the exponential delay is `min(cap, base * 2^(n-1))`, the linear delay
//! `min(cap, base * n)`, the constant delay `base`. Arithmetic saturates: attempt 10,000 gets
//! the cap, never an overflow. Jitter ([`crate::Jitter`]) is applied to this value afterwards and
//! never exceeds the cap.

use core::time::Duration;

/// How the delay grows from one retry to the next, before jitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backoff {
    /// `min(cap, base * 2^(n-1))`. The default, with base 300 ms and cap 5 s.
    Exponential {
        /// The first retry's delay.
        base: Duration,
        /// The largest delay.
        cap: Duration,
    },
    /// `min(cap, base * n)`.
    Linear {
        /// The first retry's delay and the step.
        base: Duration,
        /// The largest delay.
        cap: Duration,
    },
    /// The same delay before every retry.
    Constant(Duration),
}

impl Backoff {
    /// Exponential backoff from `base`, capped at `cap`.
    #[must_use]
    pub const fn exponential(base: Duration, cap: Duration) -> Self {
        Backoff::Exponential { base, cap }
    }

    /// Linear backoff in steps of `base`, capped at `cap`.
    #[must_use]
    pub const fn linear(base: Duration, cap: Duration) -> Self {
        Backoff::Linear { base, cap }
    }

    /// The same `delay` before every retry.
    #[must_use]
    pub const fn constant(delay: Duration) -> Self {
        Backoff::Constant(delay)
    }

    /// The first retry's delay.
    #[must_use]
    pub const fn base(&self) -> Duration {
        match *self {
            Backoff::Exponential { base, .. } | Backoff::Linear { base, .. } => base,
            Backoff::Constant(d) => d,
        }
    }

    /// The largest delay this backoff ever produces.
    #[must_use]
    pub const fn cap(&self) -> Duration {
        match *self {
            Backoff::Exponential { cap, .. } | Backoff::Linear { cap, .. } => cap,
            Backoff::Constant(d) => d,
        }
    }

    /// The delay before retry `retry` (1 for the first retry; 0 is treated as 1).
    ///
    /// ```
    /// use backstop_core::Backoff;
    /// use core::time::Duration;
    ///
    /// let b = Backoff::exponential(Duration::from_millis(300), Duration::from_secs(5));
    /// assert_eq!(b.delay(1), Duration::from_millis(300));
    /// assert_eq!(b.delay(3), Duration::from_millis(1_200));
    /// assert_eq!(b.delay(10_000), Duration::from_secs(5));
    /// ```
    #[must_use]
    pub fn delay(&self, retry: u32) -> Duration {
        let n = retry.max(1);
        match *self {
            Backoff::Exponential { base, cap } => {
                let shift = n - 1;
                if shift >= 64 {
                    return cap;
                }
                min_nanos(base.as_nanos().saturating_mul(1u128 << shift), cap)
            }
            Backoff::Linear { base, cap } => {
                min_nanos(base.as_nanos().saturating_mul(u128::from(n)), cap)
            }
            Backoff::Constant(d) => d,
        }
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::exponential(Duration::from_millis(300), Duration::from_secs(5))
    }
}

fn min_nanos(nanos: u128, cap: Duration) -> Duration {
    if nanos >= cap.as_nanos() {
        cap
    } else if let Ok(nanos) = u64::try_from(nanos) {
        // Every delay under 584 years: a division by a constant, not a 128-bit division.
        Duration::from_nanos(nanos)
    } else {
        // Below the cap, so it fits a Duration.
        Duration::new(
            (nanos / 1_000_000_000) as u64,
            (nanos % 1_000_000_000) as u32,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_backoff_never_overflows_at_attempt_ten_thousand() {
        let b = Backoff::exponential(Duration::from_secs(u64::MAX / 2), Duration::MAX);
        assert_eq!(b.delay(10_000), Duration::MAX);
        assert_eq!(b.delay(u32::MAX), Duration::MAX);
        let d = Backoff::default();
        assert_eq!(d.delay(64), Duration::from_secs(5));
        assert_eq!(d.delay(65), Duration::from_secs(5));
        assert_eq!(d.delay(10_000), Duration::from_secs(5));
    }

    #[test]
    fn linear_backoff_never_overflows() {
        let b = Backoff::linear(Duration::MAX, Duration::MAX);
        assert_eq!(b.delay(u32::MAX), Duration::MAX);
    }

    #[test]
    fn retry_zero_is_treated_as_the_first_retry() {
        let b = Backoff::default();
        assert_eq!(b.delay(0), b.delay(1));
    }
}
