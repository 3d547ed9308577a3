//! Checks for the public `RateLimit` parser (`parse_rate_limit`), on arbitrary bytes.
//!
//! The input is the `RateLimit` field, then (after the first `\n`, a byte no structured field
//! contains) the `RateLimit-Policy` field, if any.
//!
//! - No panic, on any bytes.
//! - Differential against `sfv` (a structured-field parser, RFC 8941 and RFC 9651): the reset is
//!   exactly the one the documented rule gives on `sfv`'s parse of the same bytes (the largest
//!   `t` among the members with `r=0`, else the `w` of the `RateLimit-Policy` member of the
//!   same name; a field `sfv` rejects gives nothing).
//! - The reset is at most the largest structured-field Integer (15 digits) in seconds.

use core::time::Duration;

use backstop_core::parse_rate_limit;

/// The largest structured-field Integer.
const MAX_INTEGER: u64 = 999_999_999_999_999;

/// Runs every `RateLimit` check on `data`.
pub fn check(data: &[u8]) {
    let (field, policy) = split(data);
    let parsed = parse_rate_limit(field, policy);
    assert_eq!(
        parsed,
        reference(field, policy),
        "differential against sfv on {field:?} with policy {policy:?}"
    );
    if let Some(d) = parsed {
        assert!(
            d <= Duration::from_secs(MAX_INTEGER),
            "{d:?} from {field:?}"
        );
    }
}

/// The field, and the policy field after the first `\n`.
pub(crate) fn split(data: &[u8]) -> (&[u8], Option<&[u8]>) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    }
}

/// The documented rule, on `sfv`'s parse.
fn reference(field: &[u8], policy: Option<&[u8]>) -> Option<Duration> {
    let list: sfv::List = sfv::Parser::new(field).parse().ok()?;
    let policies: Option<sfv::List> = policy.and_then(|p| sfv::Parser::new(p).parse().ok());
    let mut longest: Option<u64> = None;
    for entry in &list {
        let sfv::ListEntry::Item(item) = entry else {
            continue;
        };
        if non_negative(&item.params, "r") != Some(0) {
            continue;
        }
        let reset = non_negative(&item.params, "t").or_else(|| {
            let name = name(&item.bare_item)?;
            policies
                .iter()
                .flatten()
                .find_map(|e| match e {
                    sfv::ListEntry::Item(p) if name_eq(&p.bare_item, name) => Some(p),
                    _ => None,
                })
                .and_then(|p| non_negative(&p.params, "w"))
        });
        if let Some(t) = reset {
            longest = Some(longest.map_or(t, |l| l.max(t)));
        }
    }
    longest.map(Duration::from_secs)
}

/// What a `RateLimit` field says about the wait, by the rule of the crate docs, on `sfv`'s
/// parse: `Some(Some(d))` an exhausted member resets in `d`; `Some(None)` every member that
/// states its quota (`r`) has some left, so there is no floor at all; `None` it says nothing
/// (malformed, no `r`, or exhausted without a reset), and the older fields are read.
pub(crate) fn ietf_verdict(field: &[u8], policy: Option<&[u8]>) -> Option<Option<Duration>> {
    let list: sfv::List = sfv::Parser::new(field).parse().ok()?;
    let items = || {
        list.iter().filter_map(|e| match e {
            sfv::ListEntry::Item(item) => Some(item),
            _ => None,
        })
    };
    if let Some(d) = reference(field, policy) {
        return Some(Some(d));
    }
    let remaining: Vec<u64> = items()
        .filter_map(|i| non_negative(&i.params, "r"))
        .collect();
    (!remaining.is_empty() && remaining.iter().all(|&r| r > 0)).then_some(None)
}

fn non_negative(params: &sfv::Parameters, key: &str) -> Option<u64> {
    let n = params.get(key)?.as_integer()?;
    u64::try_from(i64::from(n)).ok()
}

/// A member's name: a String or a Token; any other item has none.
fn name(item: &sfv::BareItem) -> Option<&sfv::BareItem> {
    matches!(item, sfv::BareItem::String(_) | sfv::BareItem::Token(_)).then_some(item)
}

fn name_eq(item: &sfv::BareItem, name: &sfv::BareItem) -> bool {
    item == name
}
