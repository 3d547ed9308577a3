//! RFC 9110 §5.6.7 at its edges: the two-digit-year rule of the
//! obsolete RFC 850 form, and the leap second.
#![cfg(feature = "std")]

use backstop_core::{parse_http_date, parse_retry_after, RetryAfter, UnixTime};

#[test]
fn a_two_digit_year_more_than_50_years_ahead_is_the_most_recent_past_one() {
    // 2075-12-01 was a Sunday: within 50 years of 2026, so `75` is 2075, not 1975 (a Monday).
    let sunday_2075 = Some(UnixTime::from_secs(3_342_384_000));
    assert_eq!(
        parse_http_date(b"Sunday, 01-Dec-75 00:00:00 GMT"),
        sunday_2075
    );
    assert_eq!(
        parse_retry_after(b"Sunday, 01-Dec-75 00:00:00 GMT"),
        sunday_2075.map(RetryAfter::Date)
    );
    // The weekday is checked against the resolved year: 1975's Monday is now wrong.
    assert_eq!(parse_http_date(b"Monday, 01-Dec-75 00:00:00 GMT"), None);
    // `94` is more than 50 years ahead as 2094: it is 1994.
    assert_eq!(
        parse_http_date(b"Sunday, 06-Nov-94 08:49:37 GMT"),
        Some(UnixTime::from_secs(784_111_777))
    );
    // The edge: 2076 is 50 years ahead (kept), 2077 more than 50 (becomes 1977).
    assert_eq!(
        parse_http_date(b"Wednesday, 01-Jan-76 00:00:00 GMT"),
        parse_http_date(b"Wed, 01 Jan 2076 00:00:00 GMT")
    );
    assert_eq!(
        parse_http_date(b"Saturday, 01-Jan-77 00:00:00 GMT"),
        parse_http_date(b"Sat, 01 Jan 1977 00:00:00 GMT")
    );
    assert!(parse_http_date(b"Sat, 01 Jan 1977 00:00:00 GMT").is_some());
}

#[test]
fn a_leap_second_is_the_next_second() {
    let next = parse_http_date(b"Tue, 01 Dec 2026 09:25:00 GMT");
    assert!(next.is_some());
    assert_eq!(parse_http_date(b"Tue, 01 Dec 2026 09:24:60 GMT"), next);
    // 23:59:60 is the next day's midnight, in every form.
    let midnight = parse_http_date(b"Thu, 01 Jan 2026 00:00:00 GMT");
    assert_eq!(parse_http_date(b"Wed, 31 Dec 2025 23:59:60 GMT"), midnight);
    assert_eq!(
        parse_http_date(b"Wednesday, 31-Dec-25 23:59:60 GMT"),
        midnight
    );
    assert_eq!(parse_http_date(b"Wed Dec 31 23:59:60 2025"), midnight);
    // 61 is no second at all.
    assert_eq!(parse_http_date(b"Wed, 31 Dec 2025 23:59:61 GMT"), None);
}
