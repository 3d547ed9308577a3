//! Random bits that need not be secret: the jitter's seed, an origin gate's seed when the
//! operating system's generator fails.
//!
//! Rule: cheap per operation and different across threads and processes, never for a secret
//! (idempotency keys draw from the operating system: `request::new_idempotency_key`).

use std::hash::{BuildHasher, Hash, Hasher};

/// 64 random bits for jitter: a per-thread SplitMix64 sequence, started from the standard
/// library's per-process random hash keys, a clock and the thread. Cheap per operation, and
/// predictable from its outputs: never for a secret (idempotency keys draw from the operating
/// system: `request::new_idempotency_key`).
pub(crate) fn random_u64() -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(0x5EED);
            if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
                h.write_u128(t.as_nanos());
            }
            std::thread::current().id().hash(&mut h);
            h.finish()
        });
    }
    STATE.with(|s| {
        let x = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        s.set(x);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}
