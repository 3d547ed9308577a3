//! The delay before a retry when the server gave no `Retry-After`.
//!
//! Rule (the usual capped exponential backoff, AWS Architecture Blog 2015): for retry `n` (`n = 1` is the first
//! retry) the exponential delay is `min(cap, base * 2^(n-1))`, the linear delay
//! `min(cap, base * n)`, the constant delay `base`, the geometric delay (gRFC A6's
//! `initialBackoff`, `backoffMultiplier`, `maxBackoff`) `min(cap, base * multiplier^(n-1))`.
//! Arithmetic saturates: attempt 10,000 gets
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
    /// `min(cap, base * multiplier^(n-1))`: gRFC A6's backoff, whose multiplier need not be 2.
    Geometric {
        /// The first retry's delay (A6's `initialBackoff`).
        base: Duration,
        /// The growth from one retry to the next (A6's `backoffMultiplier`).
        multiplier: Multiplier,
        /// The largest delay (A6's `maxBackoff`).
        cap: Duration,
    },
}

/// A backoff's growth factor: a finite number above zero (gRFC A6: `backoffMultiplier` "must
/// be greater than zero"). Below 1 the delay shrinks from one retry to the next.
///
/// ```
/// use backstop_core::Multiplier;
///
/// assert_eq!(Multiplier::new(1.5).map(Multiplier::get), Some(1.5));
/// assert!(Multiplier::new(0.0).is_none());
/// assert!(Multiplier::new(f64::NAN).is_none());
/// assert!(Multiplier::new(f64::INFINITY).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Multiplier {
    /// The bits of a finite `f64` above zero: so the type is `Eq` and `Hash`.
    bits: u64,
}

impl Multiplier {
    /// The factor `value`, if it is finite and above zero.
    #[must_use]
    pub fn new(value: f64) -> Option<Self> {
        (value.is_finite() && value > 0.0).then_some(Multiplier {
            bits: value.to_bits(),
        })
    }

    /// The factor.
    #[must_use]
    pub fn get(self) -> f64 {
        f64::from_bits(self.bits)
    }

    /// `self^exponent`, by squaring (`powi` needs `std`); saturates to infinity.
    fn pow(self, mut exponent: u32) -> f64 {
        let (mut result, mut square) = (1.0f64, self.get());
        while exponent > 0 {
            if exponent & 1 == 1 {
                result *= square;
            }
            square *= square;
            exponent >>= 1;
        }
        result
    }
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

    /// Geometric backoff from `base`, growing by `multiplier`, capped at `cap`: gRFC A6's
    /// `initialBackoff`, `backoffMultiplier` and `maxBackoff`.
    ///
    /// ```
    /// use backstop_core::{Backoff, Multiplier};
    /// use core::time::Duration;
    ///
    /// let m = Multiplier::new(1.5).ok_or("not a multiplier")?;
    /// let b = Backoff::geometric(Duration::from_millis(100), m, Duration::from_secs(1));
    /// assert_eq!(b.delay(1), Duration::from_millis(100));
    /// assert_eq!(b.delay(3), Duration::from_millis(225));
    /// assert_eq!(b.delay(10_000), Duration::from_secs(1));
    /// # Ok::<(), &str>(())
    /// ```
    #[must_use]
    pub const fn geometric(base: Duration, multiplier: Multiplier, cap: Duration) -> Self {
        Backoff::Geometric {
            base,
            multiplier,
            cap,
        }
    }

    /// The first retry's delay.
    #[must_use]
    pub const fn base(&self) -> Duration {
        match *self {
            Backoff::Exponential { base, .. }
            | Backoff::Linear { base, .. }
            | Backoff::Geometric { base, .. } => base,
            Backoff::Constant(d) => d,
        }
    }

    /// The largest delay this backoff ever produces.
    #[must_use]
    pub const fn cap(&self) -> Duration {
        match *self {
            Backoff::Exponential { cap, .. }
            | Backoff::Linear { cap, .. }
            | Backoff::Geometric { cap, .. } => cap,
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
            Backoff::Geometric {
                base,
                multiplier,
                cap,
            } => geometric(base, multiplier.pow(n - 1), cap),
        }
    }
}

/// `min(cap, base * factor)`, exact to the nanosecond for the usual values (a float's 53
/// bits hold every delay under 104 days).
fn geometric(base: Duration, factor: f64, cap: Duration) -> Duration {
    let nanos = base.as_nanos() as f64 * factor;
    if nanos.is_nan() {
        // An infinite factor times a zero base: a zero base stays zero.
        return Duration::ZERO;
    }
    if nanos >= cap.as_nanos() as f64 {
        return cap;
    }
    // Below the cap, so below u128's range; rounded to the nearest nanosecond.
    min_nanos((nanos + 0.5) as u128, cap)
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
    fn geometric_backoff_grows_by_its_multiplier_and_never_overflows() {
        let m = |v| Multiplier::new(v).unwrap_or_else(|| unreachable!("{v} is a multiplier"));
        let ms = Duration::from_millis;
        let b = Backoff::geometric(ms(10), m(2.0), ms(1_000));
        assert_eq!(b.delay(1), ms(10));
        assert_eq!(b.delay(4), ms(80));
        assert_eq!(b.delay(8), ms(1_000));
        assert_eq!(b.delay(u32::MAX), ms(1_000));
        let shrinking = Backoff::geometric(ms(100), m(0.5), ms(100));
        assert_eq!(shrinking.delay(2), ms(50));
        assert_eq!(shrinking.delay(u32::MAX), Duration::ZERO);
        let huge = Backoff::geometric(Duration::MAX, m(f64::MAX), Duration::MAX);
        assert_eq!(huge.delay(u32::MAX), Duration::MAX);
        let zero = Backoff::geometric(Duration::ZERO, m(f64::MAX), ms(5));
        assert_eq!(zero.delay(u32::MAX), Duration::ZERO);
        // A multiplier of 1 is the constant backoff (grpc-go's tests use it).
        let one = Backoff::geometric(ms(10), m(1.0), ms(10));
        assert_eq!(one.delay(3), ms(10));
    }

    #[test]
    fn retry_zero_is_treated_as_the_first_retry() {
        let b = Backoff::default();
        assert_eq!(b.delay(0), b.delay(1));
    }
}
