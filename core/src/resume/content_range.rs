//! Parsing the `Content-Range` response field, byte ranges only.
//!
//! Rule (RFC 9110 §14.4): `Content-Range = range-unit SP ( range-resp / unsatisfied-range )`,
//! where `range-resp = first-pos "-" last-pos "/" ( complete-length / "*" )` and
//! `unsatisfied-range = "*/" complete-length`. A `range-resp` whose last position is before its
//! first, or not before a known complete length, is invalid, and so is any other unit: both
//! are `None`, as is anything a strict reading of that grammar rejects (signs, spaces inside,
//! several ranges, numbers past `u64`). The unit is case-insensitive; surrounding optional
//! whitespace is ignored.

/// A parsed `Content-Range` value in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContentRange {
    /// The part a `206 Partial Content` carries: bytes `first..=last` of a representation of
    /// `complete` bytes (`None`: the server did not know, `*`).
    Satisfied {
        /// The offset of the part's first byte.
        first: u64,
        /// The offset of the part's last byte (inclusive).
        last: u64,
        /// The representation's complete length, when the server knew it.
        complete: Option<u64>,
    },
    /// A `416 Range Not Satisfiable`'s `*/complete`: the representation is `complete` bytes long.
    Unsatisfied {
        /// The representation's complete length.
        complete: u64,
    },
}

impl ContentRange {
    /// The number of bytes a satisfied range carries (0 for an unsatisfied one).
    #[must_use]
    pub const fn len(&self) -> u64 {
        match *self {
            // `last >= first` holds for every parsed value; saturating keeps a hand-made one sane.
            ContentRange::Satisfied { first, last, .. } => {
                last.saturating_sub(first).saturating_add(1)
            }
            ContentRange::Unsatisfied { .. } => 0,
        }
    }

    /// Whether this range carries no bytes (an unsatisfied range).
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        matches!(self, ContentRange::Unsatisfied { .. })
    }

    /// The representation's complete length, when the field gives it.
    #[must_use]
    pub const fn complete(&self) -> Option<u64> {
        match *self {
            ContentRange::Satisfied { complete, .. } => complete,
            ContentRange::Unsatisfied { complete } => Some(complete),
        }
    }
}

/// Parses a `Content-Range` field value.
///
/// ```
/// use backstop_core::{parse_content_range, ContentRange};
///
/// assert_eq!(
///     parse_content_range(b"bytes 100-199/1000"),
///     Some(ContentRange::Satisfied { first: 100, last: 199, complete: Some(1000) })
/// );
/// assert_eq!(
///     parse_content_range(b"bytes 0-9/*"),
///     Some(ContentRange::Satisfied { first: 0, last: 9, complete: None })
/// );
/// assert_eq!(parse_content_range(b"bytes */1000"), Some(ContentRange::Unsatisfied { complete: 1000 }));
/// assert_eq!(parse_content_range(b"bytes 10-5/20"), None); // last before first
/// assert_eq!(parse_content_range(b"bytes 0-20/20"), None); // past the end
/// assert_eq!(parse_content_range(b"items 0-9/10"), None); // not bytes
/// ```
#[must_use]
pub fn parse_content_range(value: &[u8]) -> Option<ContentRange> {
    let value = trim_ows(value);
    let (unit, rest) = split_once(value, b' ')?;
    if !unit.eq_ignore_ascii_case(b"bytes") {
        return None;
    }
    if let Some(complete) = rest.strip_prefix(b"*/") {
        return Some(ContentRange::Unsatisfied {
            complete: digits(complete)?,
        });
    }
    let (range, complete) = split_once(rest, b'/')?;
    let (first, last) = split_once(range, b'-')?;
    let (first, last) = (digits(first)?, digits(last)?);
    let complete = match complete {
        b"*" => None,
        n => Some(digits(n)?),
    };
    if last < first || complete.is_some_and(|c| last >= c) {
        return None;
    }
    Some(ContentRange::Satisfied {
        first,
        last,
        complete,
    })
}

/// `1*DIGIT` as a `u64`; `None` when empty, not all digits, or too large.
pub(crate) fn digits(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return None;
    }
    bytes.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// `value` without leading and trailing spaces and tabs (RFC 9110's OWS).
pub(crate) fn trim_ows(value: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !is_ows(b)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    value.get(start..end).unwrap_or_default()
}

/// The bytes before and after the first `sep`.
fn split_once(value: &[u8], sep: u8) -> Option<(&[u8], &[u8])> {
    let at = value.iter().position(|&b| b == sep)?;
    Some((value.get(..at)?, value.get(at + 1..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_is_read_strictly() {
        for bad in [
            &b""[..],
            b"bytes",
            b"bytes ",
            b"bytes 0-9",
            b"bytes 0-9/",
            b"bytes -9/10",
            b"bytes 0-/10",
            b"bytes +0-9/10",
            b"bytes 0 -9/10",
            b"bytes  0-9/10",
            b"bytes 0-9/10, 20-29/30",
            b"bytes */*",
            b"bytes */",
            b"bytes 0-9/1x",
            b"bytes 0-18446744073709551616/*",
            b"bytes=0-9/10",
        ] {
            assert_eq!(parse_content_range(bad), None, "{bad:?}");
        }
        assert_eq!(
            parse_content_range(b" \tBYTES 0-0/1 "),
            Some(ContentRange::Satisfied {
                first: 0,
                last: 0,
                complete: Some(1)
            })
        );
        assert_eq!(
            parse_content_range(b"bytes 0-18446744073709551614/18446744073709551615"),
            Some(ContentRange::Satisfied {
                first: 0,
                last: u64::MAX - 1,
                complete: Some(u64::MAX)
            })
        );
    }

    #[test]
    fn a_range_knows_its_length() {
        let part = parse_content_range(b"bytes 10-19/100");
        assert_eq!(part.map(|r| r.len()), Some(10));
        assert_eq!(part.and_then(|r| r.complete()), Some(100));
        let none = parse_content_range(b"bytes */100");
        assert_eq!(none.map(|r| (r.len(), r.is_empty())), Some((0, true)));
    }
}
