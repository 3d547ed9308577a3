//! Resuming a response body that broke off: whether it may be asked for, what to ask, and
//! whether the answer continues the same representation.
//!
//! Rule (RFC 9110 §14 and §13.1.5): a body cut short after `N` bytes is resumed with
//! `Range: bytes=N-` and an `If-Range` holding a strong validator of the representation
//! already read from, so that a server whose representation changed answers the whole new one
//! (`200`) instead of a part of it. The bytes handed to the caller are never spliced from two
//! representations, and a body is complete only when the bytes received equal the length the
//! server declared. In detail:
//!
//! - **Resumable** ([`Resumption::of`]): a `200` whose representation has a strong validator:
//!   an entity tag not marked weak (`"v1"`, not `W/"v1"`), else a `Last-Modified` that is
//!   strong by §8.8.2.2, that is, the response's `Date` is at least one second after it (under
//!   `std`, where HTTP-dates are parsed). A weak entity tag rules out the date too (§13.1.5: the
//!   date only when there is no entity tag). `Accept-Ranges: none` refuses ranges. A body counted
//!   after the client decoded its content coding (gzip) cannot be resumed: ranges count the
//!   representation's bytes as sent (§14.1.2), not the decoded ones ([`Counted`]).
//! - **The answer** to a resume ([`Resumption::answer`]): a `206` continues only when its
//!   `Content-Range` starts exactly at `N`, its complete length is the declared one, it is a
//!   single part (not `multipart/byteranges`), and its validator and content coding, when it
//!   shows them, are the ones resumed from; a `200` is the whole representation again, which
//!   continues nothing once bytes were handed over (it changed, or the server ignores ranges);
//!   a `416` means the body was complete only when its `*/length` is exactly `N`; any other
//!   status is an ordinary answer for the retry rules.
//! - **The end** ([`Resumption::ended`]): a clean end of the body is complete only at the
//!   declared length (`Content-Length`, else a `206`'s complete length); short of it, it is
//!   truncated (and resumable), past it, overlong.
//!
//! Everything here is plain data over borrowed header values; no clock, no allocation. The
//! validator is copied into the [`Resumption`] (at most [`MAX_VALIDATOR_LEN`] bytes) so that it
//! outlives the response it came from.

use core::fmt;

mod content_range;

pub use content_range::{parse_content_range, ContentRange};

use content_range::{digits, trim_ows};

use crate::retry_after::parse_http_date;

/// The longest validator (entity tag or `Last-Modified` value) a [`Resumption`] keeps; a
/// longer one makes a body not resumable ([`NotResumable::ValidatorTooLong`]).
pub const MAX_VALIDATOR_LEN: usize = 192;

/// The longest `Content-Encoding` value a [`Resumption`] keeps to compare with a part's.
const MAX_CODING_LEN: usize = 32;

/// What a response's head says of its representation: the fields that bear on resuming its
/// body, as raw values (a field not given is absent).
///
/// ```
/// use backstop_core::Representation;
///
/// let head = Representation::new(200)
///     .content_length(b"1048576")
///     .etag(br#""v7""#);
/// assert_eq!(head.status, 200);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Representation<'a> {
    /// The status code.
    pub status: u16,
    /// `Content-Length`.
    pub content_length: Option<&'a [u8]>,
    /// `Content-Range`.
    pub content_range: Option<&'a [u8]>,
    /// `Content-Type` (a `multipart/byteranges` part is not one range).
    pub content_type: Option<&'a [u8]>,
    /// `Content-Encoding`.
    pub content_encoding: Option<&'a [u8]>,
    /// `ETag`.
    pub etag: Option<&'a [u8]>,
    /// `Last-Modified`.
    pub last_modified: Option<&'a [u8]>,
    /// `Date`.
    pub date: Option<&'a [u8]>,
    /// `Accept-Ranges`.
    pub accept_ranges: Option<&'a [u8]>,
}

macro_rules! field_setters {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub const fn $name(mut self, value: &'a [u8]) -> Self {
                self.$name = Some(value);
                self
            }
        )*
    };
}

impl<'a> Representation<'a> {
    /// A head with `status` and no fields.
    #[must_use]
    pub const fn new(status: u16) -> Self {
        Representation {
            status,
            content_length: None,
            content_range: None,
            content_type: None,
            content_encoding: None,
            etag: None,
            last_modified: None,
            date: None,
            accept_ranges: None,
        }
    }

    field_setters! {
        /// With a `Content-Length`.
        content_length;
        /// With a `Content-Range`.
        content_range;
        /// With a `Content-Type`.
        content_type;
        /// With a `Content-Encoding`.
        content_encoding;
        /// With an `ETag`.
        etag;
        /// With a `Last-Modified`.
        last_modified;
        /// With a `Date`.
        date;
        /// With an `Accept-Ranges`.
        accept_ranges;
    }
}

/// Which bytes the caller's reader counts: what decides whether offsets can be asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counted {
    /// The body as the server sent it (no content coding, or one the client leaves alone):
    /// offsets are the representation's.
    AsSent,
    /// The body after the client decoded its `Content-Encoding` (a gzip the client inflates):
    /// offsets are not the representation's, and a coded body cannot be resumed.
    Decoded,
}

/// Why a body cannot be resumed: the caller reads it once, and a failure in it is final.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotResumable {
    /// The response is not a `200` (only a whole representation is resumed).
    Status,
    /// `Accept-Ranges: none`: the server refuses ranges.
    RangesRefused,
    /// No entity tag and no strong `Last-Modified`: a resumed part could belong to another
    /// version of the representation.
    NoValidator,
    /// The entity tag is weak (`W/"…"`), or not an entity tag at all: it cannot guard a range
    /// (§13.1.5), and with an entity tag present, a date may not be used instead.
    WeakValidator,
    /// The validator is longer than [`MAX_VALIDATOR_LEN`] bytes.
    ValidatorTooLong,
    /// The body is counted after decoding its content coding ([`Counted::Decoded`]), or the
    /// coding is longer than backstop compares.
    Decoded,
    /// The `Content-Length` is not a number.
    MalformedLength,
}

impl NotResumable {
    /// A short, stable name for logs and metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            NotResumable::Status => "not_200",
            NotResumable::RangesRefused => "ranges_refused",
            NotResumable::NoValidator => "no_validator",
            NotResumable::WeakValidator => "weak_validator",
            NotResumable::ValidatorTooLong => "validator_too_long",
            NotResumable::Decoded => "decoded",
            NotResumable::MalformedLength => "malformed_length",
        }
    }
}

impl fmt::Display for NotResumable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which field the validator came from (and so which field a part may show it in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValidatorKind {
    /// A strong entity tag (`ETag`).
    EntityTag,
    /// A `Last-Modified` that is a strong validator.
    LastModified,
}

/// How a clean end of the body compares with the length the server declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyEnd {
    /// Exactly the declared length: the body is complete.
    Complete,
    /// Short of the declared length: the connection ended early (resume, or fail).
    Truncated {
        /// The declared length.
        declared: u64,
    },
    /// Past the declared length: the server sent more than it said (fail).
    Overlong {
        /// The declared length.
        declared: u64,
    },
    /// No length was declared: a clean end is all there is to go by.
    Undeclared,
}

/// How the answer to a resume request stands to the representation resumed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum ResumeAnswer {
    /// A `206` that continues the body: its bytes `first..=last` follow the ones handed over.
    Part {
        /// Its first byte's offset: the bytes already handed over.
        first: u64,
        /// Its last byte's offset (inclusive).
        last: u64,
    },
    /// A `416` whose length is the bytes already handed over: the body was complete.
    Complete,
    /// A `200` before any byte was handed over: the whole (new) representation, to read
    /// from its start as a fresh body.
    Restart,
    /// A `200` after bytes were handed over: the representation changed (or the server ignores
    /// ranges); its bytes cannot continue the ones handed over.
    Changed,
    /// An answer that claims to continue the body and does not match it.
    Mismatch(Mismatch),
    /// Any other status (a `503`, a `404`): not about the body; the retry rules decide.
    Other(u16),
}

/// How a `206` or `416` failed to continue the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mismatch {
    /// No `Content-Range`, or not one a strict reading accepts.
    NoContentRange,
    /// The part does not start at the bytes already handed over.
    WrongStart,
    /// The complete length is not the declared one.
    WrongLength,
    /// A `multipart/byteranges` body: several parts, not the one range asked for.
    Multipart,
    /// The part shows another validator than the one resumed from.
    OtherValidator,
    /// The part has another content coding than the body resumed.
    OtherCoding,
    /// A `416` whose length is not the bytes handed over.
    Unsatisfiable,
}

impl Mismatch {
    /// A short, stable name for logs and metrics.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Mismatch::NoContentRange => "no_content_range",
            Mismatch::WrongStart => "wrong_start",
            Mismatch::WrongLength => "wrong_length",
            Mismatch::Multipart => "multipart",
            Mismatch::OtherValidator => "other_validator",
            Mismatch::OtherCoding => "other_coding",
            Mismatch::Unsatisfiable => "unsatisfiable",
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `Range` of a resume: `bytes=N-`, from the first byte not yet handed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RangeFrom(pub u64);

impl fmt::Display for RangeFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bytes={}-", self.0)
    }
}

/// A body that may be resumed: the validator of its representation and its declared length.
///
/// ```
/// use backstop_core::{BodyEnd, Counted, Representation, ResumeAnswer, Resumption};
///
/// let first = Representation::new(200).content_length(b"1000").etag(br#""v7""#);
/// let mut body = Resumption::of(&first, Counted::AsSent)?;
/// // The connection ended after 400 bytes: short of the length.
/// assert_eq!(body.ended(400), BodyEnd::Truncated { declared: 1000 });
/// assert_eq!(body.range_from(400).to_string(), "bytes=400-");
/// assert_eq!(body.if_range(), br#""v7""#);
/// // The resume's answer continues exactly there.
/// let part = Representation::new(206).content_range(b"bytes 400-999/1000");
/// assert_eq!(body.answer(400, &part), ResumeAnswer::Part { first: 400, last: 999 });
/// // A 200 to it after 400 bytes were handed over: another version, never spliced.
/// assert_eq!(body.answer(400, &Representation::new(200)), ResumeAnswer::Changed);
/// # Ok::<(), backstop_core::NotResumable>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resumption {
    validator: [u8; MAX_VALIDATOR_LEN],
    validator_len: usize,
    kind: ValidatorKind,
    coding: [u8; MAX_CODING_LEN],
    coding_len: usize,
    length: Option<u64>,
}

impl Resumption {
    /// Whether the body of `head` (the first response, counted as `counted`) may be resumed,
    /// and with which validator (see the module docs).
    ///
    /// # Errors
    ///
    /// [`NotResumable`] with the first reason found.
    pub fn of(head: &Representation<'_>, counted: Counted) -> Result<Self, NotResumable> {
        if head.status != 200 {
            return Err(NotResumable::Status);
        }
        if head
            .accept_ranges
            .is_some_and(|v| trim_ows(v).eq_ignore_ascii_case(b"none"))
        {
            return Err(NotResumable::RangesRefused);
        }
        let coding = head.content_encoding.map(trim_ows).unwrap_or_default();
        let coded = !coding.is_empty() && !coding.eq_ignore_ascii_case(b"identity");
        if coded && counted == Counted::Decoded {
            return Err(NotResumable::Decoded);
        }
        let length = match head.content_length {
            Some(v) => Some(digits(trim_ows(v)).ok_or(NotResumable::MalformedLength)?),
            None => None,
        };
        let (kind, value) = strong_validator(head)?;
        let mut body = Resumption {
            validator: [0; MAX_VALIDATOR_LEN],
            validator_len: value.len(),
            kind,
            coding: [0; MAX_CODING_LEN],
            coding_len: coding.len(),
            length,
        };
        body.validator
            .get_mut(..value.len())
            .ok_or(NotResumable::ValidatorTooLong)?
            .copy_from_slice(value);
        body.coding
            .get_mut(..coding.len())
            .ok_or(NotResumable::Decoded)?
            .copy_from_slice(coding);
        Ok(body)
    }

    /// The `If-Range` value of a resume: the entity tag, or the `Last-Modified` date, as the
    /// server sent it.
    #[must_use]
    pub fn if_range(&self) -> &[u8] {
        self.validator.get(..self.validator_len).unwrap_or_default()
    }

    /// Which field the validator came from.
    #[must_use]
    pub const fn validator_kind(&self) -> ValidatorKind {
        self.kind
    }

    /// The declared length: the `Content-Length`, else a part's complete length once one
    /// gave it.
    #[must_use]
    pub const fn length(&self) -> Option<u64> {
        self.length
    }

    /// The `Range` of a resume after `delivered` bytes were handed over.
    #[must_use]
    pub const fn range_from(&self, delivered: u64) -> RangeFrom {
        RangeFrom(delivered)
    }

    /// How a clean end of the body after `delivered` bytes in all compares with the declared
    /// length.
    #[must_use]
    pub const fn ended(&self, delivered: u64) -> BodyEnd {
        body_end(self.length, delivered)
    }

    /// How `answer`, the response to a resume after `delivered` bytes, stands to this body
    /// (see the module docs). A `206` with a complete length this body did not know yet makes
    /// it the declared length.
    pub fn answer(&mut self, delivered: u64, answer: &Representation<'_>) -> ResumeAnswer {
        match answer.status {
            206 => match self.part(delivered, answer) {
                Ok(answer) => answer,
                Err(mismatch) => ResumeAnswer::Mismatch(mismatch),
            },
            200 if delivered == 0 => ResumeAnswer::Restart,
            200 => ResumeAnswer::Changed,
            416 => match answer.content_range.and_then(parse_content_range) {
                Some(ContentRange::Unsatisfied { complete })
                    if complete == delivered && self.length.is_none_or(|l| l == complete) =>
                {
                    ResumeAnswer::Complete
                }
                _ => ResumeAnswer::Mismatch(Mismatch::Unsatisfiable),
            },
            status => ResumeAnswer::Other(status),
        }
    }

    /// The checks of a `206` (see [`Self::answer`]).
    fn part(
        &mut self,
        delivered: u64,
        answer: &Representation<'_>,
    ) -> Result<ResumeAnswer, Mismatch> {
        let is_multipart = answer.content_type.is_some_and(|t| {
            let t = trim_ows(t);
            t.get(..20)
                .is_some_and(|p| p.eq_ignore_ascii_case(b"multipart/byteranges"))
        });
        if is_multipart {
            return Err(Mismatch::Multipart);
        }
        let Some(ContentRange::Satisfied {
            first,
            last,
            complete,
        }) = answer.content_range.and_then(parse_content_range)
        else {
            return Err(Mismatch::NoContentRange);
        };
        if first != delivered {
            return Err(Mismatch::WrongStart);
        }
        match (self.length, complete) {
            (Some(declared), Some(c)) if c != declared => return Err(Mismatch::WrongLength),
            (Some(_), None) => return Err(Mismatch::WrongLength),
            _ => {}
        }
        let shown = match self.kind {
            ValidatorKind::EntityTag => answer.etag,
            ValidatorKind::LastModified => answer.last_modified,
        };
        if shown.is_some_and(|v| trim_ows(v) != self.if_range()) {
            return Err(Mismatch::OtherValidator);
        }
        let coding = answer.content_encoding.map(trim_ows).unwrap_or_default();
        let ours = self.coding.get(..self.coding_len).unwrap_or_default();
        if !coding.eq_ignore_ascii_case(ours) {
            return Err(Mismatch::OtherCoding);
        }
        if self.length.is_none() {
            self.length = complete;
        }
        Ok(ResumeAnswer::Part { first, last })
    }
}

/// How a clean end after `delivered` bytes compares with `declared`.
const fn body_end(declared: Option<u64>, delivered: u64) -> BodyEnd {
    match declared {
        None => BodyEnd::Undeclared,
        Some(declared) if delivered == declared => BodyEnd::Complete,
        Some(declared) if delivered < declared => BodyEnd::Truncated { declared },
        Some(declared) => BodyEnd::Overlong { declared },
    }
}

/// The strong validator of `head`: its entity tag unless weak, else a strong `Last-Modified`.
fn strong_validator<'h>(
    head: &Representation<'h>,
) -> Result<(ValidatorKind, &'h [u8]), NotResumable> {
    if let Some(etag) = head.etag {
        let etag = trim_ows(etag);
        return if is_strong_entity_tag(etag) {
            Ok((ValidatorKind::EntityTag, etag))
        } else {
            Err(NotResumable::WeakValidator)
        };
    }
    let Some(modified) = head.last_modified.map(trim_ows) else {
        return Err(NotResumable::NoValidator);
    };
    // §8.8.2.2: strong when the response's own `Date` is at least a second after it.
    let strong = match (
        parse_http_date(modified),
        head.date.and_then(parse_http_date),
    ) {
        (Some(m), Some(d)) => d.saturating_duration_since(m).as_secs() >= 1,
        _ => false,
    };
    if strong {
        Ok((ValidatorKind::LastModified, modified))
    } else {
        Err(NotResumable::NoValidator)
    }
}

/// `entity-tag` without `W/` (§8.8.3): `DQUOTE *etagc DQUOTE`, etagc being `%x21`,
/// `%x23-7E` or obs-text.
fn is_strong_entity_tag(tag: &[u8]) -> bool {
    let Some(inner) = tag.strip_prefix(b"\"").and_then(|t| t.strip_suffix(b"\"")) else {
        return false;
    };
    inner
        .iter()
        .all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ETAG: &[u8] = br#""v7""#;

    fn first(length: &'static [u8]) -> Representation<'static> {
        Representation::new(200).content_length(length).etag(ETAG)
    }

    fn resumable(head: &Representation<'_>) -> Resumption {
        match Resumption::of(head, Counted::AsSent) {
            Ok(body) => body,
            Err(reason) => unreachable!("resumable: {reason}"),
        }
    }

    #[test]
    fn only_a_200_with_a_strong_validator_is_resumable() {
        let of = |head: Representation<'_>| Resumption::of(&head, Counted::AsSent).err();
        assert_eq!(of(first(b"10")), None);
        assert_eq!(
            of(Representation::new(200)),
            Some(NotResumable::NoValidator)
        );
        assert_eq!(of(first(b"10").status_of(206)), Some(NotResumable::Status));
        for weak in [&br#"W/"v7""#[..], b"v7", b"\"v7", b"\"a\"b\"", b""] {
            assert_eq!(
                of(Representation::new(200).etag(weak)),
                Some(NotResumable::WeakValidator),
                "{weak:?}"
            );
        }
        assert_eq!(
            of(first(b"10").accept_ranges(b" None ")),
            Some(NotResumable::RangesRefused)
        );
        assert_eq!(
            of(first(b"10").accept_ranges(b"bytes")),
            None,
            "ranges accepted"
        );
        assert_eq!(of(first(b"1x")), Some(NotResumable::MalformedLength));
        let long = [b'a'; MAX_VALIDATOR_LEN + 1];
        let mut quoted = [b'"'; MAX_VALIDATOR_LEN + 3];
        if let Some(inner) = quoted.get_mut(1..=long.len()) {
            inner.copy_from_slice(&long);
        }
        assert_eq!(
            of(Representation::new(200).etag(&quoted)),
            Some(NotResumable::ValidatorTooLong)
        );
    }

    #[test]
    fn a_coded_body_counted_decoded_is_not_resumable() {
        let gzip = first(b"10").content_encoding(b"gzip");
        assert_eq!(
            Resumption::of(&gzip, Counted::Decoded).err(),
            Some(NotResumable::Decoded)
        );
        assert!(Resumption::of(&gzip, Counted::AsSent).is_ok());
        let identity = first(b"10").content_encoding(b"identity");
        assert!(Resumption::of(&identity, Counted::Decoded).is_ok());
    }

    #[test]
    #[cfg(feature = "std")]
    fn a_last_modified_is_a_validator_only_a_second_before_the_date() {
        let modified = b"Sun, 06 Nov 1994 08:49:37 GMT";
        let head =
            |date: &'static [u8]| Representation::new(200).last_modified(modified).date(date);
        let later = head(b"Sun, 06 Nov 1994 08:49:38 GMT");
        let body = resumable(&later);
        assert_eq!(body.validator_kind(), ValidatorKind::LastModified);
        assert_eq!(body.if_range(), modified);
        let same = head(b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(
            Resumption::of(&same, Counted::AsSent).err(),
            Some(NotResumable::NoValidator)
        );
        // No date to compare with: not strong.
        let undated = Representation::new(200).last_modified(modified);
        assert_eq!(
            Resumption::of(&undated, Counted::AsSent).err(),
            Some(NotResumable::NoValidator)
        );
        // A weak entity tag rules out the date.
        let weak = later.etag(br#"W/"x""#);
        assert_eq!(
            Resumption::of(&weak, Counted::AsSent).err(),
            Some(NotResumable::WeakValidator)
        );
    }

    #[test]
    fn a_part_continues_only_where_the_body_broke_off() {
        let mut body = resumable(&first(b"100"));
        let part = |range: &'static [u8]| Representation::new(206).content_range(range);
        assert_eq!(
            body.answer(40, &part(b"bytes 40-99/100")),
            ResumeAnswer::Part {
                first: 40,
                last: 99
            }
        );
        // A shorter part is still a continuation; the next resume starts after it.
        assert_eq!(
            body.answer(40, &part(b"bytes 40-49/100")),
            ResumeAnswer::Part {
                first: 40,
                last: 49
            }
        );
        for (range, why) in [
            (&b"bytes 0-99/100"[..], Mismatch::WrongStart),
            (b"bytes 41-99/100", Mismatch::WrongStart),
            (b"bytes 40-99/101", Mismatch::WrongLength),
            (b"bytes 40-99/*", Mismatch::WrongLength),
            (b"bytes */100", Mismatch::NoContentRange),
            (b"bytes 40-99", Mismatch::NoContentRange),
        ] {
            assert_eq!(
                body.answer(40, &part(range)),
                ResumeAnswer::Mismatch(why),
                "{range:?}"
            );
        }
        assert_eq!(
            body.answer(40, &Representation::new(206)),
            ResumeAnswer::Mismatch(Mismatch::NoContentRange)
        );
        let multi = part(b"bytes 40-99/100").content_type(b"multipart/byteranges; boundary=x");
        assert_eq!(
            body.answer(40, &multi),
            ResumeAnswer::Mismatch(Mismatch::Multipart)
        );
        let other = part(b"bytes 40-99/100").etag(br#""v8""#);
        assert_eq!(
            body.answer(40, &other),
            ResumeAnswer::Mismatch(Mismatch::OtherValidator)
        );
        let same = part(b"bytes 40-99/100").etag(ETAG);
        assert!(matches!(body.answer(40, &same), ResumeAnswer::Part { .. }));
        let coded = part(b"bytes 40-99/100").content_encoding(b"gzip");
        assert_eq!(
            body.answer(40, &coded),
            ResumeAnswer::Mismatch(Mismatch::OtherCoding)
        );
    }

    #[test]
    fn a_200_a_416_and_other_statuses_say_what_they_say() {
        let mut body = resumable(&first(b"100"));
        assert_eq!(
            body.answer(0, &Representation::new(200)),
            ResumeAnswer::Restart
        );
        assert_eq!(
            body.answer(1, &Representation::new(200)),
            ResumeAnswer::Changed
        );
        let unsatisfied = |range: &'static [u8]| Representation::new(416).content_range(range);
        assert_eq!(
            body.answer(100, &unsatisfied(b"bytes */100")),
            ResumeAnswer::Complete
        );
        for (delivered, range) in [(99, &b"bytes */100"[..]), (100, b"bytes */101"), (100, b"")] {
            assert_eq!(
                body.answer(delivered, &unsatisfied(range)),
                ResumeAnswer::Mismatch(Mismatch::Unsatisfiable),
                "{delivered} {range:?}"
            );
        }
        assert_eq!(
            body.answer(100, &Representation::new(416)),
            ResumeAnswer::Mismatch(Mismatch::Unsatisfiable)
        );
        assert_eq!(
            body.answer(50, &Representation::new(503)),
            ResumeAnswer::Other(503)
        );
    }

    #[test]
    fn the_body_is_complete_only_at_its_declared_length() {
        let body = resumable(&first(b"100"));
        assert_eq!(body.ended(100), BodyEnd::Complete);
        assert_eq!(body.ended(99), BodyEnd::Truncated { declared: 100 });
        assert_eq!(body.ended(101), BodyEnd::Overlong { declared: 100 });
        // Without a Content-Length, a part's complete length declares it.
        let mut chunked = resumable(&Representation::new(200).etag(ETAG));
        assert_eq!(chunked.ended(7), BodyEnd::Undeclared);
        let part = Representation::new(206).content_range(b"bytes 7-9/10");
        assert_eq!(
            chunked.answer(7, &part),
            ResumeAnswer::Part { first: 7, last: 9 }
        );
        assert_eq!(chunked.length(), Some(10));
        assert_eq!(chunked.ended(9), BodyEnd::Truncated { declared: 10 });
        assert_eq!(chunked.range_from(9), RangeFrom(9));
    }

    impl<'a> Representation<'a> {
        const fn status_of(mut self, status: u16) -> Self {
            self.status = status;
            self
        }
    }
}
