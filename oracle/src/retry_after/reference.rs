//! The reference HTTP-date parser: all three forms parsed by hand, each with the rules RFC 9110
//! §5.6.7 asks for and `httpdate` lacks (the 50-year rule for RFC 850's two-digit year, the
//! weekday checked against the year so resolved; `:60` as the next second; the SP before an
//! RFC 850 time required).
//!
//! This was backstop's own parser (2c86cb8). backstop now parses only IMF-fixdate itself and
//! hands the obsolete forms to `httpdate` after a rewrite; a reference that did the same rewrite
//! would only repeat the implementation. This one reads RFC 850 and asctime directly, so it is
//! independent of that rewrite. Its IMF-fixdate grammar shares its origin with backstop's fast
//! path, which is why the oracle also compares backstop with plain `httpdate` wherever the RFC
//! rules above cannot apply.

use backstop_core::UnixTime;

/// The year of `backstop_core::TWO_DIGIT_YEAR_REFERENCE`, written out: the oracle states the rule
/// rather than read it from the code under test (a test checks that the two agree).
pub(super) const REFERENCE_YEAR: u32 = 2026;

/// The last second of 9999, the largest date accepted.
const LAST_DATE: u64 = 253_402_300_799;

/// A parsed date, before validation.
struct Civil {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    /// 0 = Monday .. 6 = Sunday.
    weekday: u32,
}

/// An HTTP-date in any of its three forms, as RFC 9110 §5.6.7 and `fuzz/README.md` say
/// backstop reads it; `None` for anything else.
pub(super) fn parse(value: &[u8]) -> Option<UnixTime> {
    if !value.is_ascii() {
        return None;
    }
    let v = trim_ascii_whitespace(value);
    let c = imf_fixdate(v)
        .or_else(|| rfc850(v))
        .or_else(|| asctime(v))?;
    let leap = c.second == 60;
    if c.second > 60
        || c.minute > 59
        || c.hour > 23
        || !(1..=12).contains(&c.month)
        || c.day < 1
        || c.day > days_in_month(c.year, c.month)
        || !(1970..=9999).contains(&c.year)
    {
        return None;
    }
    let days = days_from_civil(c.year, c.month, c.day);
    // 1970-01-01 was a Thursday (3, counting Monday as 0).
    if (days + 3) % 7 != u64::from(c.weekday) {
        return None;
    }
    let secs = days * 86_400
        + u64::from(c.hour) * 3_600
        + u64::from(c.minute) * 60
        + u64::from(if leap { 59 } else { c.second })
        + u64::from(leap);
    (secs <= LAST_DATE).then(|| UnixTime::from_secs(secs))
}

/// `str::trim` on ASCII: HT, LF, VT, FF, CR and space (what `httpdate` trims).
fn trim_ascii_whitespace(mut v: &[u8]) -> &[u8] {
    let ws = |b: u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ');
    while let [b, rest @ ..] = v {
        if !ws(*b) {
            break;
        }
        v = rest;
    }
    while let [rest @ .., b] = v {
        if !ws(*b) {
            break;
        }
        v = rest;
    }
    v
}

fn digits(v: &[u8]) -> Option<u32> {
    if v.is_empty() {
        return None;
    }
    let mut n = 0u32;
    for &b in v {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u32::from(b - b'0');
    }
    Some(n)
}

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];
const DAYS: [&[u8; 3]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];
const LONG_DAYS: [&[u8]; 7] = [
    b"Monday",
    b"Tuesday",
    b"Wednesday",
    b"Thursday",
    b"Friday",
    b"Saturday",
    b"Sunday",
];

fn month(v: &[u8]) -> Option<u32> {
    (1u32..)
        .zip(MONTHS)
        .find(|(_, m)| &m[..] == v)
        .map(|(i, _)| i)
}

fn weekday(v: &[u8]) -> Option<u32> {
    (0u32..)
        .zip(DAYS)
        .find(|(_, d)| &d[..] == v)
        .map(|(i, _)| i)
}

/// `hh:mm:ss`.
fn time_of_day(v: &[u8]) -> Option<(u32, u32, u32)> {
    match v {
        [h1, h2, b':', m1, m2, b':', s1, s2] => Some((
            digits(&[*h1, *h2])?,
            digits(&[*m1, *m2])?,
            digits(&[*s1, *s2])?,
        )),
        _ => None,
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`.
fn imf_fixdate(v: &[u8]) -> Option<Civil> {
    if v.len() != 29 || v.get(3..5)? != b", " || v.get(25..)? != b" GMT" {
        return None;
    }
    if v.get(7) != Some(&b' ') || v.get(11) != Some(&b' ') || v.get(16) != Some(&b' ') {
        return None;
    }
    let (hour, minute, second) = time_of_day(v.get(17..25)?)?;
    Some(Civil {
        weekday: weekday(v.get(..3)?)?,
        day: digits(v.get(5..7)?)?,
        month: month(v.get(8..11)?)?,
        year: digits(v.get(12..16)?)?,
        hour,
        minute,
        second,
    })
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`, the year resolved by RFC 9110 §5.6.7's 50-year rule.
fn rfc850(v: &[u8]) -> Option<Civil> {
    let (weekday, rest) = (0u32..).zip(LONG_DAYS).find_map(|(i, name)| {
        let rest = v.strip_prefix(name)?.strip_prefix(b", ")?;
        Some((i, rest))
    })?;
    if rest.len() != 22 || rest.get(2) != Some(&b'-') || rest.get(6) != Some(&b'-') {
        return None;
    }
    if rest.get(9) != Some(&b' ') || rest.get(18..)? != b" GMT" {
        return None;
    }
    let (hour, minute, second) = time_of_day(rest.get(10..18)?)?;
    let yy = digits(rest.get(7..9)?)?;
    let mut year = REFERENCE_YEAR / 100 * 100 + yy;
    if year > REFERENCE_YEAR + 50 {
        year -= 100;
    }
    Some(Civil {
        weekday,
        day: digits(rest.get(..2)?)?,
        month: month(rest.get(3..6)?)?,
        year,
        hour,
        minute,
        second,
    })
}

/// `Sun Nov  6 08:49:37 1994` (the day may also be written `06`).
fn asctime(v: &[u8]) -> Option<Civil> {
    if v.len() != 24 || v.get(3) != Some(&b' ') || v.get(7) != Some(&b' ') {
        return None;
    }
    if v.get(10) != Some(&b' ') || v.get(19) != Some(&b' ') {
        return None;
    }
    let day = match v.get(8..10)? {
        [b' ', d] => digits(&[*d])?,
        d => digits(d)?,
    };
    let (hour, minute, second) = time_of_day(v.get(11..19)?)?;
    Some(Civil {
        weekday: weekday(v.get(..3)?)?,
        day,
        month: month(v.get(4..7)?)?,
        year: digits(v.get(20..24)?)?,
        hour,
        minute,
        second,
    })
}

const fn is_leap_year(y: u32) -> bool {
    y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400))
}

const fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if is_leap_year(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to `y-m-d` (the proleptic Gregorian calendar; `y` >= 1970).
fn days_from_civil(y: u32, m: u32, d: u32) -> u64 {
    let mut days = 0u64;
    // At most 8,030 years: a loop over years is simple and fast enough for a header.
    let y400 = (y - 1970) / 400;
    days += u64::from(y400) * 146_097;
    for year in 1970 + y400 * 400..y {
        days += if is_leap_year(year) { 366 } else { 365 };
    }
    for month in 1..m {
        days += u64::from(days_in_month(y, month));
    }
    days + u64::from(d - 1)
}
