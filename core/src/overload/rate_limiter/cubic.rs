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
///   ([`success`](Cubic::success)), where `K = pow(last_max * (1 - beta) / SCALE, 1.0 / 3.0)`
///   ([`k`](Cubic::k)) is the time the curve takes to climb back to `last_max`: it starts at
///   `beta * last_max` right after the throttle, flattens out around `last_max`, then probes
///   above it ever faster.
///
/// The arithmetic is the SDKs' to the bit, so that their published vectors come out exactly:
/// `K` is `pow(x, 1.0 / 3.0)` as they compute it, not a true cube root (`1.0 / 3.0` is a
/// little under a third, which moves `K` by up to an ulp and the curve's last bits with it),
/// rounded correctly; the cube is a product, as smithy-rs's `powi(3)` (botocore's `** 3`, a
/// `pow`, can differ in the last bit). A platform `pow` that is not correctly rounded (glibc's
/// misses about one input in a thousand, by an ulp, near a rounding midpoint) can give a `K`
/// one ulp away from this one.
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

    /// `K = pow(last_max * (1 - beta) / SCALE, 1.0 / 3.0)`: the seconds the curve takes after
    /// the throttle to climb back to `last_max` (botocore's `k`, smithy-rs's time window),
    /// computed as the SDKs compute it (see [`Cubic`]). A negative `last_max`, which no
    /// limiter records (rates are not negative), gives the negative of the positive one's `K`
    /// where `pow` would give NaN.
    #[must_use]
    pub fn k(&self) -> f64 {
        pow_third(self.last_max * (1.0 - self.beta) / Cubic::SCALE)
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

/// `pow(x, 1.0 / 3.0)`, rounded correctly (`core` has no `pow` without `std`); a negative `x`
/// gives `-pow_third(-x)`.
fn pow_third(x: f64) -> f64 {
    // `1.0 / 3.0` is `(1 - 2^-54) / 3`: under a third by `DELTA`, so that
    // `x^(1.0 / 3.0) = cbrt(x) * x^-DELTA = cbrt(x) * (1 - DELTA * ln x)` (the next term,
    // `(DELTA * ln x)^2 / 2`, is below 1e-28).
    const DELTA: f64 = 1.0 / 3.0 / TWO_54;
    const TWO_54: f64 = 18_014_398_509_481_984.0;
    const FRACTION: u64 = (1 << 52) - 1;
    if x < 0.0 {
        return -pow_third(-x);
    }
    if x == 0.0 || x.is_nan() || x.is_infinite() {
        return x;
    }
    // x = f * 2^e with f in [1, 2) (a subnormal through 2^54), and m = x / 2^(3k) in [1, 8).
    let (bits, shift) = if x < f64::MIN_POSITIVE {
        ((x * TWO_54).to_bits(), -54)
    } else {
        (x.to_bits(), 0)
    };
    let e = (bits >> 52) as i32 - 1023 + shift;
    let k = e.div_euclid(3);
    let with_exponent =
        |exp: i32| f64::from_bits((bits & FRACTION) | (((exp + 1023) as u64) << 52));
    let (f, m) = (with_exponent(0), with_exponent(e - 3 * k));
    let ln_x = f64::from(e) * core::f64::consts::LN_2 + ln_of_fraction(f);
    // y = cbrt(m) within an ulp; m - y^3 to twice the precision of f64, so that
    // cbrt(m) = y * (1 + (m - y^3) / m)^(1/3) = y + y * (m - y^3) / 3m.
    let y = cbrt(m);
    let (y2, y2_low) = two_product(y, y);
    let (y3, y3_low) = two_product(y2, y);
    let rest = (m - y3) - y3_low - y2_low * y;
    let fix = y * (rest / (3.0 * m) - DELTA * ln_x);
    // One rounding, then an exact scaling (k is within the exponent range).
    (y + fix) * f64::from_bits(((k + 1023) as u64) << 52)
}

/// ln f for f in [1, 2), to about 1e-15: `2 atanh(s)` with `s = (f - 1) / (f + 1)`, at most
/// 1/3, by its series.
fn ln_of_fraction(f: f64) -> f64 {
    let s = (f - 1.0) / (f + 1.0);
    let s2 = s * s;
    let (mut term, mut sum, mut n) = (s, 0.0, 1.0);
    while n < 33.0 {
        sum += term / n;
        term *= s2;
        n += 2.0;
    }
    2.0 * sum
}

/// `a * b` and its rounding error, exactly (Dekker's product, without a fused multiply-add).
fn two_product(a: f64, b: f64) -> (f64, f64) {
    fn split(a: f64) -> (f64, f64) {
        let c = 134_217_729.0 * a; // 2^27 + 1
        let high = c - (c - a);
        (high, a - high)
    }
    let p = a * b;
    let ((ah, al), (bh, bl)) = (split(a), split(b));
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

/// The cube root of `m` in `[1, 8)`, within an ulp or two (`pow_third` corrects the rest).
///
/// A first guess from the exponent bits (a third of the logarithm, about 3% off), then Newton's
/// iteration `y = (2y + m / y²) / 3`, which squares the relative error at each step (five steps
/// reach the precision of `f64` from 3%, six leave a margin).
fn cbrt(m: f64) -> f64 {
    // The bits of a positive normal float are close to a scaled, offset log2: a third of the
    // distance from 1.0's bits is close to the cube root's.
    const ONE: u64 = 0x3FF0_0000_0000_0000; // the bits of 1.0
    let mut y = f64::from_bits(ONE + (m.to_bits() - ONE) / 3);
    let mut step = 0;
    while step < 6 {
        y = (2.0 * y + m / (y * y)) / 3.0;
        step += 1;
    }
    y
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::{cbrt, pow_third};

    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn cbrt_is_within_an_ulp_of_std_on_one_to_eight() {
        let mut m = 1.0_f64;
        while m < 8.0 {
            assert!(ulps(cbrt(m), m.cbrt()) <= 1, "cbrt({m:e})");
            m += 0.000_123_4;
        }
    }

    #[test]
    fn pow_third_is_within_an_ulp_of_std_pow() {
        let third = 1.0 / 3.0;
        let mut x = 1e-320_f64;
        while x < 1e300 {
            for v in [x, x * 1.234_567, x * 7.654_321] {
                let (ours, theirs) = (pow_third(v), v.powf(third));
                assert!(
                    ulps(ours, theirs) <= 1,
                    "pow_third({v:e}) = {ours:e}, std {theirs:e}"
                );
            }
            x *= 1.618_033_988_749_895;
        }
        assert_eq!(pow_third(8.0), 2.0); // 2 - 8e-17: closer to 2 than to the float below
        assert_eq!(pow_third(-8.0), -pow_third(8.0));
        assert_eq!(pow_third(0.0), 0.0);
        assert_eq!(pow_third(f64::INFINITY), f64::INFINITY);
        assert!(pow_third(f64::NAN).is_nan());
    }

    /// Inputs near a rounding midpoint, where a `pow` that is not correctly rounded (glibc's
    /// among them) returns the other neighbour; the expected values are the nearest to the
    /// exact power, worked out to 90 digits.
    #[test]
    fn pow_third_rounds_to_the_nearest_near_a_midpoint() {
        for (x, nearest) in [
            (0.246_050_000_000_000_88, 0.626_625_104_129_472_9),
            (4.421_499_999_999_921, 1.641_307_206_836_306_8),
            (1.561_400_000_000_017_2, 1.160_124_837_932_020_1),
        ] {
            assert_eq!(
                pow_third(x).to_bits(),
                f64::to_bits(nearest),
                "pow_third({x:e})"
            );
        }
    }
}
