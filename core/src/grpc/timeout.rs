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

/// A `grpc-timeout` value: at most eight digits and a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimeoutValue {
    bytes: [u8; 9],
    len: usize,
}

impl TimeoutValue {
    /// The value's bytes (`b"250m"`).
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }
}

/// `timeout` as a `grpc-timeout` value, in the finest unit whose eight digits hold it (rounded
/// down: a deadline is never sent later than it is), hours at most (99,999,999 hours for a
/// longer one).
///
/// ```
/// use backstop_core::grpc::{encode_timeout, parse_timeout};
/// use core::time::Duration;
///
/// assert_eq!(encode_timeout(Duration::from_millis(250)).as_bytes(), b"250000u");
/// assert_eq!(encode_timeout(Duration::from_secs(3_600)).as_bytes(), b"3600000m");
/// let d = Duration::from_millis(1_234);
/// assert_eq!(parse_timeout(encode_timeout(d).as_bytes()), Some(d));
/// ```
#[must_use]
pub fn encode_timeout(timeout: Duration) -> TimeoutValue {
    const MAX: u128 = 99_999_999;
    let nanos = timeout.as_nanos();
    let units: [(u128, u8); 6] = [
        (1, b'n'),
        (1_000, b'u'),
        (1_000_000, b'm'),
        (1_000_000_000, b'S'),
        (60_000_000_000, b'M'),
        (3_600_000_000_000, b'H'),
    ];
    let (value, unit) = units
        .iter()
        .map(|&(per, unit)| (nanos / per, unit))
        .find(|&(value, _)| value <= MAX)
        .unwrap_or((MAX, b'H'));
    let mut bytes = [0u8; 9];
    let mut digits = [0u8; 8];
    let (mut n, mut count) = (value, 0);
    loop {
        if let Some(d) = digits.get_mut(count) {
            *d = b'0' + (n % 10) as u8;
        }
        count += 1;
        n /= 10;
        if n == 0 || count == digits.len() {
            break;
        }
    }
    for (to, from) in bytes.iter_mut().zip(digits.iter().take(count).rev()) {
        *to = *from;
    }
    if let Some(u) = bytes.get_mut(count) {
        *u = unit;
    }
    TimeoutValue {
        bytes,
        len: count + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encoded_timeout_reads_back_within_its_unit() {
        for d in [
            Duration::ZERO,
            Duration::from_nanos(99_999_999),
            Duration::from_nanos(100_000_000),
            Duration::from_secs(59),
            Duration::from_secs(100_000_000),
            Duration::MAX,
        ] {
            let value = encode_timeout(d);
            let back = parse_timeout(value.as_bytes());
            assert!(back.is_some_and(|b| b <= d), "{d:?} {value:?}");
        }
        assert_eq!(encode_timeout(Duration::ZERO).as_bytes(), b"0n");
        assert_eq!(encode_timeout(Duration::MAX).as_bytes(), b"99999999H");
    }

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
