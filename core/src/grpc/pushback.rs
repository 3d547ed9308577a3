//! The server's pushback: `grpc-retry-pushback-ms`.
//!
//! Rule (gRFC A6 "Pushback", as grpc-go and grpc-java read it): a server that answers a
//! retryable status may say when to try again. A non-negative integer number of milliseconds
//! is the exact wait before the next attempt, in place of the backoff (no spread, no floor
//! under it); a negative number, a value that is not a number (A6: a signed 32-bit integer),
//! or more than one value means "do not retry": the call ends with that answer. No field, no
//! pushback: the backoff applies. After a retry the pushback timed fails, the backoff starts
//! again from its initial delay.

use core::time::Duration;

/// What the server's `grpc-retry-pushback-ms` says about the next attempt.
///
/// ```
/// use backstop_core::grpc::Pushback;
/// use core::time::Duration;
///
/// assert_eq!(Pushback::parse(b"1000"), Pushback::Delay(Duration::from_secs(1)));
/// assert_eq!(Pushback::parse(b"-1"), Pushback::Stop);
/// assert_eq!(Pushback::parse(b"xxx"), Pushback::Stop);
/// // Two fields: grpc-go and grpc-java stop retrying.
/// assert_eq!(Pushback::from_values([&b"100"[..], b"10"]), Some(Pushback::Stop));
/// assert_eq!(Pushback::from_values(None::<&[u8]>), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Pushback {
    /// Wait exactly this long before the next attempt (the server's non-negative value).
    Delay(Duration),
    /// Do not retry: the value was negative, not a number, or one of several.
    Stop,
}

impl Pushback {
    /// The pushback of one raw `grpc-retry-pushback-ms` value: decimal digits, optionally after
    /// a sign (a `-` stops); anything else, or a number beyond A6's signed 32-bit integer (as
    /// grpc-java reads it), stops.
    #[must_use]
    pub const fn parse(value: &[u8]) -> Pushback {
        let (negative, digits) = match value {
            [b'-', rest @ ..] => (true, rest),
            [b'+', rest @ ..] => (false, rest),
            rest => (false, rest),
        };
        if digits.is_empty() {
            return Pushback::Stop;
        }
        let mut millis: u64 = 0;
        let mut rest = digits;
        while let [b, tail @ ..] = rest {
            if !b.is_ascii_digit() {
                return Pushback::Stop;
            }
            millis = match millis.checked_mul(10) {
                Some(m) => match m.checked_add((*b - b'0') as u64) {
                    Some(m) if m <= i32::MAX as u64 => m,
                    _ => return Pushback::Stop,
                },
                None => return Pushback::Stop,
            };
            rest = tail;
        }
        if negative && millis > 0 {
            Pushback::Stop
        } else {
            Pushback::Delay(Duration::from_millis(millis))
        }
    }

    /// The pushback of every `grpc-retry-pushback-ms` value of a response: `None` for none,
    /// [`Pushback::parse`] of one, [`Pushback::Stop`] for more than one.
    #[must_use]
    pub fn from_values<'a, I>(values: I) -> Option<Pushback>
    where
        I: IntoIterator<Item = &'a [u8]>,
    {
        let mut values = values.into_iter();
        let first = values.next()?;
        Some(match values.next() {
            None => Pushback::parse(first),
            Some(_) => Pushback::Stop,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// grpc-go's `test/retry_test.go` (`TestRetryStreaming`): the pushback cases.
    #[test]
    fn grpc_go_pushback_cases() {
        // "Negative server pushback - no retry"
        assert_eq!(Pushback::from_values([&b"-1"[..]]), Some(Pushback::Stop));
        // "Non-numeric server pushback - no retry"
        assert_eq!(Pushback::from_values([&b"xxx"[..]]), Some(Pushback::Stop));
        // "Multiple server pushback values - no retry"
        assert_eq!(
            Pushback::from_values([&b"100"[..], b"10"]),
            Some(Pushback::Stop)
        );
        // "1s server pushback - delayed retry"
        assert_eq!(
            Pushback::from_values([&b"1000"[..]]),
            Some(Pushback::Delay(Duration::from_millis(1000)))
        );
    }

    #[test]
    fn odd_values_stop_and_edges_are_exact() {
        for v in [
            &b""[..],
            b"-",
            b"+",
            b" 5",
            b"5 ",
            b"1.5",
            b"0x10",
            b"2147483648",
        ] {
            assert_eq!(Pushback::parse(v), Pushback::Stop, "{v:?}");
        }
        assert_eq!(Pushback::parse(b"0"), Pushback::Delay(Duration::ZERO));
        assert_eq!(Pushback::parse(b"-0"), Pushback::Delay(Duration::ZERO));
        assert_eq!(
            Pushback::parse(b"+7"),
            Pushback::Delay(Duration::from_millis(7))
        );
        assert_eq!(
            Pushback::parse(b"2147483647"),
            Pushback::Delay(Duration::from_millis(i32::MAX as u64))
        );
    }
}
