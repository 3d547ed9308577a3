//! Checks for the public `Retry-After` parsers, on arbitrary bytes.
//!
//! - No panic, on any bytes.
//! - delay-seconds: the result equals an independent oracle of the documented grammar
//!   (`OWS 1*DIGIT [ "." 1*DIGIT ] OWS`, saturating at `Duration::MAX`, fraction truncated to
//!   nanoseconds), and every parsed delay round-trips through its canonical text.
//! - HTTP-date: differential against `httpdate`: both accept exactly the same inputs and agree
//!   on the instant; every parsed date lies in 1970..=9999 and round-trips through
//!   `httpdate::fmt_http_date`. The deliberate differences (an input whose first non-OWS byte is
//!   a digit is delay-seconds, never a date; non-UTF-8 is rejected; RFC 9110 §5.6.7's
//!   two-digit-year rule and leap second, applied to the input before `httpdate` is asked, in
//!   `httpdate_reference`; the SP before an RFC 850 time is required) are in `fuzz/README.md`.
//! - `RetryAfter::delay_from` is `Delay` as is, and a date minus the reference, saturating at 0.

use core::time::Duration;
use std::time::UNIX_EPOCH;

use backstop::{parse_delay_seconds, parse_http_date, parse_retry_after, RetryAfter, UnixTime};

/// The last second `httpdate` can represent: 9999-12-31T23:59:59Z.
const LAST_HTTP_DATE: u64 = 253_402_300_799;

/// Runs every `Retry-After` check on `data`.
pub fn check(data: &[u8]) {
    let parsed = parse_retry_after(data);
    let trimmed = trim_ows(data);
    let expected_delay = oracle_delay_seconds(trimmed);
    let reference_date = httpdate_reference(data);

    // parse_delay_seconds alone follows the grammar, whatever the first byte.
    assert_eq!(
        parse_delay_seconds(data),
        expected_delay,
        "parse_delay_seconds disagrees with the grammar on {data:?}"
    );
    // parse_http_date alone (the `Date` header path) is httpdate's verdict.
    assert_eq!(
        parse_http_date(data),
        reference_date,
        "parse_http_date disagrees with httpdate on {data:?}"
    );

    if trimmed.first().is_some_and(u8::is_ascii_digit) {
        // Routed to delay-seconds. No HTTP-date starts with a digit, so httpdate must agree
        // that this is not a date: the routing loses nothing.
        assert_eq!(
            reference_date, None,
            "httpdate accepts a digit-led {data:?}"
        );
        assert_eq!(
            parsed,
            expected_delay.map(RetryAfter::Delay),
            "digit-led {data:?}"
        );
    } else {
        assert_eq!(
            parsed,
            reference_date.map(RetryAfter::Date),
            "differential against httpdate on {data:?}"
        );
    }

    match parsed {
        Some(RetryAfter::Delay(d)) => check_delay_round_trip(d),
        Some(RetryAfter::Date(t)) => check_date_round_trip(t),
        None => {}
    }
    if let Some(value) = parsed {
        check_delay_from(value);
    }
}

/// The documented grammar, written independently of the parser: `1*DIGIT [ "." 1*DIGIT ]`,
/// seconds saturating to `Duration::MAX`, the fraction truncated after nine digits.
pub(crate) fn oracle_delay_seconds(v: &[u8]) -> Option<Duration> {
    let text = core::str::from_utf8(v).ok()?;
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || frac.is_some_and(|f| !digits(f)) {
        return None;
    }
    let significant = int.trim_start_matches('0');
    // u64::MAX has 20 digits; longer (after leading zeros) always saturates.
    let secs = if significant.len() > 20 {
        None
    } else {
        significant.parse::<u128>().ok().or(Some(0))
    };
    let secs = match secs.and_then(|s| u64::try_from(s).ok()) {
        Some(s) => s,
        None => return Some(Duration::MAX),
    };
    let nanos = frac.map_or(0, |f| {
        let mut padded = [b'0'; 9];
        for (slot, b) in padded.iter_mut().zip(f.bytes()) {
            *slot = b;
        }
        padded
            .iter()
            .fold(0u32, |n, b| n * 10 + u32::from(b - b'0'))
    });
    Some(Duration::new(secs, nanos))
}

/// What `httpdate` makes of the value, as a [`UnixTime`], with the two deliberate differences
/// RFC 9110 §5.6.7 asks for applied before asking it (see `fuzz/README.md`):
///
/// - an RFC 850 date's two-digit year is the latest year with those digits that is not more
///   than 50 years after 2026 (`TWO_DIGIT_YEAR_REFERENCE`): the date is handed to `httpdate` as
///   the IMF-fixdate of that year (so its weekday is checked against it), where `httpdate`
///   itself would read `70`–`99` as 19xx and `00`–`69` as 20xx;
/// - a seconds field of `60` (a leap second) is the next second: `httpdate` is asked about
///   `:59`, and one second is added.
fn httpdate_reference(v: &[u8]) -> Option<UnixTime> {
    let text = core::str::from_utf8(v).ok()?;
    if !text.is_ascii() {
        return None;
    }
    let text = text.trim();
    let mut text = rfc850_as_imf(text).unwrap_or_else(|| text.to_owned());
    let leap = leap_second_field(&text);
    if let Some(range) = leap.clone() {
        text.replace_range(range, "59");
    }
    let t = httpdate::parse_http_date(&text).ok()?;
    let since = t.duration_since(UNIX_EPOCH).ok()?;
    let secs = since.as_secs() + u64::from(leap.is_some());
    (secs <= LAST_HTTP_DATE).then(|| UnixTime::from_secs(secs))
}

/// `Sunday, 06-Nov-94 08:49:37 GMT` as `Sun, 06 Nov 1994 08:49:37 GMT`, the year chosen by
/// the 50-year rule; `None` when `text` is not shaped like an RFC 850 date.
fn rfc850_as_imf(text: &str) -> Option<String> {
    const LONG: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let (name, rest) = text.split_once(", ")?;
    if !LONG.contains(&name) || rest.len() != 22 {
        return None;
    }
    let b = rest.as_bytes();
    if b[2] != b'-' || b[6] != b'-' || &rest[18..] != " GMT" {
        return None;
    }
    if b[9] != b' ' {
        // `httpdate` never looks at the byte before the time; RFC 9110's grammar has an SP
        // there, and so does backstop: not a date (the empty string `httpdate` refuses).
        return Some(String::new());
    }
    let yy: u32 = rest[7..9]
        .parse()
        .ok()
        .filter(|_| rest[7..9].bytes().all(|c| c.is_ascii_digit()))?;
    let year = (1900..2200)
        .filter(|y| y % 100 == yy && *y <= 2026 + 50)
        .max()?;
    Some(format!(
        "{}, {} {} {year:04} {} GMT",
        &name[..3],
        &rest[..2],
        &rest[3..6],
        &rest[10..18]
    ))
}

/// Where the seconds field is, when it says `60`: in an IMF-fixdate (29 bytes) or an asctime
/// date (24 bytes).
fn leap_second_field(text: &str) -> Option<core::ops::Range<usize>> {
    let range = match text.len() {
        29 => 23..25,
        24 => 17..19,
        _ => return None,
    };
    (text.get(range.clone()) == Some("60")).then_some(range)
}

fn check_delay_round_trip(d: Duration) {
    let text = if d.subsec_nanos() == 0 {
        format!("{}", d.as_secs())
    } else {
        format!("{}.{:09}", d.as_secs(), d.subsec_nanos())
    };
    assert_eq!(
        parse_retry_after(text.as_bytes()),
        Some(RetryAfter::Delay(d)),
        "delay {d:?} does not round-trip through {text:?}"
    );
}

fn check_date_round_trip(t: UnixTime) {
    let d = t.as_duration();
    assert_eq!(d.subsec_nanos(), 0, "an HTTP-date has whole seconds: {t:?}");
    assert!(d.as_secs() <= LAST_HTTP_DATE, "date {t:?} beyond 9999");
    let text = httpdate::fmt_http_date(UNIX_EPOCH + d);
    assert_eq!(
        parse_retry_after(text.as_bytes()),
        Some(RetryAfter::Date(t)),
        "date {t:?} does not round-trip through {text:?}"
    );
}

fn check_delay_from(value: RetryAfter) {
    let references = [
        UnixTime::EPOCH,
        UnixTime::from_secs(1_700_000_000),
        UnixTime::from_secs(LAST_HTTP_DATE),
        UnixTime::from_duration(Duration::MAX),
    ];
    for reference in references {
        let expected = match value {
            RetryAfter::Delay(d) => d,
            RetryAfter::Date(t) => t.as_duration().saturating_sub(reference.as_duration()),
        };
        assert_eq!(
            value.delay_from(reference),
            expected,
            "{value:?} from {reference:?}"
        );
    }
}

/// Optional whitespace (RFC 9110 §5.6.3): spaces and tabs.
pub(crate) fn trim_ows(v: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = v.iter().position(|b| !ows(b)).unwrap_or(v.len());
    let end = v.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    &v[start..end]
}
