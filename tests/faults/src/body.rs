//! Bodies whose every byte says where it belongs, and their strong entity tags.
//!
//! A body resumed at the wrong offset, or stitched from two representations, differs from
//! [`pattern`] somewhere: the pattern has no short period.

/// `len` bytes of a fixed pattern without a short period.
#[must_use]
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8 ^ (i >> 16) as u8)
        .collect()
}

/// A strong entity tag for `body` (RFC 9110 §8.8.3: quoted, no `W/`): FNV-1a of its bytes
/// and its length, so two different bodies get different tags.
#[must_use]
pub fn strong_etag(body: &[u8]) -> String {
    let hash = body.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("\"{hash:016x}-{:x}\"", body.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_has_no_short_period() {
        let body = pattern(1 << 20);
        for period in [1, 2, 4, 256, 4096, 65536] {
            assert_ne!(body[..1000], body[period..period + 1000], "period {period}");
        }
    }

    #[test]
    fn different_bodies_get_different_strong_tags() {
        assert_ne!(strong_etag(&pattern(100)), strong_etag(&pattern(101)));
        assert!(strong_etag(b"x").starts_with('"'));
    }
}
