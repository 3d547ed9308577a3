//! The HTTP-date parser behind [`parse_http_date`](super::parse_http_date) (RFC 9110 §5.6.7,
//! all three forms).
//!
//! - IMF-fixdate is ours ([`imf_fixdate`], validated by [`unix_time`]): it is what servers
//!   send, and on the raw bytes it skips the UTF-8 check and the `SystemTime` conversion that
//!   `httpdate`'s API needs. It reads `:60` as the next second.
//! - RFC 850 is rewritten ([`rfc850_as_imf`]) into the IMF-fixdate of the year the 50-year rule
//!   gives, which the fast path then parses: `httpdate` has a fixed 1970–2069 window instead.
//! - asctime (and anything else) is `httpdate`'s ([`by_httpdate`]), a `:60` asked as `:59`.
//!
//! Nothing here allocates or panics. Only the fast path (its grammar and date arithmetic) is
//! hand-written; the oracle checks it against `httpdate` on every IMF-fixdate without `:60`.

use crate::time::UnixTime;

/// The year of [`TWO_DIGIT_YEAR_REFERENCE`](super::TWO_DIGIT_YEAR_REFERENCE).
const REFERENCE_YEAR: u32 = 2026;

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

/// [`parse_http_date`](super::parse_http_date): `None` for anything that is no HTTP-date.
pub(super) fn parse(value: &[u8]) -> Option<UnixTime> {
    if !value.is_ascii() {
        return None;
    }
    let v = trim_ascii_whitespace(value);
    if let Some(c) = imf_fixdate(v) {
        // Only an IMF-fixdate is 29 bytes long: no other form could accept `v`.
        return unix_time(&c);
    }
    if let Some(imf) = rfc850_as_imf(v) {
        // `httpdate` refuses whatever the fast path refuses (the oracle checks that the two
        // agree on every IMF-fixdate without a leap second), so it need not be asked.
        return unix_time(&imf_fixdate(&imf)?);
    }
    by_httpdate(v)
}

/// Validates a parsed date and counts its seconds since 1970, a leap second (`:60`) being the
/// next second.
fn unix_time(c: &Civil) -> Option<UnixTime> {
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

/// `Sunday, 06-Nov-94 08:49:37 GMT` rewritten as `Sun, 06 Nov 1994 08:49:37 GMT`, the year
/// resolved by RFC 9110 §5.6.7's 50-year rule (`httpdate` reads `70`–`99` as 19xx and
/// `00`–`69` as 20xx), so that the weekday is checked against that year. `None` when `v` is
/// not shaped like an RFC 850 date (and then `httpdate` would not take it for one either);
/// what is shaped like one but is no date, the fast path refuses.
fn rfc850_as_imf(v: &[u8]) -> Option<[u8; 29]> {
    let (name, rest) = LONG_DAYS
        .iter()
        .find_map(|name| Some((*name, v.strip_prefix(*name)?.strip_prefix(b", ")?)))?;
    // The SP before the time and everything after it are copied as they are, for the fast path
    // to check: so that SP is required, as the grammar says (`httpdate` never looks at it).
    let [d1, d2, b'-', m1, m2, m3, b'-', y1, y2, time @ ..] = rest else {
        return None;
    };
    if time.len() != 13 {
        return None;
    }
    let mut year = REFERENCE_YEAR / 100 * 100 + digits(&[*y1, *y2])?;
    if year > REFERENCE_YEAR + 50 {
        year -= 100;
    }
    let yyyy = [year / 1000, year / 100, year / 10, year].map(ascii_digit);
    let parts: [&[u8]; 8] = [
        name.get(..3)?,
        b", ",
        &[*d1, *d2],
        b" ",
        &[*m1, *m2, *m3],
        b" ",
        &yyyy,
        time,
    ];
    let mut imf = [0u8; 29];
    let mut bytes = parts.iter().flat_map(|part| part.iter());
    for slot in &mut imf {
        *slot = *bytes.next()?;
    }
    Some(imf)
}

/// The last decimal digit of `n`, in ASCII.
const fn ascii_digit(n: u32) -> u8 {
    b'0' + (n % 10) as u8
}

/// An asctime date (or anything else the two parts above did not take) by `httpdate`, after
/// the one rewrite RFC 9110 §5.6.7 asks for that `httpdate` does not do: a leap second (`:60`)
/// is asked about as `:59`, and one second added.
fn by_httpdate(v: &[u8]) -> Option<UnixTime> {
    // An asctime date's seconds; nothing else of 24 bytes is a date.
    const SECONDS: core::ops::Range<usize> = 17..19;
    let mut patched = [0u8; 24];
    let leap = v.len() == patched.len() && v.get(SECONDS) == Some(b"60");
    let v = if leap {
        patched.copy_from_slice(v);
        patched.get_mut(SECONDS)?.copy_from_slice(b"59");
        patched.as_slice()
    } else {
        v
    };
    // Never fails (`v` is ASCII), but `httpdate` takes a `&str` and the core has no `unsafe`.
    let t = httpdate::parse_http_date(core::str::from_utf8(v).ok()?).ok()?;
    let secs = UnixTime::from_system_time(t).as_duration().as_secs() + u64::from(leap);
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

const fn is_leap_year(y: u32) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
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
