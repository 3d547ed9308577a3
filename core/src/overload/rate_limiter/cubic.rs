//! The CUBIC rate curve of AWS's adaptive retry mode, as pure functions of `f64` seconds.

/// The CUBIC curve the [`AdaptiveRateLimiter`](crate::AdaptiveRateLimiter) follows: a value
/// (`Copy`, no interior mutability) holding the rate when the client was last throttled
/// (`last_max`, tokens per second), when that was (`last_throttle`, seconds on the caller's
/// clock) and the decrease factor `beta`.
///
/// Rule (botocore's `CubicCalculator`, smithy-rs's and aws-sdk-go-v2's adaptive rate limiters;
/// TCP CUBIC, RFC 9438, with the SDKs' constants):
///
/// - a throttle at rate `r` and time `t` makes `last_max = r`, `last_throttle = t` and returns
///   the reduced rate `beta * r` ([`throttle`](Cubic::throttle));
/// - a success at time `t` returns `SCALE * (t - last_throttle - K)^3 + last_max`
///   ([`success`](Cubic::success)), where `K = cbrt(last_max * (1 - beta) / SCALE)`
///   ([`k`](Cubic::k)) is the time the curve takes to climb back to `last_max`: it starts at
///   `beta * last_max` right after the throttle, flattens out around `last_max`, then probes
///   above it ever faster.
///
/// ```
/// use backstop_core::Cubic;
///
/// let mut cubic = Cubic::new(10.0, 0.0);
/// assert_eq!(cubic.throttle(10.0, 5.0), 7.0); // beta = 0.7
/// assert!((cubic.success(5.0) - 7.0).abs() < 1e-9); // starts at beta * last_max
/// assert!((cubic.success(5.0 + cubic.k()) - 10.0).abs() < 1e-9); // back to last_max after K
/// assert!(cubic.success(8.0) > 10.0); // then probes above it
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cubic {
    last_max: f64,
    last_throttle: f64,
    beta: f64,
}

impl Cubic {
    /// How fast the curve climbs (the SDKs' `scale_constant`, CUBIC's `C`): 0.4.
    pub const SCALE: f64 = 0.4;

    /// The SDKs' decrease factor on a throttle: 0.7.
    pub const BETA: f64 = 0.7;

    /// The curve after a throttle at rate `last_max` (tokens per second) at `last_throttle`
    /// (seconds), with [`BETA`](Cubic::BETA).
    #[must_use]
    pub const fn new(last_max: f64, last_throttle: f64) -> Self {
        Cubic {
            last_max,
            last_throttle,
            beta: Cubic::BETA,
        }
    }

    /// The same curve with the decrease factor `beta`, which is cut into `[0, 1]` (`1` never
    /// decreases, `0` drops to nothing); a NaN keeps [`BETA`](Cubic::BETA).
    #[must_use]
    pub const fn with_beta(mut self, beta: f64) -> Self {
        self.beta = if beta.is_nan() {
            Cubic::BETA
        } else if beta < 0.0 {
            0.0
        } else if beta > 1.0 {
            1.0
        } else {
            beta
        };
        self
    }

    /// The rate when the client was last throttled, in tokens per second.
    #[must_use]
    pub const fn last_max(&self) -> f64 {
        self.last_max
    }

    /// When the client was last throttled, in seconds on the caller's clock.
    #[must_use]
    pub const fn last_throttle(&self) -> f64 {
        self.last_throttle
    }

    /// The decrease factor.
    #[must_use]
    pub const fn beta(&self) -> f64 {
        self.beta
    }

    /// `K = cbrt(last_max * (1 - beta) / SCALE)`: the seconds the curve takes after the
    /// throttle to climb back to `last_max` (botocore's `k`, smithy-rs's time window).
    #[must_use]
    pub fn k(&self) -> f64 {
        cbrt(self.last_max * (1.0 - self.beta) / Cubic::SCALE)
    }

    /// The rate after a success at `t` seconds: `SCALE * (t - last_throttle - K)^3 + last_max`.
    #[must_use]
    pub fn success(&self, t: f64) -> f64 {
        let dt = t - self.last_throttle - self.k();
        Cubic::SCALE * (dt * dt * dt) + self.last_max
    }

    /// A throttle while sending at `rate` at `t` seconds: the curve restarts from it
    /// (`last_max = rate`, `last_throttle = t`), and the rate to send at now is
    /// `beta * rate`, which this returns.
    pub fn throttle(&mut self, rate: f64, t: f64) -> f64 {
        self.last_max = rate;
        self.last_throttle = t;
        rate * self.beta
    }
}

/// The cube root of `x` within an ulp or two: `core` has no `cbrt` without `std`.
///
/// A first guess from the exponent bits (a third of the logarithm, about 3% off), then Newton's
/// iteration `y = (2y + x / y²) / 3`, which squares the relative error at each step (five steps
/// reach the precision of `f64` from 3%, six leave a margin), and a last step that keeps the
/// closer of the two neighbours. Negative numbers give the negative root; zeros, infinities and
/// NaN are returned as they are; subnormals are scaled into the normal range first.
pub(crate) fn cbrt(x: f64) -> f64 {
    if x == 0.0 || x.is_nan() || x.is_infinite() {
        return x;
    }
    if x < 0.0 {
        return -cbrt(-x);
    }
    if x < f64::MIN_POSITIVE {
        // 2^54 is a cube (2^18 cubed): scale into the normal range and back.
        const TWO_54: f64 = 18_014_398_509_481_984.0;
        const TWO_18: f64 = 262_144.0;
        return cbrt(x * TWO_54) / TWO_18;
    }
    const ONE: u64 = 0x3FF0_0000_0000_0000; // the bits of 1.0
                                            // The bits of a positive normal float are close to a scaled, offset log2: a third of the
                                            // distance from 1.0's bits is close to the cube root's.
    let bits = x.to_bits();
    let guess = if bits >= ONE {
        ONE + (bits - ONE) / 3
    } else {
        ONE - (ONE - bits) / 3
    };
    let mut y = f64::from_bits(guess);
    let mut step = 0;
    while step < 6 {
        y = (2.0 * y + x / (y * y)) / 3.0;
        step += 1;
    }
    // Newton's fixed point in floats may sit one ulp off: keep the neighbour whose cube is
    // closest to `x` (the cubes of numbers this close are computed to about an ulp).
    let below = f64::from_bits(y.to_bits() - 1);
    let above = f64::from_bits(y.to_bits() + 1);
    let miss = |r: f64| {
        let d = r * r * r - x;
        if d < 0.0 {
            -d
        } else {
            d
        }
    };
    let mut best = y;
    if miss(below) < miss(best) {
        best = below;
    }
    if miss(above) < miss(best) {
        best = above;
    }
    best
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::cbrt;

    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn cbrt_agrees_with_std_within_an_ulp() {
        // A deterministic sweep over many magnitudes (a multiplicative walk), both signs.
        let mut x = 1e-300_f64;
        while x < 1e300 {
            for v in [x, -x, x * 1.234_567, x * 7.654_321] {
                let (ours, theirs) = (cbrt(v), v.cbrt());
                assert!(
                    ulps(ours, theirs) <= 1,
                    "cbrt({v:e}) = {ours:e}, std {theirs:e}"
                );
            }
            x *= 1.618_033_988_749_895;
        }
        for v in [1.0, 8.0, 27.0, 1e-3, 7.5, 3.0, 0.125, 1e300, f64::MAX] {
            assert!(ulps(cbrt(v), v.cbrt()) <= 1, "cbrt({v:e})");
        }
        assert_eq!(cbrt(8.0), 2.0);
        assert_eq!(cbrt(27.0), 3.0);
        assert_eq!(cbrt(-64.0), -4.0);
    }

    #[test]
    fn cbrt_of_special_values() {
        assert_eq!(cbrt(0.0).to_bits(), 0.0_f64.to_bits());
        assert_eq!(cbrt(-0.0).to_bits(), (-0.0_f64).to_bits());
        assert_eq!(cbrt(f64::INFINITY), f64::INFINITY);
        assert_eq!(cbrt(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert!(cbrt(f64::NAN).is_nan());
        for v in [f64::MIN_POSITIVE / 3.0, 5e-324, 1e-310] {
            assert!(ulps(cbrt(v), v.cbrt()) <= 1, "cbrt({v:e})");
        }
    }
}
