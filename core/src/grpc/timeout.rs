//! The call's deadline a request carries: `grpc-timeout`.
//!
//! Rule (gRPC's `doc/PROTOCOL-HTTP2.md`): `grpc-timeout` is at most eight ASCII digits and a
//! unit: `H` hours, `M` minutes, `S` seconds, `m` milliseconds, `u` microseconds, `n`
//! nanoseconds. Anything else is no timeout (the policy's applies).

use core::time::Duration;

/// The duration of a raw `grpc-timeout` value; `None` when it is malformed.
///
/// ```
/// use backstop_core::grpc::parse_timeout;
/// use core::time::Duration;
///
/// assert_eq!(parse_timeout(b"1S"), Some(Duration::from_secs(1)));
/// assert_eq!(parse_timeout(b"250m"), Some(Duration::from_millis(250)));
/// assert_eq!(parse_timeout(b"123456789S"), None); // nine digits
/// assert_eq!(parse_timeout(b"5"), None); // no unit
/// ```
#[must_use]
pub const fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let [digits @ .., unit] = value else {
        return None;
    };
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let mut n: u64 = 0;
    let mut rest = digits;
    while let [b, tail @ ..] = rest {
        if !b.is_ascii_digit() {
            return None;
        }
        // Eight digits: below 10^8, no overflow.
        n = n * 10 + (*b - b'0') as u64;
        rest = tail;
    }
    Some(match unit {
        b'H' => Duration::from_secs(n * 3_600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_and_the_malformed_values() {
        assert_eq!(parse_timeout(b"2H"), Some(Duration::from_secs(7_200)));
        assert_eq!(parse_timeout(b"3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_timeout(b"7u"), Some(Duration::from_micros(7)));
        assert_eq!(
            parse_timeout(b"99999999n"),
            Some(Duration::from_nanos(99_999_999))
        );
        assert_eq!(
            parse_timeout(b"99999999H"),
            Some(Duration::from_secs(99_999_999 * 3_600))
        );
        for bad in [&b""[..], b"S", b"1s", b"-1S", b" 1S", b"1.5S", b"1SS"] {
            assert_eq!(parse_timeout(bad), None, "{bad:?}");
        }
    }
}
