//! Checks for the public `Content-Range` parser (`parse_content_range`) and the resume answer
//! built on it (`Resumption::answer`), on arbitrary bytes.
//!
//! The input is a `Content-Range` value.
//!
//! - No panic, on any bytes.
//! - Differential against a reference written apart, on `str` and `u64::from_str` (RFC 9110
//!   §14.4's grammar, read strictly): the same value or the same refusal.
//! - Every parsed range is one a server may send: `first <= last`, and `last < complete` when
//!   the length is known; writing it back in the canonical form and parsing that gives it
//!   again.
//! - A `206` carrying the field continues a body only where it broke off: for every offset the
//!   input itself names (and 0), `answer` says `Part` only when the part starts exactly there
//!   and its complete length is the body's declared one; a `416` says `Complete` only when its
//!   length is the offset.

use backstop_core::{
    parse_content_range, ContentRange, Counted, Representation, ResumeAnswer, Resumption,
};

/// Runs every `Content-Range` check on `data`.
pub fn check(data: &[u8]) {
    let parsed = parse_content_range(data);
    assert_eq!(parsed, reference(data), "differential on {data:?}");
    let Some(range) = parsed else {
        check_answers(data, None);
        return;
    };
    if let ContentRange::Satisfied {
        first,
        last,
        complete,
    } = range
    {
        assert!(first <= last, "{range:?} from {data:?}");
        assert!(complete.is_none_or(|c| last < c), "{range:?} from {data:?}");
    }
    let canonical = canonical(range);
    assert_eq!(
        parse_content_range(canonical.as_bytes()),
        Some(range),
        "round trip through {canonical:?}"
    );
    check_answers(data, Some(range));
}

/// The value in the form a server writes it.
fn canonical(range: ContentRange) -> String {
    match range {
        ContentRange::Satisfied {
            first,
            last,
            complete: Some(c),
        } => format!("bytes {first}-{last}/{c}"),
        ContentRange::Satisfied { first, last, .. } => format!("bytes {first}-{last}/*"),
        ContentRange::Unsatisfied { complete } => format!("bytes */{complete}"),
    }
}

/// What a `206` and a `416` with the field `data` say to bodies of a few declared lengths,
/// broken off at a few offsets.
fn check_answers(data: &[u8], parsed: Option<ContentRange>) {
    let named = match parsed {
        Some(ContentRange::Satisfied {
            first, complete, ..
        }) => [first, complete.unwrap_or(first)],
        Some(ContentRange::Unsatisfied { complete }) => [complete, complete],
        _ => [0, 0],
    };
    for length in [None, Some(named[1]), Some(named[1].saturating_add(1))] {
        for delivered in [0, named[0], named[1]] {
            let text;
            let mut first = Representation::new(200).etag(b"\"v\"");
            if let Some(l) = length {
                text = l.to_string();
                first = first.content_length(text.as_bytes());
            }
            let Ok(mut body) = Resumption::of(&first, Counted::AsSent) else {
                panic!("a 200 with a strong entity tag is resumable")
            };
            let part = Representation::new(206).content_range(data);
            match body.answer(delivered, &part) {
                ResumeAnswer::Part { first, last } => {
                    let Some(ContentRange::Satisfied { complete, .. }) = parsed else {
                        panic!("a part from {data:?}, which is not a satisfied range")
                    };
                    assert_eq!(first, delivered, "a part elsewhere: {data:?}");
                    assert!(last >= first);
                    if let Some(l) = length {
                        assert_eq!(complete, Some(l), "another length: {data:?}");
                    }
                }
                ResumeAnswer::Mismatch(_) => {}
                other => panic!("a 206 answered {other:?} for {data:?}"),
            }
            let unsatisfied = Representation::new(416).content_range(data);
            if body.answer(delivered, &unsatisfied) == ResumeAnswer::Complete {
                assert_eq!(
                    parsed,
                    Some(ContentRange::Unsatisfied {
                        complete: delivered
                    }),
                    "complete at {delivered} from {data:?}"
                );
            }
        }
    }
}

/// RFC 9110 §14.4, read strictly, on `str`: `bytes` (any case) SP, then `*/N` or `A-B/(N|*)`,
/// numbers of ASCII digits only, within `u64`; optional whitespace around the whole value.
fn reference(data: &[u8]) -> Option<ContentRange> {
    let text = std::str::from_utf8(data).ok()?;
    let text = text.trim_matches(|c| c == ' ' || c == '\t');
    let (unit, rest) = text.split_at_checked(text.find(' ')?)?;
    if !unit.eq_ignore_ascii_case("bytes") {
        return None;
    }
    let rest = &rest[1..];
    let number = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    if let Some(complete) = rest.strip_prefix("*/") {
        return Some(ContentRange::Unsatisfied {
            complete: number(complete)?,
        });
    }
    let (range, complete) = rest.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    let (first, last) = (number(first)?, number(last)?);
    let complete = if complete == "*" {
        None
    } else {
        Some(number(complete)?)
    };
    let valid = first <= last && complete.is_none_or(|c| last < c);
    valid.then_some(ContentRange::Satisfied {
        first,
        last,
        complete,
    })
}
