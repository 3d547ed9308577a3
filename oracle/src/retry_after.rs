//! Checks for the public `Retry-After` parsers, on arbitrary bytes.
//!
//! - No panic, on any bytes.
//! - delay-seconds: the result equals an independent oracle of the documented grammar
//!   (`OWS 1*DIGIT [ "." 1*DIGIT ] OWS`, saturating at `Duration::MAX`, fraction truncated to
//!   nanoseconds), and every parsed delay round-trips through its canonical text.
//! - HTTP-date: equal to an independent reference parser of all three forms with RFC 9110
//!   §5.6.7's rules (`retry_after/reference.rs`, written by hand: backstop itself rewrites the
//!   obsolete forms for its IMF-fixdate fast path and `httpdate`), and differential against
//!   plain `httpdate` on every input the deliberate differences cannot touch (no `:60` second;
//!   no RFC 850 date whose two-digit year the 50-year rule reads otherwise, or whose SP before
//!   the time is missing): there both accept exactly the same inputs and agree on the instant.
//!   Every parsed date lies in 1970..=9999 and round-trips through `httpdate::fmt_http_date`.
//!   The deliberate differences (those, an input whose first non-OWS byte is a digit is
//!   delay-seconds, never a date; non-UTF-8 is rejected) are in `fuzz/README.md`.
//! - `RetryAfter::delay_from` is `Delay` as is, and a date minus the reference, saturating at 0.

use core::time::Duration;
use std::time::UNIX_EPOCH;

use backstop_core::{
    parse_delay_seconds, parse_http_date, parse_retry_after, RetryAfter, UnixTime,
};

mod reference;

/// The last second `httpdate` can represent: 9999-12-31T23:59:59Z.
const LAST_HTTP_DATE: u64 = 253_402_300_799;

/// Runs every `Retry-After` check on `data`.
pub fn check(data: &[u8]) {
    let parsed = parse_retry_after(data);
    let trimmed = trim_ows(data);
    let expected_delay = oracle_delay_seconds(trimmed);
    let reference_date = reference::parse(data);

    // parse_delay_seconds alone follows the grammar, whatever the first byte.
    assert_eq!(
        parse_delay_seconds(data),
        expected_delay,
        "parse_delay_seconds disagrees with the grammar on {data:?}"
    );
    // parse_http_date alone (the `Date` header path) is the reference's verdict, and plain
    // httpdate's wherever RFC 9110's rules cannot make them differ.
    assert_eq!(
        parse_http_date(data),
        reference_date,
        "parse_http_date disagrees with the reference parser on {data:?}"
    );
    if !httpdate_differs_on_purpose(data) {
        assert_eq!(
            parse_http_date(data),
            plain_httpdate(data),
            "parse_http_date disagrees with httpdate on {data:?}"
        );
    }

    if trimmed.first().is_some_and(u8::is_ascii_digit) {
        // Routed to delay-seconds. No HTTP-date starts with a digit, so the date parsers must
        // agree that this is not a date: the routing loses nothing.
        assert_eq!(
            (reference_date, plain_httpdate(data)),
            (None, None),
            "a date parser accepts a digit-led {data:?}"
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
            "parse_retry_after disagrees with the reference parser on {data:?}"
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

/// What plain `httpdate` makes of the value, as a [`UnixTime`] (`None` for non-UTF-8, which it
/// cannot be asked about).
fn plain_httpdate(v: &[u8]) -> Option<UnixTime> {
    let t = httpdate::parse_http_date(core::str::from_utf8(v).ok()?).ok()?;
    Some(UnixTime::from_duration(t.duration_since(UNIX_EPOCH).ok()?))
}

/// Whether RFC 9110 §5.6.7's rules may make backstop's verdict on `v` differ from `httpdate`'s
/// (see `fuzz/README.md`). Deliberately broad, never narrow: a seconds field is always followed
/// by SP, so `:60 ` is in every leap second; any RFC 850-shaped value whose two-digit year is
/// `70`–`76` (2070–2076 by the 50-year rule, 1970–1976 to `httpdate`) or whose byte before the
/// time is not SP (which `httpdate` never looks at).
fn httpdate_differs_on_purpose(v: &[u8]) -> bool {
    const LONG: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let Ok(text) = core::str::from_utf8(v) else {
        return false;
    };
    if text.contains(":60 ") {
        return true;
    }
    let Some((name, rest)) = text.trim().split_once(", ") else {
        return false;
    };
    if !LONG.contains(&name) {
        return false;
    }
    let rest = rest.as_bytes();
    let year_differs = matches!(rest.get(7..9), Some([b'7', b'0'..=b'6']));
    year_differs || rest.get(9).is_some_and(|b| *b != b' ')
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_year_is_backstops() {
        let start = httpdate::fmt_http_date(
            UNIX_EPOCH + backstop_core::TWO_DIGIT_YEAR_REFERENCE.as_duration(),
        );
        assert!(
            start.ends_with(&format!(
                " 01 Jan {} 00:00:00 GMT",
                reference::REFERENCE_YEAR
            )),
            "{start}"
        );
    }

    #[test]
    fn httpdate_is_set_aside_only_where_the_rfc_rules_apply() {
        for differs in [
            &b"Wed, 31 Dec 2025 23:59:60 GMT"[..],
            b"Wed Dec 31 23:59:60 2025",
            b"Wednesday, 31-Dec-25 23:59:60 GMT",
            b"Sunday, 01-Dec-75 00:00:00 GMT",
            b"Sunday, 12-Sep-10008:49:37 GMT",
        ] {
            assert!(httpdate_differs_on_purpose(differs), "{differs:?}");
            assert_ne!(
                reference::parse(differs),
                plain_httpdate(differs),
                "{differs:?}"
            );
        }
        for same in [
            &b"Sun, 06 Nov 1994 08:49:37 GMT"[..],
            b"Sunday, 06-Nov-94 08:49:37 GMT",
            b"Sun Nov  6 08:49:37 1994",
            b"Saturday, 01-Jan-77 00:00:00 GMT",
        ] {
            assert!(!httpdate_differs_on_purpose(same), "{same:?}");
            assert_eq!(reference::parse(same), plain_httpdate(same), "{same:?}");
            assert!(plain_httpdate(same).is_some(), "{same:?}");
        }
    }

    /// The edges RFC 9110's rules add, in every form, for the checks above: random bytes and
    /// the corpus rarely reach an obsolete form's leap second.
    #[test]
    fn the_rfc_edges_pass_the_checks() {
        for v in [
            &b"Wed, 31 Dec 2025 23:59:60 GMT"[..],
            b"Wednesday, 31-Dec-25 23:59:60 GMT",
            b"Wed Dec 31 23:59:60 2025",
            b"Wed Dec 31 23:59:61 2025",
            b"Fri, 31 Dec 9999 23:59:60 GMT",
            b"Fri Dec 31 23:59:60 9999",
            b"Sunday, 01-Dec-75 00:00:00 GMT",
            b"Monday, 01-Dec-75 00:00:00 GMT",
            b"Wednesday, 01-Jan-76 00:00:00 GMT",
            b"Saturday, 01-Jan-77 00:00:00 GMT",
            b"Thursday, 01-Jan-70 00:00:00 GMT",
            b"Sunday, 12-Sep-10008:49:37 GMT",
            b" \tSunday, 06-Nov-94 08:49:60 GMT\r\n",
        ] {
            check(v);
            assert_eq!(parse_http_date(v), reference::parse(v), "{v:?}");
        }
        assert!(reference::parse(b"Wed Dec 31 23:59:60 2025").is_some());
    }
}
