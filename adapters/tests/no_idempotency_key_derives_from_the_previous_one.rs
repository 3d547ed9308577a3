//! Generated `Idempotency-Key`s are unguessable: whoever sees one key cannot compute the next.
//! A key another party predicts lets it pre-empt or collide with the client's next payment.
//!
//! 10^5 consecutive keys of one thread: none repeats, and none is what the fast generators a
//! library might draw from (SplitMix64, PCG) give next from the previous key's bits. The
//! SplitMix64 check inverts its output mix, so it recovers the stream's state from one key
//! (trying the bits the UUID's version and variant overwrite), whatever the stream's seed.

use std::collections::HashSet;

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

const KEYS: usize = 100_000;

/// SplitMix64's increment and output multipliers.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
const M1: u64 = 0xBF58_476D_1CE4_E5B9;
const M2: u64 = 0x94D0_49BB_1331_11EB;

/// The bits a version 4 UUID fixes: the version nibble and the variant's two bits.
const FIXED: u128 = (0xF000 << 64) | (0xC << 60);

fn mix(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(M1);
    z = (z ^ (z >> 27)).wrapping_mul(M2);
    z ^ (z >> 31)
}

/// The `x` with `x ^ (x >> shift) == y`.
fn unxorshift(y: u64, shift: u32) -> u64 {
    let mut x = y;
    for _ in 0..64 / shift {
        x = y ^ (x >> shift);
    }
    x
}

/// The inverse of an odd `a` modulo 2^64 (Newton's iteration).
fn inverse(a: u64) -> u64 {
    let mut x = a;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x
}

/// The state whose [`mix`] is `z`.
fn unmix(z: u64) -> u64 {
    let z = unxorshift(z, 31).wrapping_mul(inverse(M2));
    let z = unxorshift(z, 27).wrapping_mul(inverse(M1));
    unxorshift(z, 30)
}

fn bits(key: &http::HeaderValue) -> u128 {
    let text = key.to_str().expect("a key is text");
    u128::from_str_radix(&text.replace('-', ""), 16).expect("a key is a UUID")
}

fn join(hi: u64, lo: u64) -> u128 {
    (u128::from(hi) << 64) | u128::from(lo)
}

/// What a SplitMix64 stream gives next (two draws: high half, low half) after a key made of
/// its two previous draws, for each guess of the bits the UUID overwrote.
fn splitmix_successors(previous: u128) -> impl Iterator<Item = u128> {
    let (hi, lo) = ((previous >> 64) as u64, previous as u64);
    // From the low half: its state, then the next two draws.
    let from_lo = (0..4u64).map(move |v| {
        let state = unmix((lo & !(0b11 << 62)) | (v << 62));
        join(
            mix(state.wrapping_add(GAMMA)),
            mix(state.wrapping_add(GAMMA.wrapping_mul(2))),
        )
    });
    // From the high half: its state, the low half's, then the next two.
    let from_hi = (0..16u64).map(move |v| {
        let state = unmix((hi & !(0xF << 12)) | (v << 12));
        join(
            mix(state.wrapping_add(GAMMA.wrapping_mul(2))),
            mix(state.wrapping_add(GAMMA.wrapping_mul(3))),
        )
    });
    from_lo.chain(from_hi)
}

/// What PCG (rand_pcg's `Pcg64Mcg`) gives next, seeded or stated with the previous key's bits.
fn pcg_successors(previous: u128) -> impl Iterator<Item = u128> {
    let two = |mut rng: Pcg64Mcg| {
        let hi = rng.next_u64();
        join(hi, rng.next_u64())
    };
    [
        two(Pcg64Mcg::new(previous)),
        two(Pcg64Mcg::new(previous & !FIXED)),
        two(Pcg64Mcg::seed_from_u64((previous >> 64) as u64)),
        two(Pcg64Mcg::seed_from_u64(previous as u64)),
    ]
    .into_iter()
}

#[test]
fn no_idempotency_key_derives_from_the_previous_one() {
    let mut seen = HashSet::with_capacity(KEYS);
    let mut previous: Option<u128> = None;
    for n in 0..KEYS {
        let key = bits(&backstop::idempotency::new_idempotency_key());
        assert!(seen.insert(key), "key {n} repeats an earlier one");
        if let Some(previous) = previous {
            let same = |guess: u128| guess & !FIXED == key & !FIXED;
            assert!(
                !splitmix_successors(previous).any(same),
                "key {n} is a SplitMix64 step of key {}",
                n - 1
            );
            assert!(
                !pcg_successors(previous).any(same),
                "key {n} is a PCG step of key {}",
                n - 1
            );
        }
        previous = Some(key);
    }
}
