//! Randomising a backoff delay so that clients that failed together do not retry together.
//!
//! Rule (Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015): with `d` the
//! backoff delay, full jitter (the default) waits `U[0, d]`, equal jitter `d/2 + U[0, d/2]`,
//! decorrelated jitter `min(cap, U[base, 3 * previous])` (with `previous` the last wait, starting
//! at `base`), and none waits `d`. Randomness is an input: the caller's `rand_core` RNG.
//! No jittered delay exceeds the backoff's cap.

use core::time::Duration;

use rand_core::Rng;

/// How a backoff delay is randomised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Jitter {
    /// Wait exactly the backoff delay.
    None,
    /// `U[0, d]`: the default.
    #[default]
    Full,
    /// `d/2 + U[0, d/2]`.
    Equal,
    /// `min(cap, U[base, 3 * previous])`, ignoring `d`.
    Decorrelated,
}

impl Jitter {
    /// The jittered delay. `d` is the backoff delay, `base` and `cap` the backoff's bounds,
    /// `previous` the previous wait (or `base` before the first retry).
    ///
    /// ```
    /// use backstop_core::Jitter;
    /// use core::time::Duration;
    /// use rand_core::SeedableRng;
    ///
    /// let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    /// let (d, base, cap) = (Duration::from_secs(2), Duration::from_millis(300), Duration::from_secs(5));
    /// let w = Jitter::Equal.apply(d, base, cap, base, &mut rng);
    /// assert!(w >= Duration::from_secs(1) && w <= d);
    /// ```
    #[must_use]
    pub fn apply<R: Rng + ?Sized>(
        self,
        d: Duration,
        base: Duration,
        cap: Duration,
        previous: Duration,
        rng: &mut R,
    ) -> Duration {
        match self {
            Jitter::None => d,
            Jitter::Full => uniform(rng, Duration::ZERO, d),
            Jitter::Equal => {
                let half = d / 2;
                half.saturating_add(uniform(rng, Duration::ZERO, d.saturating_sub(half)))
            }
            Jitter::Decorrelated => {
                let hi = previous.saturating_mul(3).max(base);
                uniform(rng, base, hi).min(cap)
            }
        }
    }
}

/// A uniform draw from `[lo, hi]` (inclusive, `lo <= hi` assumed; otherwise `lo`), at
/// nanosecond resolution. Spans beyond `u64::MAX` nanoseconds (584 years) are clamped to it.
pub(crate) fn uniform<R: Rng + ?Sized>(rng: &mut R, lo: Duration, hi: Duration) -> Duration {
    let span = hi.saturating_sub(lo).as_nanos();
    if span == 0 {
        return lo;
    }
    let span = u64::try_from(span).unwrap_or(u64::MAX);
    lo.saturating_add(Duration::from_nanos(uniform_nanos(rng, span)))
}

/// A uniform draw in `[0, span]` nanoseconds; no draw (and no randomness used) when `span` is 0.
#[inline]
pub(crate) fn uniform_nanos<R: Rng + ?Sized>(rng: &mut R, span: u64) -> u64 {
    if span == 0 {
        return 0;
    }
    uniform_nanos_nonzero(rng, span)
}

/// [`uniform_nanos`] for a `span` known not to be 0.
#[inline]
pub(crate) fn uniform_nanos_nonzero<R: Rng + ?Sized>(rng: &mut R, span: u64) -> u64 {
    debug_assert!(span != 0, "a zero span draws nothing");
    // Lemire's multiply-shift: a bias of at most 2^-64, and no loop. The high word of
    // `x * (span + 1)` is that of `x * span + x`: one 64-bit multiply and a carry.
    let x = rng.next_u64();
    let product = u128::from(x) * u128::from(span);
    let (_, carry) = (product as u64).overflowing_add(x);
    (product >> 64) as u64 + u64::from(carry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn uniform_draws_cover_both_ends_of_a_small_range() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let (lo, hi) = (Duration::from_nanos(5), Duration::from_nanos(7));
        let mut seen = [false; 3];
        for _ in 0..1_000 {
            let d = uniform(&mut rng, lo, hi);
            assert!(d >= lo && d <= hi);
            if let Some(slot) = seen.get_mut((d.as_nanos() - 5) as usize) {
                *slot = true;
            }
        }
        assert_eq!(seen, [true; 3]);
    }

    #[test]
    fn uniform_with_an_inverted_or_empty_range_returns_the_low_end() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let d = Duration::from_secs(3);
        assert_eq!(uniform(&mut rng, d, d), d);
        assert_eq!(uniform(&mut rng, d, Duration::from_secs(1)), d);
    }

    #[test]
    fn jitter_stays_under_the_cap_even_from_saturated_inputs() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
        let (base, cap) = (Duration::from_secs(1), Duration::from_secs(10));
        for j in [
            Jitter::None,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
        ] {
            for _ in 0..100 {
                // `previous` at its largest: 3 * previous saturates instead of overflowing.
                let w = j.apply(cap, base, cap, Duration::MAX, &mut rng);
                assert!(w <= cap, "{j:?}: {w:?}");
            }
        }
    }
}
