//! Parsing the `Retry-After` response field.
//!
//! Rule (RFC 9110 §10.2.3, §5.6.7): `Retry-After` is either
//! delay-seconds or an HTTP-date. backstop accepts:
//!
//! - delay-seconds as `1*DIGIT`, and also a decimal fraction (`0.1`), because servers send
//!   them (the classic `fetchWithRetry` demo among them). Signs, exponents, hex, `NaN`, empty fractions (`1.`, `.5`) and anything
//!   else are rejected. Values too large for a [`Duration`] saturate at [`Duration::MAX`]; the
//!   parser never overflows. Digits past the ninth fractional digit are truncated.
//! - an HTTP-date in any of its three forms (IMF-fixdate, obsolete RFC 850, asctime), through
//!   the `httpdate` crate, under the `std` feature. Without `std` a date is treated as absent.
//!
//! Optional whitespace (space, tab) around delay-seconds is ignored (`httpdate` trims any ASCII
//! whitespace around a date). A malformed value is `None`:
//! the caller falls back to its own backoff, as if the field were absent. How the parsed value
//! becomes a wait (the `Date` reference, the ceiling) is the machine's business.

use core::time::Duration;

use crate::time::UnixTime;

/// A parsed `Retry-After` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryAfter {
    /// delay-seconds: wait this long after the response was received.
    Delay(Duration),
    /// An HTTP-date: wait until this wall-clock time.
    Date(UnixTime),
}

impl RetryAfter {
    /// The delay this value asks for, measured from `reference`: the response's own `Date`
    /// (the server's clock) when it has one, else the client's wall clock. A date at or before
    /// `reference` is a delay of zero.
    ///
    /// ```
    /// use backstop::{RetryAfter, UnixTime};
    /// use core::time::Duration;
    ///
    /// let date = RetryAfter::Date(UnixTime::from_secs(1_000));
    /// assert_eq!(date.delay_from(UnixTime::from_secs(990)), Duration::from_secs(10));
    /// assert_eq!(date.delay_from(UnixTime::from_secs(2_000)), Duration::ZERO);
    /// ```
    #[must_use]
    pub const fn delay_from(self, reference: UnixTime) -> Duration {
        match self {
            RetryAfter::Delay(d) => d,
            RetryAfter::Date(t) => t.saturating_duration_since(reference),
        }
    }
}

/// Parses a raw `Retry-After` field value. `None` means malformed (treat as absent).
/// HTTP-dates are parsed only with the `std` feature (by `httpdate`); without it a date is
/// `None`, and the machine falls back to its backoff.
///
/// ```
/// use backstop::{parse_retry_after, RetryAfter, UnixTime};
/// use core::time::Duration;
///
/// assert_eq!(parse_retry_after(b"120"), Some(RetryAfter::Delay(Duration::from_secs(120))));
/// assert_eq!(parse_retry_after(b"0.1"), Some(RetryAfter::Delay(Duration::from_millis(100))));
/// # #[cfg(feature = "std")]
/// assert_eq!(
///     parse_retry_after(b"Sun, 06 Nov 1994 08:49:37 GMT"),
///     Some(RetryAfter::Date(UnixTime::from_secs(784_111_777))),
/// );
/// assert_eq!(parse_retry_after(b"-1"), None);
/// assert_eq!(parse_retry_after(b"1e3"), None);
/// ```
#[must_use]
#[inline]
pub fn parse_retry_after(value: &[u8]) -> Option<RetryAfter> {
    let value = trim_ows(value);
    match value.first() {
        Some(b'0'..=b'9') => delay_seconds(value).map(RetryAfter::Delay),
        Some(_) => parse_http_date(value).map(RetryAfter::Date),
        None => None,
    }
}

/// Parses delay-seconds (`1*DIGIT [ "." 1*DIGIT ]`), saturating at [`Duration::MAX`].
///
/// ```
/// use backstop::parse_delay_seconds;
/// use core::time::Duration;
///
/// assert_eq!(parse_delay_seconds(b"1.5"), Some(Duration::from_millis(1_500)));
/// assert_eq!(parse_delay_seconds(b"99999999999999999999999"), Some(Duration::MAX));
/// assert_eq!(parse_delay_seconds(b"+1"), None);
/// ```
#[must_use]
#[inline]
pub fn parse_delay_seconds(value: &[u8]) -> Option<Duration> {
    delay_seconds(trim_ows(value))
}

/// delay-seconds, already trimmed.
#[inline]
fn delay_seconds(mut rest: &[u8]) -> Option<Duration> {
    let mut secs: u64 = 0;
    let mut saturated = false;
    let mut int_digits = 0usize;
    while let [d @ b'0'..=b'9', tail @ ..] = rest {
        match secs
            .checked_mul(10)
            .and_then(|s| s.checked_add(u64::from(d - b'0')))
        {
            Some(s) => secs = s,
            None => saturated = true,
        }
        int_digits += 1;
        rest = tail;
    }
    if int_digits == 0 {
        return None;
    }
    let mut nanos: u32 = 0;
    if let [b'.', tail @ ..] = rest {
        rest = tail;
        let mut scale = 100_000_000;
        let mut frac_digits = 0usize;
        while let [d @ b'0'..=b'9', tail @ ..] = rest {
            // Past the ninth digit `scale` is zero: the digit is validated, then truncated.
            nanos += u32::from(d - b'0') * scale;
            scale /= 10;
            frac_digits += 1;
            rest = tail;
        }
        if frac_digits == 0 {
            return None;
        }
    }
    if !rest.is_empty() {
        return None;
    }
    if saturated {
        return Some(Duration::MAX);
    }
    Some(Duration::new(secs, nanos))
}

/// Parses an HTTP-date (RFC 9110 §5.6.7, all three forms) with `httpdate`.
///
/// Used for `Retry-After` and for the `Date` field that serves as its reference. Dates that
/// `httpdate` rejects (including years before 1970) are `None`. Surrounding whitespace is
/// trimmed by `httpdate`.
#[cfg(feature = "std")]
#[must_use]
#[inline]
pub fn parse_http_date(value: &[u8]) -> Option<UnixTime> {
    let text = core::str::from_utf8(value).ok()?;
    let t = httpdate::parse_http_date(text).ok()?;
    Some(UnixTime::from_system_time(t))
}

/// Without `std` there is no date parser: every HTTP-date is treated as absent.
#[cfg(not(feature = "std"))]
#[must_use]
pub fn parse_http_date(_value: &[u8]) -> Option<UnixTime> {
    None
}

/// Optional whitespace (RFC 9110 §5.6.3): space and horizontal tab.
const fn is_ows(b: u8) -> bool {
    matches!(b, b' ' | b'\t')
}

fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b, rest @ ..] = v {
        if !is_ows(*b) {
            break;
        }
        v = rest;
    }
    while let [rest @ .., b] = v {
        if !is_ows(*b) {
            break;
        }
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_seconds_accepts_integers_and_decimals() {
        assert_eq!(parse_delay_seconds(b"0"), Some(Duration::ZERO));
        assert_eq!(parse_delay_seconds(b"120"), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_delay_seconds(b"0.1"),
            Some(Duration::from_millis(100))
        );
        assert_eq!(parse_delay_seconds(b" 7 \t"), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_delay_seconds(b"1.0000000019"),
            Some(Duration::new(1, 1)),
            "digits past nanoseconds are truncated"
        );
    }

    #[test]
    fn delay_seconds_rejects_signs_exponents_and_junk() {
        for junk in [
            &b""[..],
            b" ",
            b"-1",
            b"+1",
            b"1e30",
            b"NaN",
            b"0x10",
            b"1.",
            b".5",
            b"1.2.3",
            b"1 2",
            b"\xff",
            b"\xd9\xa3", // an Arabic-Indic digit: not ASCII
        ] {
            assert_eq!(parse_delay_seconds(junk), None, "{junk:?}");
            assert_eq!(parse_retry_after(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn huge_delay_seconds_saturate_instead_of_overflowing() {
        assert_eq!(
            parse_delay_seconds(b"18446744073709551615"),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(
            parse_delay_seconds(b"18446744073709551616"),
            Some(Duration::MAX)
        );
        let long = [b'9'; 65_536];
        assert_eq!(parse_delay_seconds(&long), Some(Duration::MAX));
    }

    #[test]
    #[cfg(feature = "std")] // HTTP-dates are parsed by `httpdate`, a std crate
    fn all_three_http_date_forms_parse_to_the_same_instant() {
        let t = Some(RetryAfter::Date(UnixTime::from_secs(784_111_777)));
        assert_eq!(parse_retry_after(b"Sun, 06 Nov 1994 08:49:37 GMT"), t);
        assert_eq!(parse_retry_after(b"Sunday, 06-Nov-94 08:49:37 GMT"), t);
        assert_eq!(parse_retry_after(b"Sun Nov  6 08:49:37 1994"), t);
    }

    #[test]
    fn malformed_dates_are_absent() {
        for junk in [
            &b"Sun, 06 Nov 1994 08:49:37"[..],
            b"Sun, 32 Nov 1994 08:49:37 GMT",
            b"tomorrow",
            b"Thu, 01 Jan 1969 00:00:00 GMT",
            b"Sun, 06 Nov 1994 08:49:37 GMT\xff",
        ] {
            assert_eq!(parse_retry_after(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn a_date_before_its_reference_is_a_zero_delay() {
        let d = RetryAfter::Date(UnixTime::from_secs(10));
        assert_eq!(d.delay_from(UnixTime::from_secs(20)), Duration::ZERO);
        let s = RetryAfter::Delay(Duration::from_secs(3));
        assert_eq!(
            s.delay_from(UnixTime::from_secs(20)),
            Duration::from_secs(3)
        );
    }
}
