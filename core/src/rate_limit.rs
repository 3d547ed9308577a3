//! Reading when a server's quota resets, from its rate-limit fields.
//!
//! Rule (draft-ietf-httpapi-ratelimit-headers, and the fields many APIs send before it): a
//! reset field is a floor only when the quota it belongs to is exhausted. A retryable response
//! without a usable `Retry-After` may say when capacity returns; the machine takes that time as
//! a floor, exactly like `Retry-After` (see the crate docs). With quota left, the reset says
//! when the *window* rolls over, not when to come back: the wait is the backoff. Many APIs
//! (GitHub's among them) send these fields on every response, a 503 included, so reading a
//! reset without its remaining field would turn every outage into a wait for the window.
//!
//! | quota | remaining field | reset fields (tried in this order) | exhausted when |
//! |---|---|---|---|
//! | IETF | `r` of each `RateLimit` member | `t` of that member, else the `w` of the `RateLimit-Policy` member of the same name | `r=0` |
//! | draft | `RateLimit-Remaining` | `RateLimit-Reset` (delay-seconds) | the remaining field is `0`, or it is absent (or malformed) on a 429 |
//! | de facto | `X-RateLimit-Remaining` | `X-RateLimit-Reset-After` (delay-seconds), then `X-RateLimit-Reset` ([`XRateLimitReset`]: Unix time by default) | the remaining field is `0`, or it is absent (or malformed) on a 429 |
//!
//! The rows are tried top to bottom and the first usable floor wins:
//!
//! 1. `RateLimit` (the IETF field), when it parses, decides alone if it says anything about
//!    the quota: an exhausted member with a reset gives the floor (the largest reset among the
//!    exhausted members); members that all have quota left (`r>0`) mean *no floor at all*, and
//!    the rows below are not consulted (they describe the same server's quota, less
//!    precisely). A `RateLimit` that does not parse, has no `r`, or whose exhausted members
//!    have no reset says nothing: the rows below are tried.
//! 2. Each legacy reset is read only when its own remaining field says its quota is
//!    exhausted. A 429 says the quota is gone, so there an absent remaining field counts as
//!    exhausted; on any other status an absent one says nothing, and the reset is not a floor.
//! 3. A Unix-time `X-RateLimit-Reset` is measured against the response's `Date`, else the
//!    client's wall clock, like an HTTP-date `Retry-After`; without either it is absent. A
//!    reset more than one day ([`IMPLAUSIBLE_RESET_AGE`]) before that reference is malformed
//!    (a delay-seconds value such as `30` read as a moment in 1970), not "now": it is absent.
//!    A reset up to a day in the past means the quota is back: a zero floor.
//!
//! So no path takes a floor from a field that says quota remains: with quota left (an `r>0`,
//! a remaining field above 0) even a reset of `0` is not "retry now", it is the backoff.
//!
//! The same rule makes a 403 a rate-limit answer: GitHub answers an exhausted quota with a
//! `403` as often as a `429` (`X-RateLimit-Remaining: 0`, `X-RateLimit-Reset`). A 403 whose
//! fields give a floor by the rows above (an absent remaining field counts as exhausted on a
//! 429 only, so a 403 needs `r=0` or a `0`) is retryable, waits for that floor within the
//! ceiling and the deadline, and closes the origin's gate, exactly like a 429; so is a 403
//! with a usable `Retry-After` (a secondary limit). Any other 403 is final.
//!
//! delay-seconds and Unix times follow the `Retry-After` grammar (`1*DIGIT [ "." 1*DIGIT ]`,
//! OWS around it); a remaining field is `1*DIGIT` with OWS around it (anything else is absent).
//! The structured fields follow the structured-field grammar (RFC 8941 with the
//! Date and Display String items of RFC 9651) strictly: a field that does not parse as a whole
//! is absent, as is a parameter of the wrong type (`t=1.5`, `t=-1`, `r="0"`). Several field
//! lines of one of these fields are absent too (joining them would need an allocation).

use core::time::Duration;

use crate::event::Response;
use crate::retry_after::{parse_delay_seconds, parse_http_date};
use crate::time::UnixTime;

/// How far before its reference (the response's `Date`, else the wall clock) a Unix-time
/// `X-RateLimit-Reset` may lie and still be read: one day. Older is malformed (absent).
///
/// Why a day: a reset that has passed means the quota is back, and clocks and caches may put
/// a genuine one minutes or hours behind; nothing legitimate is a day stale, while a
/// delay-seconds value read as Unix time (`30`) is decades before.
pub const IMPLAUSIBLE_RESET_AGE: Duration = Duration::from_secs(86_400);

/// How `X-RateLimit-Reset` is read: APIs disagree, so the policy says (see
/// [`PolicyBuilder::x_rate_limit_reset`](crate::PolicyBuilder::x_rate_limit_reset)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum XRateLimitReset {
    /// Seconds since the Unix epoch, measured against the response's `Date` (else the wall
    /// clock), as GitHub sends it (the default).
    #[default]
    UnixTime,
    /// delay-seconds from the response, as some other APIs send it.
    DelaySeconds,
}

/// The seconds until the quota of an exhausted policy resets, from a raw `RateLimit` field and
/// the response's raw `RateLimit-Policy` field, if any. `None` when the field is malformed or no
/// policy in it is exhausted.
///
/// ```
/// use backstop_core::parse_rate_limit;
/// use core::time::Duration;
///
/// assert_eq!(parse_rate_limit(br#""default";r=0;t=10"#, None), Some(Duration::from_secs(10)));
/// // Quota left: the field says nothing about when to come back.
/// assert_eq!(parse_rate_limit(br#""default";r=5;t=10"#, None), None);
/// // The longest reset among the exhausted policies.
/// assert_eq!(
///     parse_rate_limit(br#""burst";r=0;t=1, "day";r=0;t=3600"#, None),
///     Some(Duration::from_secs(3600)),
/// );
/// // No `t`: the window of the policy of the same name.
/// assert_eq!(
///     parse_rate_limit(br#""day";r=0"#, Some(br#""day";q=1000;w=86400"#)),
///     Some(Duration::from_secs(86_400)),
/// );
/// assert_eq!(parse_rate_limit(b"r=0;t=10", None), None); // not a List
/// ```
#[must_use]
pub fn parse_rate_limit(field: &[u8], policy: Option<&[u8]>) -> Option<Duration> {
    match rate_limit_verdict(field, policy) {
        Verdict::Floor(d) => Some(d),
        Verdict::QuotaLeft | Verdict::Silent => None,
    }
}

/// What a `RateLimit` field says about the wait.
enum Verdict {
    /// An exhausted member resets after this long (the longest among them).
    Floor(Duration),
    /// Every member that states its quota has some left: no floor at all.
    QuotaLeft,
    /// Nothing usable: malformed, no `r`, or exhausted without a reset.
    Silent,
}

fn rate_limit_verdict(field: &[u8], policy: Option<&[u8]>) -> Verdict {
    let mut longest: Option<u64> = None;
    let (mut exhausted, mut stated) = (false, false);
    let parsed = each_member(field, |name, params| {
        match params.remaining {
            Some(0) => exhausted = true,
            Some(_) => {
                stated = true;
                return;
            }
            None => return,
        }
        let reset = params
            .reset
            .or_else(|| name.and_then(|n| policy.and_then(|p| window_of(p, n))));
        if let Some(t) = reset {
            longest = Some(longest.map_or(t, |l| l.max(t)));
        }
    });
    match (parsed, longest) {
        (None, _) => Verdict::Silent,
        (Some(()), Some(t)) => Verdict::Floor(Duration::from_secs(t)),
        (Some(()), None) if stated && !exhausted => Verdict::QuotaLeft,
        (Some(()), None) => Verdict::Silent,
    }
}

/// The window `w` of the first `RateLimit-Policy` member named `name`.
fn window_of(policy: &[u8], name: &[u8]) -> Option<u64> {
    let mut window = None;
    let mut found = false;
    each_member(policy, |n, params| {
        if !found && n == Some(name) {
            found = true;
            window = params.window;
        }
    })?;
    window
}

/// The server-directed delay of a response's rate-limit fields, in the order of the module
/// docs. `None` when none is usable.
#[inline]
pub(crate) fn reset_delay(r: &Response<'_>, reading: XRateLimitReset) -> Option<Duration> {
    let any = r.rate_limit.is_some()
        || r.rate_limit_reset.is_some()
        || r.x_rate_limit_reset_after.is_some()
        || r.x_rate_limit_reset.is_some();
    if any {
        read_reset(r, reading)
    } else {
        None
    }
}

/// [`reset_delay`] once some field is there: out of line, so that the common response without
/// any (and every response on a final status) pays for four tests only.
#[cold]
#[inline(never)]
fn read_reset(r: &Response<'_>, reading: XRateLimitReset) -> Option<Duration> {
    if let Some(field) = r.rate_limit {
        match rate_limit_verdict(field, r.rate_limit_policy) {
            Verdict::Floor(d) => return Some(d),
            Verdict::QuotaLeft => return None,
            Verdict::Silent => {}
        }
    }
    if exhausted(r.rate_limit_remaining, r.status) {
        if let Some(d) = r.rate_limit_reset.and_then(parse_delay_seconds) {
            return Some(d);
        }
    }
    if !exhausted(r.x_rate_limit_remaining, r.status) {
        return None;
    }
    if let Some(d) = r.x_rate_limit_reset_after.and_then(parse_delay_seconds) {
        return Some(d);
    }
    let value = parse_delay_seconds(r.x_rate_limit_reset?)?;
    match reading {
        XRateLimitReset::DelaySeconds => Some(value),
        XRateLimitReset::UnixTime => {
            let reference = r.date.and_then(parse_http_date).or(r.wall_clock)?;
            if value.saturating_add(IMPLAUSIBLE_RESET_AGE) < reference.as_duration() {
                return None;
            }
            Some(UnixTime::from_duration(value).saturating_duration_since(reference))
        }
    }
}

/// Whether the quota a remaining field belongs to is exhausted: the field says `0`, or a 429
/// (which says the quota is gone) comes without a usable one.
fn exhausted(remaining: Option<&[u8]>, status: u16) -> bool {
    match remaining.and_then(remaining_is_zero) {
        Some(zero) => zero,
        None => status == 429,
    }
}

/// `OWS 1*DIGIT OWS`: whether it is zero; `None` when malformed. No overflow: a count too large
/// for any integer is simply not zero.
fn remaining_is_zero(value: &[u8]) -> Option<bool> {
    let mut v = value;
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().all(|&d| d == b'0'))
}

/// The parameters of a member that bear on a reset: the last of each key, when it is a
/// non-negative Integer.
#[derive(Default)]
struct Params {
    remaining: Option<u64>,
    reset: Option<u64>,
    window: Option<u64>,
}

/// Parses `field` as a structured-field List and calls `each` with every Item member's name
/// (its String or Token, as written) and parameters. `None` when the field does not parse.
fn each_member<'a>(field: &'a [u8], mut each: impl FnMut(Option<&'a [u8]>, &Params)) -> Option<()> {
    let mut c = Cursor(field);
    c.skip_sp();
    if c.at_end() {
        return Some(());
    }
    loop {
        if c.peek() == Some(b'(') {
            inner_list(&mut c)?;
            parameters(&mut c, |_, _| {})?;
        } else {
            let start = c.0;
            let bare = bare_item(&mut c)?;
            let name = match bare {
                Bare::Name => start.get(..start.len() - c.0.len()),
                _ => None,
            };
            let mut params = Params::default();
            parameters(&mut c, |key, value| {
                let value = match value {
                    Bare::Integer(n) => u64::try_from(n).ok(),
                    _ => None,
                };
                match key {
                    b"r" => params.remaining = value,
                    b"t" => params.reset = value,
                    b"w" => params.window = value,
                    _ => {}
                }
            })?;
            each(name, &params);
        }
        c.skip_ows();
        if c.at_end() {
            return Some(());
        }
        if !c.eat(b',') {
            return None;
        }
        c.skip_ows();
        if c.at_end() {
            return None; // a trailing comma
        }
    }
}

/// A bare item, as far as the rate-limit fields care.
#[derive(Clone, Copy)]
enum Bare {
    Integer(i64),
    /// A String or a Token: a policy's name.
    Name,
    Other,
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.0.first().copied()
    }

    fn at_end(&self) -> bool {
        self.0.is_empty()
    }

    fn next(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.next();
        }
        hit
    }

    fn skip_sp(&mut self) {
        while self.eat(b' ') {}
    }

    fn skip_ows(&mut self) {
        while self.eat(b' ') || self.eat(b'\t') {}
    }
}

fn inner_list(c: &mut Cursor<'_>) -> Option<()> {
    c.eat(b'(');
    loop {
        c.skip_sp();
        if c.eat(b')') {
            return Some(());
        }
        bare_item(c)?;
        parameters(c, |_, _| {})?;
        if !matches!(c.peek(), Some(b' ' | b')')) {
            return None;
        }
    }
}

/// `*( ";" *SP key [ "=" bare-item ] )`; a key without a value is the Boolean true.
fn parameters<'a>(c: &mut Cursor<'a>, mut each: impl FnMut(&'a [u8], Bare)) -> Option<()> {
    while c.eat(b';') {
        c.skip_sp();
        let start = c.0;
        match c.next()? {
            b'a'..=b'z' | b'*' => {}
            _ => return None,
        }
        while let Some(b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*') = c.peek() {
            c.next();
        }
        let key = start.get(..start.len() - c.0.len())?;
        let value = if c.eat(b'=') {
            bare_item(c)?
        } else {
            Bare::Other
        };
        each(key, value);
    }
    Some(())
}

fn bare_item(c: &mut Cursor<'_>) -> Option<Bare> {
    match c.peek()? {
        b'-' | b'0'..=b'9' => number(c),
        b'"' => string(c).map(|()| Bare::Name),
        b'A'..=b'Z' | b'a'..=b'z' | b'*' => {
            token(c);
            Some(Bare::Name)
        }
        b':' => binary(c).map(|()| Bare::Other),
        b'?' => {
            c.next();
            match c.next()? {
                b'0' | b'1' => Some(Bare::Other),
                _ => None,
            }
        }
        b'@' => {
            c.next();
            match number(c)? {
                Bare::Integer(_) => Some(Bare::Other),
                _ => None,
            }
        }
        b'%' => display_string(c).map(|()| Bare::Other),
        _ => None,
    }
}

/// An Integer (`-?` up to 15 digits) or a Decimal (up to 12 digits, `.`, 1 to 3 digits).
fn number(c: &mut Cursor<'_>) -> Option<Bare> {
    let negative = c.eat(b'-');
    let mut value: i64 = 0;
    let mut digits = 0;
    while let Some(d @ b'0'..=b'9') = c.peek() {
        c.next();
        digits += 1;
        if digits > 15 {
            return None;
        }
        value = value * 10 + i64::from(d - b'0');
    }
    if digits == 0 {
        return None;
    }
    if !c.eat(b'.') {
        return Some(Bare::Integer(if negative { -value } else { value }));
    }
    if digits > 12 {
        return None;
    }
    let mut fraction = 0;
    while let Some(b'0'..=b'9') = c.peek() {
        c.next();
        fraction += 1;
    }
    (1..=3).contains(&fraction).then_some(Bare::Other)
}

fn string(c: &mut Cursor<'_>) -> Option<()> {
    c.eat(b'"');
    loop {
        match c.next()? {
            b'"' => return Some(()),
            b'\\' => match c.next()? {
                b'"' | b'\\' => {}
                _ => return None,
            },
            0x20..=0x7e => {}
            _ => return None,
        }
    }
}

fn token(c: &mut Cursor<'_>) {
    c.next();
    while let Some(
        b'!'
        | b'#'
        | b'$'
        | b'%'
        | b'&'
        | b'\''
        | b'*'
        | b'+'
        | b'-'
        | b'.'
        | b'^'
        | b'_'
        | b'`'
        | b'|'
        | b'~'
        | b':'
        | b'/'
        | b'0'..=b'9'
        | b'A'..=b'Z'
        | b'a'..=b'z',
    ) = c.peek()
    {
        c.next();
    }
}

/// `:` base64 `:`. The padding may be short or missing and the pad bits non-zero (a parser
/// should be lenient there); anything else that does not decode is malformed: a `=` before the
/// end, more `=` than the length needs, a lone symbol in the last group of four.
fn binary(c: &mut Cursor<'_>) -> Option<()> {
    c.eat(b':');
    let mut symbols = 0usize;
    let mut pads = 0usize;
    loop {
        match c.next()? {
            b':' => break,
            b'=' => pads += 1,
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' if pads == 0 => symbols += 1,
            _ => return None,
        }
    }
    let canonical_pads = (4 - symbols % 4) % 4;
    (symbols % 4 != 1 && pads <= canonical_pads).then_some(())
}

/// `%"`, printable ASCII and `%xx` (lowercase hex) escapes, `"`; the escaped bytes must be
/// UTF-8. They are checked through a small buffer, so nothing is allocated.
fn display_string(c: &mut Cursor<'_>) -> Option<()> {
    c.eat(b'%');
    if !c.eat(b'"') {
        return None;
    }
    let mut buf = [0u8; 32];
    let mut len = 0;
    loop {
        let byte = match c.next()? {
            b'"' => return utf8_prefix(&buf, len, true).map(|_| ()),
            b'%' => (hex(c.next()?)? << 4) | hex(c.next()?)?,
            b @ 0x20..=0x7e => b,
            _ => return None,
        };
        if len == buf.len() {
            let kept = utf8_prefix(&buf, len, false)?;
            buf.copy_within(len - kept..len, 0);
            len = kept;
        }
        *buf.get_mut(len)? = byte;
        len += 1;
    }
}

/// Checks `buf[..len]` as UTF-8 and returns how many bytes at its end start a character that
/// is not complete yet (none allowed when `last`). `None` on invalid UTF-8.
fn utf8_prefix(buf: &[u8], len: usize, last: bool) -> Option<usize> {
    match core::str::from_utf8(buf.get(..len)?) {
        Ok(_) => Some(0),
        Err(e) if e.error_len().is_none() && !last => Some(len - e.valid_up_to()),
        Err(_) => None,
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Option<Duration> {
        Some(Duration::from_secs(s))
    }

    #[test]
    fn an_exhausted_policy_gives_its_reset() {
        assert_eq!(parse_rate_limit(br#""default";r=0;t=1"#, None), secs(1));
        assert_eq!(parse_rate_limit(b"  default;r=0;t=7  ", None), secs(7));
        assert_eq!(parse_rate_limit(br#""a";t=3;r=0;pk=:AQ==:"#, None), secs(3));
        // The last value of a repeated key wins.
        assert_eq!(parse_rate_limit(br#""a";r=0;t=3;t=4"#, None), secs(4));
    }

    #[test]
    fn a_policy_with_quota_left_or_no_reset_gives_nothing() {
        for field in [
            &br#""default";r=1;t=10"#[..],
            br#""default";r=0"#,
            br#""default";t=10"#,
            br#""default";r=0;t=-1"#,
            br#""default";r=0;t=1.5"#,
            br#""default";r="0";t=1"#,
            br#""default";r=0;t"#,
            b"",
            b"(a b);r=0;t=1",
        ] {
            assert_eq!(parse_rate_limit(field, None), None, "{field:?}");
        }
    }

    #[test]
    fn a_field_that_does_not_parse_is_absent() {
        for field in [
            &br#""default";r=0;t=1,"#[..],
            br#""default";R=0;t=1"#,
            br#""default";r=0;t=1 x"#,
            br#""de\fault";r=0;t=1"#,
            br#"r=0;t=1"#,
            br#""a";r=0;t=1234567890123456"#,
            b"a;r=0;t=1, %\"\xff\"",
            b"\t\"a\";r=0;t=1",
            b"a;r=0;t=1, %\"%ff\"",
            b"a;r=0;t=1, %\"%c3\"",
        ] {
            assert_eq!(parse_rate_limit(field, None), None, "{field:?}");
        }
    }

    #[test]
    fn every_item_kind_is_understood() {
        let field =
            br#"(1 "x" y);p, :aGk=:, ?1;x, @1700000000, %"caf%c3%a9", 1.5, -2, "a";r=0;t=9"#;
        assert_eq!(parse_rate_limit(field, None), secs(9));
        let long = [&b"%\""[..], &b"%c3%a9".repeat(40), b"\";r=0;t=2"].concat();
        assert_eq!(parse_rate_limit(&long, None), secs(2));
    }

    #[test]
    fn the_window_of_the_named_policy_stands_in_for_a_missing_reset() {
        let policy = br#""hour";q=100;w=3600, "day";q=1000;w=86400"#;
        assert_eq!(
            parse_rate_limit(br#""day";r=0"#, Some(policy)),
            secs(86_400)
        );
        assert_eq!(parse_rate_limit(br#""week";r=0"#, Some(policy)), None);
        assert_eq!(parse_rate_limit(br#""day";r=0;t=5"#, Some(policy)), secs(5));
        assert_eq!(parse_rate_limit(br#""day";r=0"#, Some(b"junk;")), None);
        // Names are compared as written: a String is not the Token of the same letters.
        assert_eq!(parse_rate_limit(b"day;r=0", Some(policy)), None);
    }

    #[test]
    fn the_de_facto_fields_follow_the_documented_order() {
        let r = Response::new(429)
            .x_rate_limit_reset(b"1700000010")
            .wall_clock(UnixTime::from_secs(1_700_000_000));
        assert_eq!(reset_delay(&r, XRateLimitReset::UnixTime), secs(10));
        assert_eq!(
            reset_delay(&r, XRateLimitReset::DelaySeconds),
            secs(1_700_000_010)
        );
        let r = r.x_rate_limit_reset_after(b"2.5");
        assert_eq!(
            reset_delay(&r, XRateLimitReset::UnixTime),
            Some(Duration::from_millis(2_500))
        );
        let r = r.rate_limit_reset(b"3");
        assert_eq!(reset_delay(&r, XRateLimitReset::UnixTime), secs(3));
        let r = r.rate_limit(br#""a";r=0;t=4"#);
        assert_eq!(reset_delay(&r, XRateLimitReset::UnixTime), secs(4));
        // Malformed falls through to the next.
        let r = r.rate_limit(b"junk;").rate_limit_reset(b"soon");
        assert_eq!(
            reset_delay(&r, XRateLimitReset::UnixTime),
            Some(Duration::from_millis(2_500))
        );
        // A Unix time without a reference is absent.
        let r = Response::new(429).x_rate_limit_reset(b"1700000010");
        assert_eq!(reset_delay(&r, XRateLimitReset::UnixTime), None);
    }
}
