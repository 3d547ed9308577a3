//! The leaf latency of the hedging experiment: a heavy-tailed distribution given by its
//! survival function, sampled by inverting it.
//!
//! `P(L > x)` is known at nine knots (issue 20's reconstruction of the distribution behind
//! Jeff Dean's 2012 figures: a request fanned out to 100 such leaves has p95/p99/p99.9 of
//! 24/52/994 ms) and `ln P` is linear in `x` between them. Below the first knot every leaf
//! takes at least 0.5 ms; the last knot leaves `1e-6` of the mass above 120 s, which is put at
//! exactly 120 s (the published figures say nothing beyond it).

use rand_core::Rng;

use crate::net::unit;

/// The knots `(x ms, P(L > x))` of the survival function.
pub const KNOTS: [(f64, f64); 9] = [
    (0.5, 1.0),
    (3.0, 0.5),
    (10.0, 0.05),
    (24.0, 5.1e-4),
    (52.0, 1e-4),
    (200.0, 3e-5),
    (994.0, 1e-5),
    (3_000.0, 3e-6),
    (120_000.0, 1e-6),
];

/// `P(L > x)` for `x` in milliseconds.
#[must_use]
pub fn survival(x_ms: f64) -> f64 {
    let mut previous = KNOTS[0];
    if x_ms < previous.0 {
        return 1.0;
    }
    for knot in &KNOTS[1..] {
        if x_ms <= knot.0 {
            let t = (x_ms - previous.0) / (knot.0 - previous.0);
            return (previous.1.ln() + t * (knot.1.ln() - previous.1.ln())).exp();
        }
        previous = *knot;
    }
    // The mass left above the last knot sits on it.
    0.0
}

/// The latency `x` in milliseconds with `P(L > x) = u`, for `u` in `(0, 1]`: the inverse of
/// [`survival`] (every `u` below the last knot's probability maps to the last knot).
#[must_use]
pub fn inverse(u: f64) -> f64 {
    let ln_u = u.ln();
    let mut previous = KNOTS[0];
    if ln_u >= 0.0 {
        return previous.0;
    }
    for knot in &KNOTS[1..] {
        let (ln_a, ln_b) = (previous.1.ln(), knot.1.ln());
        if ln_u >= ln_b {
            let t = (ln_a - ln_u) / (ln_a - ln_b);
            return previous.0 + t * (knot.0 - previous.0);
        }
        previous = *knot;
    }
    previous.0
}

/// One leaf latency in nanoseconds, `slowdown` times the distribution's draw.
pub fn draw(rng: &mut impl Rng, slowdown: f64) -> u64 {
    (inverse(unit(rng)) * slowdown * 1e6).round() as u64
}

/// The closed form of the experiment when copies are independent: the `q`-quantile (in ms)
/// of the slowest of `fan_out` leaves, each hedged once after `delay_ms` (or not at all),
/// `L = min(L1, delay + L2)`, so `P(L > x) = P(L1 > x) P(L2 > x - delay)` beyond the delay.
#[must_use]
pub fn fan_out_quantile(q: f64, fan_out: u32, delay_ms: Option<f64>) -> f64 {
    let leaf = |x: f64| match delay_ms {
        Some(d) if x > d => survival(x) * survival(x - d),
        _ => survival(x),
    };
    let slowest = |x: f64| 1.0 - (1.0 - leaf(x)).powf(f64::from(fan_out));
    let (mut lo, mut hi) = (0.0, KNOTS[KNOTS.len() - 1].0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if slowest(mid) > 1.0 - q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_survival_function_passes_through_every_knot() {
        for (x, p) in KNOTS {
            assert!(
                (survival(x) / p - 1.0).abs() < 1e-12,
                "P(L > {x}) = {}",
                survival(x)
            );
        }
        assert_eq!(survival(0.1), 1.0);
        assert_eq!(survival(200_000.0), 0.0);
    }

    #[test]
    fn inverse_undoes_survival() {
        for x in [
            0.7, 2.0, 5.0, 10.0, 17.0, 40.0, 150.0, 600.0, 2_000.0, 50_000.0,
        ] {
            let back = inverse(survival(x));
            assert!((back - x).abs() < 1e-9 * x, "{x} -> {back}");
        }
        assert_eq!(inverse(1.0), 0.5);
        assert_eq!(inverse(1e-9), 120_000.0);
    }

    #[test]
    fn a_fan_out_of_100_has_the_published_percentiles() {
        // P(max of 100 > x) = 1 - (1 - P(L > x))^100: 5 %, 1 % and 0.1 % at 24, 52, 994 ms.
        for (x, tail) in [(24.0, 0.05), (52.0, 0.01), (994.0, 0.001)] {
            let fan_out = 1.0 - (1.0 - survival(x)).powi(100);
            assert!((fan_out / tail - 1.0).abs() < 0.02, "{x} ms: {fan_out}");
        }
        let p999 = fan_out_quantile(0.999, 100, None);
        assert!((p999 - 994.0).abs() < 5.0, "{p999}");
    }

    #[test]
    fn a_backup_after_10_ms_cuts_the_closed_form_tail() {
        let [p95, p99, p999] = [0.95, 0.99, 0.999].map(|q| fan_out_quantile(q, 100, Some(10.0)));
        assert!((17.0..18.0).contains(&p95), "{p95}");
        assert!((19.5..20.5).contains(&p99), "{p99}");
        assert!((23.0..24.0).contains(&p999), "{p999}");
    }
}
