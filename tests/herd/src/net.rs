//! Randomness for the simulation: seed derivation and the network's hop latency.

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Nanoseconds per millisecond.
pub const MS: u64 = 1_000_000;

/// SplitMix64: derives independent seeds from a base seed and a tuple of indices.
#[must_use]
pub fn mix(seed: u64, parts: &[u64]) -> u64 {
    let mut x = seed;
    for &p in parts {
        x = x.wrapping_add(p).wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
    }
    x
}

/// A seeded PCG generator for one simulated party.
#[must_use]
pub fn rng(seed: u64, parts: &[u64]) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(mix(seed, parts))
}

/// A uniform draw from `(0, 1]`.
pub fn unit(rng: &mut impl Rng) -> f64 {
    // 53 random bits; adding one keeps ln() finite.
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// The network: every one-way hop takes `|X|` ms with `X ~ Normal(mean, sd)`, drawn
/// independently per hop (Box–Muller, both values used).
#[derive(Debug)]
pub struct Network {
    rng: Pcg64Mcg,
    mean_ms: f64,
    sd_ms: f64,
    spare: Option<f64>,
}

impl Network {
    /// A network with hop latency `|Normal(mean_ms, sd_ms)|`.
    #[must_use]
    pub fn new(rng: Pcg64Mcg, mean_ms: f64, sd_ms: f64) -> Self {
        Network {
            rng,
            mean_ms,
            sd_ms,
            spare: None,
        }
    }

    /// The simulated network: `|Normal(10 ms, 2 ms)|` per hop.
    #[must_use]
    pub fn herd(rng: Pcg64Mcg) -> Self {
        Network::new(rng, 10.0, 2.0)
    }

    fn standard_normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let (u1, u2) = (unit(&mut self.rng), unit(&mut self.rng));
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = core::f64::consts::TAU * u2;
        self.spare = Some(r * theta.sin());
        r * theta.cos()
    }

    /// One hop's latency, in nanoseconds.
    pub fn hop(&mut self) -> u64 {
        let ms = (self.mean_ms + self.sd_ms * self.standard_normal()).abs();
        (ms * MS as f64) as u64
    }

    /// A uniform draw from `(0, 1]` from the network's stream (for the server's coin flips).
    pub fn unit(&mut self) -> f64 {
        unit(&mut self.rng)
    }
}
