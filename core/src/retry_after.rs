//! Parsing the `Retry-After` response field.
//!
//! Rule (RFC 9110 §10.2.3, §5.6.7): `Retry-After` is either
//! delay-seconds or an HTTP-date. backstop accepts:
//!
//! - delay-seconds as `1*DIGIT`, and also a decimal fraction (`0.1`), because servers send
//!   them (the classic `fetchWithRetry` demo among them). Signs, exponents, hex, `NaN`, empty fractions (`1.`, `.5`) and anything
//!   else are rejected. Values too large for a [`Duration`] saturate at [`Duration::MAX`]; the
//!   parser never overflows. Digits past the ninth fractional digit are truncated.
//! - an HTTP-date in any of its three forms (IMF-fixdate, obsolete RFC 850, asctime), under
//!   the `std` feature, by [`parse_http_date`]: `httpdate`'s grammar and bounds, plus RFC 9110
//!   §5.6.7's leap second (`:60` is the next second) and two-digit-year rule (relative to
//!   [`TWO_DIGIT_YEAR_REFERENCE`]). Without `std` a date is treated as absent.
//!
//!   Which part is whose. An IMF-fixdate, the only form a current server sends, is parsed by
//!   a fast path of our own (fixed offsets on the raw bytes, no UTF-8 check and no `SystemTime`
//!   round trip), leap second included. The obsolete forms get an allocation-free rewrite of
//!   just what RFC 9110 asks and `httpdate` does not do: an RFC 850 date becomes, on a 29-byte
//!   stack buffer, the IMF-fixdate of its resolved year (the fast path then checks it, weekday
//!   included); an asctime date is `httpdate`'s, a `:60` asked about as `:59` plus one second.
//!
//! Optional whitespace (space, tab) around delay-seconds is ignored (a date is trimmed of any ASCII
//! whitespace, as `httpdate` does). A malformed value is `None`:
//! the caller falls back to its own backoff, as if the field were absent. How the parsed value
//! becomes a wait (the `Date` reference, the ceiling) is the machine's business.

use core::time::Duration;

use crate::time::UnixTime;

#[cfg(feature = "std")]
mod http_date;

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
    /// use backstop_core::{RetryAfter, UnixTime};
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
/// HTTP-dates are parsed only with the `std` feature ([`parse_http_date`]); without it a date is
/// `None`, and the machine falls back to its backoff.
///
/// ```
/// use backstop_core::{parse_retry_after, RetryAfter, UnixTime};
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
/// use backstop_core::parse_delay_seconds;
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

/// Parses an HTTP-date (RFC 9110 §5.6.7, all three forms).
///
/// Used for `Retry-After` and for the `Date` field that serves as its reference. The grammar
/// and bounds are `httpdate`'s (surrounding ASCII whitespace trimmed, the weekday checked,
/// years 1970 to 9999, anything else `None`), with two differences RFC 9110 §5.6.7 asks for:
///
/// - **A leap second** (`second` is `00`–`60`): `23:59:60` is read as the next second (the
///   next day's `00:00:00`); a `:60` elsewhere is read the same way, as one second past `:59`.
/// - **Two-digit years** (the obsolete RFC 850 form): a year that appears more than 50 years in
///   the future is the most recent past year with the same last two digits. "The future" is
///   measured from [`TWO_DIGIT_YEAR_REFERENCE`] (2026), by year: `yy` is `20yy` up to 2076, else
///   `19yy`; the weekday is checked against the year so resolved. The parser has no clock
///   (core never reads one), and a fixed reference keeps every parse reproducible; it reads
///   two-digit years right until 2076, and RFC 850 dates have been obsolete since 1996.
///
/// ```
/// use backstop_core::{parse_http_date, UnixTime};
///
/// let t = Some(UnixTime::from_secs(784_111_777));
/// assert_eq!(parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GMT"), t);
/// assert_eq!(parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT"), t);
/// assert_eq!(parse_http_date(b"Sun Nov  6 08:49:37 1994"), t);
/// // 2075-12-01 was a Sunday; 1975-12-01 a Monday.
/// assert_eq!(parse_http_date(b"Sunday, 01-Dec-75 00:00:00 GMT"), Some(UnixTime::from_secs(3_342_384_000)));
/// // A leap second is the next second.
/// assert_eq!(
///     parse_http_date(b"Wed, 31 Dec 2025 23:59:60 GMT"),
///     parse_http_date(b"Thu, 01 Jan 2026 00:00:00 GMT"),
/// );
/// ```
#[cfg(feature = "std")]
#[must_use]
#[inline]
pub fn parse_http_date(value: &[u8]) -> Option<UnixTime> {
    http_date::parse(value)
}

/// Without `std` an HTTP-date is treated as absent: the obsolete forms are parsed by
/// `httpdate`, a `std` crate, and a no-std build keeps the documented "dates are absent"
/// behaviour rather than parse only some dates.
#[cfg(not(feature = "std"))]
#[must_use]
pub fn parse_http_date(_value: &[u8]) -> Option<UnixTime> {
    None
}

/// The "now" a two-digit RFC 850 year is resolved against: the start of 2026 (see
/// [`parse_http_date`]).
pub const TWO_DIGIT_YEAR_REFERENCE: UnixTime = UnixTime::from_secs(1_767_225_600);

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
    #[cfg(feature = "std")] // HTTP-dates are parsed only under `std`
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
